"""Task plugins: discovery, shipped data, prompt formats, hub converters and offline errors."""

import json

import pytest
from conftest import REPO

from grue_bench import plugins
from grue_bench.datapools import SyntheticPool, TaskPool, first_words
from grue_bench.errors import GrueError
from grue_bench.plugins.components import checked_args
from grue_bench.resolve import task_config

SYNTHETIC = ("increasing_numbers", "dates")
SPLIT_SIZES = {
    "imdb": (2000, 200, 200),
    "commongen": (2000, 200, 200),
    "cnn_dailymail": (500, 100, 100),
    "totto": (14, 8, 54),
    "narrative_qa": (500, 100, 100),
    "iwslt2017_en_de": (2000, 200, 200),
    "daily_dialog": (2000, 200, 200),
}


VERSIONS = {"dates": 2, "increasing_numbers": 2, "totto": 2}
"""Tasks past version 1 (dates, increasing_numbers: RL4LMs's own reward; totto: a larger test split)."""


def test_all_tasks_are_registered_and_listed(run_grue):
    assert set(plugins.grue_tasks() + SYNTHETIC) <= set(plugins.TASKS.ids())
    code, out, _ = run_grue("ls", "tasks")
    assert code == 0
    for id in plugins.grue_tasks() + SYNTHETIC:
        line = next(line for line in out.splitlines() if line.strip().startswith(id + " "))
        assert "INVALID" not in line and f" v{VERSIONS.get(id, 1)} " in line


def test_the_grue_tasks_are_those_marked_in_their_folders_in_the_papers_order():
    # no list in the code: each task.yaml gives its grue_order, the synthetic checks give none
    paper = ("imdb", "commongen", "cnn_dailymail", "totto", "narrative_qa", "iwslt2017_en_de", "daily_dialog")
    assert plugins.grue_tasks() == paper
    assert all(plugins.TASKS.get(task).grue_order is None for task in SYNTHETIC)


def test_an_rl4lms_datapool_id_names_the_task_whose_folder_lists_it():
    assert plugins.task_reading("cnn_daily_mail") == "cnn_dailymail"  # listed in its task.yaml
    assert plugins.task_reading("iwslt2017en_de") == "iwslt2017_en_de"
    assert plugins.task_reading("imdb_seq2seq") == plugins.task_reading("imdb") == "imdb"
    assert plugins.task_reading("crd3") is None  # RL4LMs data no task ships


@pytest.mark.parametrize("task", plugins.grue_tasks() + SYNTHETIC)
def test_every_task_yaml_validates(run_grue, task):
    code, out, err = run_grue("validate", str(REPO / "tasks" / task / "task.yaml"))
    assert code == 0, err
    assert f"(task '{task}' v{VERSIONS.get(task, 1)})" in out


@pytest.mark.parametrize("task", plugins.grue_tasks())
def test_shipped_splits_load_with_their_sizes_and_sources(task):
    spec = plugins.TASKS.get(task)
    sizes = tuple(len(TaskPool.prepare(split, task=task)) for split in ("train", "validation", "test"))
    assert sizes == SPLIT_SIZES[task]
    assert (spec.directory / "data" / "SOURCE.md").is_file()
    sample = TaskPool.prepare("test", task=task)[0]
    assert sample.references and all(isinstance(r, str) for r in sample.references)
    assert sample.prompt_or_input_text.startswith(spec.prompt.prefix)


def test_prompt_formats_follow_the_task_definition():
    raw = json.loads((REPO / "tasks/cnn_dailymail/data/test.jsonl").open().readline())
    sample = TaskPool.prepare("test", task="cnn_dailymail")[0]
    assert sample.prompt_or_input_text == "Summarize: " + raw["prompt"]
    commongen = TaskPool.prepare("test", task="commongen")[0]
    assert (
        commongen.prompt_or_input_text
        == "generate a sentence with: " + " ".join(commongen.meta_data["concepts"]) + "."
    )
    assert TaskPool.prepare("test", task="iwslt2017_en_de")[0].prompt_or_input_text.startswith(
        "translate English to German: "
    )
    assert TaskPool.prepare("test", task="daily_dialog")[0].prompt_or_input_text.endswith(" <EOU> ")


def test_imdb_label_is_kept_in_meta():
    labels = {s.meta_data["label"] for s in TaskPool.prepare("test", task="imdb")}
    assert labels == {0, 1}


def test_rl4lms_datapool_ids_apply_their_arguments():
    pool = plugins.DATAPOOLS.get("commongen").prepare(
        "validation", concept_separator_token=", ", concept_end_token="!", prefix="use: "
    )
    assert pool[0].prompt_or_input_text == "use: " + ", ".join(pool[0].meta_data["concepts"]) + "!"
    short = plugins.DATAPOOLS.get("daily_dialog").prepare("test", context_size=1)
    full = TaskPool.prepare("test", task="daily_dialog")
    assert all(" <EOU> " not in s.prompt_or_input_text for s in short)
    assert full[5].prompt_or_input_text.rstrip().endswith(short[5].prompt_or_input_text.strip())
    cnn = plugins.DATAPOOLS.get("cnn_daily_mail").prepare("test", prompt_prefix="TL;DR: ")
    assert cnn[0].prompt_or_input_text.startswith("TL;DR: ")
    with pytest.raises(
        GrueError, match=r"datapool\.args\.context_size: Input should be less than or equal to 5"
    ):
        checked_args("datapools", "daily_dialog", {"context_size": 9}, "datapool.args")


def test_a_task_pool_takes_a_profiles_own_prefix_and_suffix_in_place_of_the_tasks():
    task = TaskPool.prepare("validation", task="commongen")
    assert task[0].prompt_or_input_text == "generate a sentence with: arm sit tattoo."
    own = TaskPool.prepare("validation", task="commongen", prompt_prefix="Use: ", prompt_suffix="\nSentence:")
    assert own[0].prompt_or_input_text == "Use: arm sit tattoo\nSentence:"
    assert [s.references for s in own] == [s.references for s in task]


def test_max_input_words_cuts_the_input_not_the_prefix_or_suffix():
    assert first_words("one  two\nthree four", 3) == "one  two\nthree"
    assert first_words(" one two ", 5) == " one two " and first_words("one two", None) == "one two"
    whole = TaskPool.prepare("test", task="narrative_qa", prompt_prefix="Q&A:\n", prompt_suffix="\nA:")
    cut = TaskPool.prepare(
        "test", task="narrative_qa", prompt_prefix="Q&A:\n", prompt_suffix="\nA:", max_input_words=12
    )
    text = cut[0].prompt_or_input_text
    assert text.startswith("Q&A:\nquestion: ") and text.endswith("\nA:") and len(text.split()) == 12 + 2
    assert whole[0].prompt_or_input_text.startswith(text.removesuffix("\nA:"))


def test_prompt_template_lays_out_the_rows_fields_each_cut_to_max_input_words():
    """NarrativeQA's small profile puts the question after the story (RL4LMs's layout puts it first)."""
    row = json.loads((REPO / "tasks/narrative_qa/data/test.jsonl").read_text().splitlines()[0])
    question, summary = row["meta"]["question"], row["meta"]["summary"]
    pool = TaskPool.prepare(
        "test",
        task="narrative_qa",
        prompt_prefix="<",
        prompt_suffix=">",
        prompt_template="Story: {summary}\nQuestion: {question} {{braces}}",
        max_input_words=6,
    )
    story = " ".join(summary.split()[:6])
    assert len(question.split()) <= 6 and len(summary.split()) > 6
    assert pool[0].prompt_or_input_text == f"<Story: {story}\nQuestion: {question} {{braces}}>"
    assert pool[0].references == row["references"]


def test_prompt_template_naming_a_field_the_rows_lack_says_which_fields_they_have():
    with pytest.raises(GrueError) as info:
        TaskPool.prepare("validation", task="narrative_qa", prompt_template="Story: {story}")
    message = str(info.value)
    assert "datapool.args.prompt_template: validation row 1 of task 'narrative_qa' (shipped)" in message
    assert "no text field 'story'" in message and "prompt, question, summary" in message


@pytest.mark.parametrize(
    "template", ["Story: {}", "{summary!r}", "{summary:>10}", "{meta.summary}", "no field", "{"]
)
def test_a_prompt_template_that_is_not_of_named_fields_fails_with_the_config(template):
    with pytest.raises(GrueError, match="is not a template of named fields") as info:
        checked_args(
            "datapools", "task", {"task": "narrative_qa", "prompt_template": template}, "datapool.args"
        )
    assert "datapool.args.prompt_template" in str(info.value)


def test_max_samples_is_a_seeded_subset():
    a = TaskPool.prepare("train", task="imdb", max_samples=10, seed=1)
    b = TaskPool.prepare("train", task="imdb", max_samples=10, seed=1)
    assert len(a) == 10 and [s.id for s in a] == [s.id for s in b]


def test_synthetic_pool():
    pool = SyntheticPool.prepare("train", n_samples=3, prompt="go")
    assert [s.prompt_or_input_text for s in pool] == ["go"] * 3 and pool[0].references == []


def test_unknown_split_and_task():
    with pytest.raises(GrueError, match="unknown split 'dev'"):
        TaskPool.prepare("dev", task="imdb")
    with pytest.raises(GrueError, match="Did you mean 'imdb'"):
        TaskPool.prepare("test", task="imbd")


def test_hub_dataset_offline_fails_fast_saying_what_to_do():
    with pytest.raises(GrueError) as info:
        TaskPool.prepare("test", task="imdb", source="hub")
    message = str(info.value)
    assert "could not load dataset 'imdb'" in message
    assert "source: shipped" in message


def test_local_jsonl_and_csv_sources(tmp_path):
    (tmp_path / "test.jsonl").write_text('{"id": "a", "prompt": "p", "references": ["r"]}\n')
    pool = TaskPool.prepare("test", task="narrative_qa", source=str(tmp_path))
    assert pool[0].id == "a" and pool[0].references == ["r"]
    csv_file = tmp_path / "rows.csv"
    csv_file.write_text("id,prompt,reference\nx,hello,world\n")
    pool = TaskPool.prepare("test", task="iwslt2017_en_de", source=str(csv_file))
    assert pool[0].prompt_or_input_text == "translate English to German: hello"
    assert pool[0].references == ["world"]


def test_bad_local_jsonl_names_file_and_line(tmp_path):
    bad = tmp_path / "test.jsonl"
    bad.write_text('{"id": "a", "prompt": "p"}\nnot json\n')
    with pytest.raises(GrueError, match="line 2 is not valid JSON") as info:
        TaskPool.prepare("test", task="imdb", source=str(bad))
    assert str(bad) in str(info.value)


def test_totto_converter_reproduces_every_shipped_row_from_its_official_record():
    """The shipped rows' headers were found on the table's span-honouring grid; the converter
    finds the same from the official record (table and highlighted cells)."""
    spec = plugins.TASKS.get("totto")
    convert = spec.resolve("hooks:from_hub")
    for split in ("train", "validation", "test"):
        for row in map(json.loads, spec.data_path(split).read_text().splitlines()):
            meta = row["meta"]
            record = {**meta, "sentence_annotations": [{"final_sentence": r} for r in row["references"]]}
            converted = convert(record, 0)
            assert converted["prompt"] == row["prompt"]
            assert converted["meta"]["highlighted_cell_details"] == meta["highlighted_cell_details"]


def test_hub_converters_on_hub_shaped_rows():
    convert = {t: plugins.TASKS.get(t).resolve("hooks:from_hub") for t in plugins.grue_tasks()}
    imdb = convert["imdb"]({"text": "one two three four", "label": 1}, 0)
    assert imdb["prompt"] == "one two" and imdb["references"] == ["three four"] and imdb["label"] == 1
    gen = convert["commongen"](
        {"concept_set_id": 7, "concepts": ["dog", "run"], "target": "A dog runs.", "references": []}, 3
    )
    assert gen["prompt"] == "dog run" and gen["references"] == ["A dog runs."]
    qa = convert["narrative_qa"](
        {
            "document": {"id": "d", "summary": {"text": "S."}},
            "question": {"text": "Q?"},
            "answers": [{"text": "A1"}, {"text": "A2"}],
        },
        0,
    )
    assert qa["prompt"] == "question: Q? context: S." and qa["references"] == ["A1", "A2"]
    mt = convert["iwslt2017_en_de"]({"translation": {"en": "Hello", "de": "Hallo"}}, 4)
    assert (mt["prompt"], mt["references"]) == ("Hello", ["Hallo"])
    dialog = convert["daily_dialog"]({"dialog": ["a", "b", "c"], "act": [2, 1, 3], "emotion": [0, 0, 4]}, 9)
    assert [d["prompt"] for d in dialog] == ["a", "a <EOU> b"]
    assert [d["meta"]["response_act"] for d in dialog] == [1, 3]
    cnn = convert["cnn_dailymail"]({"id": "x", "article": "Art", "highlights": "Hi"}, 0)
    assert (cnn["prompt"], cnn["references"]) == ("Art", ["Hi"])
    table = [
        [{"value": "Year", "is_header": True}, {"value": "Title", "is_header": True}],
        [{"value": "2001", "is_header": False}, {"value": "Film", "is_header": False}],
    ]
    totto = convert["totto"](
        {
            "table": table,
            "highlighted_cells": [[1, 1]],
            "table_page_title": "P",
            "table_section_title": "S",
            "sentence_annotations": {"final_sentence": ["F.", "G.", "F."]},  # the hub's shape
        },
        0,
    )
    assert totto["prompt"] == (
        "<page_title> P </page_title> <section_title> S </section_title> <table> "
        "<cell> Film <col_header> Title </col_header> </cell> </table>"
    )
    assert totto["references"] == ["F.", "G."]
    spanning = [  # "Award" spans two columns: "Result" is the header above the third grid column
        [{"value": "Year", "is_header": True}, {"value": "Award", "is_header": True, "column_span": 2}],
        [
            {"value": "Year", "is_header": True},
            {"value": "Name", "is_header": True},
            {"value": "Result", "is_header": True},
        ],
        [
            {"value": "2001", "is_header": True},
            {"value": "Oscar", "is_header": False},
            {"value": "Won", "is_header": False},
        ],
    ]
    cells = plugins.TASKS.get("totto").resolve("hooks:cell_details")(spanning, [[2, 2]])
    assert cells[0]["col_headers"] == ["Award", "Result"] and cells[0]["row_headers"] == ["2001"]


def test_task_yaml_errors_name_the_key(tmp_path, run_grue):
    task = tmp_path / "broken"
    task.mkdir()
    (task / "task.yaml").write_text(
        "id: broken\nversion: 0\nname: B\ndescription: d\nmodel_type: gpt\n"
        "data: {files: {train: a.jsonl, validation: b.jsonl}}\nreward_fn: {id: rouge}\nmetrics: []\n"
    )
    code, _, err = run_grue("validate", str(task / "task.yaml"))
    assert code == 2
    for key in ("version", "model_type", "data.files"):
        assert f"task.yaml: {key}" in err
    assert "missing split(s) test" in err


def _one_row_task(tmp_path, profiles: str, task_id: str = "echo"):
    """A one-row causal task folder whose task.yaml ends with ``profiles: <profiles>``."""
    task = tmp_path / task_id
    (task / "data").mkdir(parents=True)
    for split in ("train", "validation", "test"):
        (task / "data" / f"{split}.jsonl").write_text('{"id": "1", "prompt": "p", "references": ["r"]}\n')
    (task / "task.yaml").write_text(
        f"id: {task_id}\nversion: 1\nname: E\ndescription: d\nmodel_type: causal\n"
        "data: {files: {train: data/train.jsonl, validation: data/validation.jsonl, test: data/test.jsonl}}\n"
        "reward_fn: {id: increasing_numbers}\nmetrics: []\n"
        f"profiles: {profiles}\n"
    )
    return task / "task.yaml"


def test_task_profile_errors_are_reported_once_per_key(tmp_path, run_grue):
    code, _, err = run_grue("validate", str(_one_row_task(tmp_path, "{tiny: {env: {n_envs: -1}}}")))
    assert code == 2
    assert err.count("profiles.tiny.env.n_envs") == 1


def test_an_exponent_in_a_task_yaml_is_a_number(tmp_path):
    from grue_bench.resolve import load_task

    # a registered id, so that its profile validates as a run config
    task = load_task(_one_row_task(tmp_path, "{tiny: {alg: {args: {learning_rate: 1e-5}}}}", "dates"))
    rate = task_config(task, "ppo", "tiny")["alg"]["args"]["learning_rate"]
    assert isinstance(rate, float) and rate == 1e-5


def test_run_config_composition_per_algorithm():
    spec = plugins.TASKS.get("commongen")
    nlpo = task_config(spec, "nlpo", "tiny")
    assert nlpo["alg"]["policy"]["id"] == "maskable_seq2seq_lm_actor_critic_policy"
    assert nlpo["alg"]["policy"]["args"]["top_mask"] == 0.9
    assert nlpo["train_evaluation"]["metrics"][0]["id"] == "meteor"
    supervised = task_config(spec, "supervised", "tiny")
    assert "policy" not in supervised["alg"] and supervised["alg"]["model_type"] == "seq2seq"
    ppo = task_config(plugins.TASKS.get("imdb"), "ppo", "paper")
    assert ppo["alg"]["policy"]["id"] == "causal_lm_actor_critic_policy"
    with pytest.raises(GrueError, match="has no profile 'huge'"):
        task_config(spec, "ppo", "huge")


def test_a_profile_runs_the_task_on_its_own_policy_family(tmp_path, run_grue):
    from grue_bench.resolve import load_task

    path = _one_row_task(tmp_path, "{tiny: {model_type: seq2seq}, small: {}}", "dates")
    task = load_task(path)  # a causal task whose tiny profile runs a seq2seq LM
    nlpo = task_config(task, "nlpo", "tiny")
    assert nlpo["alg"]["policy"]["id"] == "maskable_seq2seq_lm_actor_critic_policy"
    assert task_config(task, "supervised", "tiny")["alg"]["model_type"] == "seq2seq"
    assert task_config(task, "ppo", "small")["alg"]["policy"]["id"] == "causal_lm_actor_critic_policy"
    assert "model_type" not in task_config(task, "ppo", "tiny")  # not a run config key
    bad = _one_row_task(tmp_path / "bad", "{tiny: {model_type: gpt}}", "dates")
    code, _, err = run_grue("validate", str(bad))
    assert code == 2 and "profiles.tiny.model_type" in err and "use causal or seq2seq" in err


def test_a_profiles_metrics_extend_the_tasks_suite():
    from grue_bench.resolve import extended_metrics

    suite = [{"id": "rouge", "args": {}}, {"id": "causal_perplexity", "args": {"stride": 128}}]
    profile = [{"id": "causal_perplexity", "args": {"max_length": 1024}}, {"id": "bleu"}]
    assert extended_metrics(suite, profile) == [
        {"id": "rouge", "args": {}},
        {"id": "causal_perplexity", "args": {"stride": 128, "max_length": 1024}},
        {"id": "bleu"},
    ]
    assert suite[1]["args"] == {"stride": 128}  # the task's own list is left as it was
    # IMDB's small profile names only the metric it changes; the rest is the task's suite, in order
    small = task_config(plugins.TASKS.get("imdb"), "ppo", "small")["train_evaluation"]["metrics"]
    assert [(m["id"], m["args"]) for m in small] == [
        ("learned_reward", {}),
        ("vader_sentiment", {}),
        ("causal_perplexity", {"max_length": 1024, "stride": 512}),
        ("diversity", {}),
        ("meteor", {}),
        ("rouge", {}),
    ]


@pytest.mark.parametrize("alg", ["nlpo", "supervised"])
def test_a_task_config_changed_by_its_caller_leaves_the_task_as_it_was(alg):
    """Overrides applied to what ``task_config`` returns (as the grid, the Python API and the tests
    apply them) must not reach the task's profiles: a run's config would then depend on what
    else its process ran (the demo's rerun found 3 of its 21 keys changed in CI)."""
    from grue_bench.resolve import apply_override

    spec = plugins.TASKS.get("commongen")
    before = json.dumps(task_config(spec, alg, "tiny"), sort_keys=True)
    data = task_config(spec, alg, "tiny")
    for assignment in (
        "env.args.max_episode_length=3",
        "train_evaluation.eval_every=1",
        "train_evaluation.generation_kwargs.max_new_tokens=3",
        "tokenizer.padding_side=right",
        "alg.training_args.per_device_train_batch_size=3" if alg == "supervised" else "alg.args.n_epochs=3",
        "train_evaluation.metrics.0.args.x=3",
    ):
        apply_override(data, assignment)
    assert json.dumps(task_config(spec, alg, "tiny"), sort_keys=True) == before
