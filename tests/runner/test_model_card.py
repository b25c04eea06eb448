"""The model card a finished run writes into its ``model/`` folder: the hub's format, the store's
numbers; and what it says of a hub base model, a hub dataset and a PEFT adapter."""

import json

import pytest
from huggingface_hub import ModelCard

from grue_bench import __version__, plugins
from grue_bench.resolve import build_config, task_config
from grue_bench.runner.model_card import TrainedRun, build_model_card
from grue_bench.store import Store


@pytest.fixture(scope="module")
def finished(tiny_finished_run):
    with Store(tiny_finished_run / "s.sqlite") as store:
        (record,) = store.runs()
        curves = store.curves(record.id, "test")
    final = {name: points[-1][1] for name, points in curves.items() if points[-1][0] == 2}
    model_dir = next((tiny_finished_run / "runs" / "increasing_numbers" / "ppo").iterdir()) / "model"
    return record, final, model_dir


def test_the_card_holds_the_runs_final_test_scores_in_model_index(finished):
    _, final, model_dir = finished
    card = ModelCard.load(model_dir / "README.md")
    results = card.data.eval_results
    assert final and {r.metric_type: r.metric_value for r in results} == final
    assert {r.task_type for r in results} == {"text-generation"}
    assert {(r.dataset_type, r.dataset_split) for r in results} == {("dummy_pool", "test")}
    assert card.data.model_name == "increasing_numbers-ppo-seed0"
    assert card.data.to_dict()["model-index"][0]["results"][0]["metrics"][0]["value"] in final.values()


def test_the_card_says_config_seed_version_library_and_tags(finished):
    record, _, model_dir = finished
    card = ModelCard.load(model_dir / "README.md")
    assert card.data.library_name == "transformers" and card.data.pipeline_tag == "text-generation"
    assert card.data.tags == ["grue-bench", "rl", "ppo"]
    assert card.data.base_model is None  # the tiny base LM is built here, not on the hub
    grue = card.data.grue_bench
    assert grue["version"] == __version__ and grue["seed"] == 0 and grue["algorithm"] == "ppo"
    assert grue["base_model"] == record.model and grue["config"] == record.config
    assert "## Test scores" in card.text and "reward/increasing_numbers" in card.text
    assert "AutoModelForCausalLM.from_pretrained" in card.text and "n_iters: 2" in card.text


def paper_run(task: str, test_metrics: dict) -> TrainedRun:
    data = task_config(plugins.TASKS.get(task), "ppo", "paper")
    config = build_config({**data, "task": task, "profile": "paper"}, "test")
    return TrainedRun(task, "supervised+ppo", 1, "t5-base", config, test_metrics)


def test_a_hub_base_model_and_a_hub_dataset_are_named(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"is_encoder_decoder": True}))
    card = build_model_card(tmp_path, paper_run("cnn_dailymail", {"lexical/rouge_rouge1": 0.4}))
    assert card.data.base_model == "t5-base" and card.data.pipeline_tag == "text2text-generation"
    (result,) = card.data.eval_results
    assert (result.dataset_type, result.dataset_config) == ("cnn_dailymail", "3.0.0")
    assert result.dataset_split and card.data.datasets == ["cnn_dailymail"]
    assert card.data.tags == ["grue-bench", "rl", "supervised", "ppo"]


def test_an_adapter_folder_is_a_peft_model(tmp_path):
    (tmp_path / "adapter_config.json").write_text(json.dumps({"task_type": "SEQ_2_SEQ_LM"}))
    card = build_model_card(tmp_path, paper_run("cnn_dailymail", {}))
    assert card.data.library_name == "peft" and "AutoPeftModelForSeq2SeqLM" in card.text


def test_a_supervised_run_writes_its_card_too(run_grue, tmp_path):
    # a supervised run finishes on its own path (its iterations are optimizer steps)
    store, runs = tmp_path / "s.sqlite", tmp_path / "runs"
    code, _, stderr = run_grue(
        "run",
        "--task=increasing_numbers",
        "--alg=supervised",
        "--seed-list=3",
        f"--store={store}",
        f"--output-dir={runs}",
        "--set=datapool.args.n_samples=16",
    )
    assert code == 0, stderr
    with Store(store) as opened:
        (record,) = opened.runs()
        curves = opened.curves(record.id, "test")
    card = ModelCard.load(next(runs.rglob("model/README.md")))
    assert card.data.tags == ["grue-bench", "rl", "supervised"] and card.data.grue_bench["seed"] == 3
    assert {r.metric_type: r.metric_value for r in card.data.eval_results} == {
        name: points[-1][1] for name, points in curves.items()
    }
