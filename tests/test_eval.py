"""`grue eval` and the metric suites: ceilings for predictions = references, floors for empty ones."""

import json
import random

import numpy
import pytest
import torch

from grue_bench import plugins
from grue_bench.datapools import TaskPool
from grue_bench.metrics.diversity import Diversity
from grue_bench.schema import Component
from grue_bench.scoring import load_predictions, score

# (key, value for predictions = first reference, value for empty predictions); exact unless noted.
CEILING_AND_FLOOR = {
    "lexical/rouge_rouge1": (1.0, 0.0),
    "lexical/rouge_rougeL": (1.0, 0.0),
    "lexical/rouge_rougeLsum": (1.0, 0.0),
    "lexical/rouge_l_max": (1.0, 0.0),
    "lexical/sacrebleu": (1.0, 0.0),
    "lexical/chrf": (1.0, 0.0),
    "lexical/ter": (0.0, 1.0),
    "lexical/meteor": (None, 0.0),
    "lexical/bleu": (None, 0.0),
    "lexical/cider": (None, 0.0),
    "semantic/bert_score": (None, 0.0),
    "table_to_text/parent_f1": (None, 0.0),
}


def _subset(task, n=20):
    return list(TaskPool.prepare("test", task=task))[:n]


@pytest.mark.parametrize("task", plugins.grue_tasks())
def test_suite_ceilings_and_floors(task):
    spec = plugins.TASKS.get(task)
    samples = _subset(task)
    ceiling = score(spec.metrics, samples, [s.references[0] for s in samples]).corpus()
    floor = score(spec.metrics, samples, ["" for _ in samples]).corpus()
    checked = 0
    for key, (top, bottom) in CEILING_AND_FLOOR.items():
        if key not in ceiling:
            continue
        checked += 1
        assert floor[key] == pytest.approx(bottom, abs=1e-4), key  # PARENT smooths zeros to 1e-5
        if top is not None:
            assert ceiling[key] == pytest.approx(top, abs=1e-6), key
        else:
            assert ceiling[key] > floor[key], key
    assert checked >= 4
    # Bounded metrics reach (nearly) their maximum; what keeps them from 1 is each metric's own
    # definition: METEOR's fragmentation penalty on one-word answers, nltk BLEU's n-gram
    # denominators for texts shorter than 4 tokens, PARENT's table recall.
    short_answers = task == "narrative_qa"
    if "semantic/bert_score" in ceiling:
        assert ceiling["semantic/bert_score"] == pytest.approx(1.0, abs=1e-4)
    if "lexical/meteor" in ceiling:
        assert ceiling["lexical/meteor"] > (0.8 if short_answers else 0.99)
    if "lexical/bleu" in ceiling:
        assert ceiling["lexical/bleu"] > (0.85 if short_answers else 0.99)
    if "table_to_text/parent_f1" in ceiling:
        assert ceiling["table_to_text/parent_f1"] > 0.95


def test_unrelated_predictions_score_low():
    samples = _subset("iwslt2017_en_de")
    spec = plugins.TASKS.get("iwslt2017_en_de")
    shifted = [samples[(i + 1) % len(samples)].references[0] for i in range(len(samples))]
    table = score(spec.metrics, samples, shifted).corpus()
    assert table["lexical/sacrebleu"] < 0.1
    assert table["lexical/ter"] > 0.7
    assert table["semantic/bert_score"] < 0.9


def test_metric_needing_the_policy_model_is_skipped_with_a_reason_not_scored():
    spec = plugins.TASKS.get("imdb")
    samples = _subset("imdb", 5)
    scores = score(spec.metrics, samples, [s.references[0] for s in samples])
    assert "causal_perplexity" in scores.skipped and "--model" in scores.skipped["causal_perplexity"]
    assert not any("perplexity" in key for key in scores.corpus())
    # each metric that ran is timed, the skipped one is not
    assert set(scores.seconds) == {metric.id for metric in spec.metrics} - {"causal_perplexity"}
    assert all(seconds > 0 for seconds in scores.seconds.values())


def test_scoring_leaves_the_random_states_as_it_found_them(monkeypatch):
    """A metric's first use may draw from the global random states (an import does); the run's
    streams, and the warm-start key hashed from them, must not depend on it."""
    compute = Diversity.compute

    def drawing(self, *args, **kwargs):
        random.random(), numpy.random.rand(), torch.rand(1)
        return compute(self, *args, **kwargs)

    monkeypatch.setattr(Diversity, "compute", drawing)
    samples = _subset("imdb", 5)
    random.seed(3), numpy.random.seed(3), torch.manual_seed(3)
    expected = random.random(), numpy.random.rand(), torch.rand(1).item()
    random.seed(3), numpy.random.seed(3), torch.manual_seed(3)
    scores = score([Component(id="diversity")], samples, [s.references[0] for s in samples])
    assert scores.corpus()["diversity_metrics/distinct-1"] > 0
    assert (random.random(), numpy.random.rand(), torch.rand(1).item()) == expected


def _write(path, rows):
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def test_grue_eval_prints_the_suite_as_json(run_grue, tmp_path):
    samples = list(TaskPool.prepare("test", task="totto"))
    predictions = _write(tmp_path / "p.jsonl", [{"id": s.id, "text": s.references[0]} for s in samples])
    code, out, err = run_grue("eval", "--task", "totto", "--predictions", str(predictions), "--json")
    assert code == 0, err
    result = json.loads(out)
    assert result["task"] == "totto" and result["n"] == 54 and result["split"] == "test"
    assert result["scores"]["lexical/sacrebleu"] == pytest.approx(1.0)
    assert result["scores"]["table_to_text/parent_precision"] == pytest.approx(1.0)


def test_grue_eval_table_and_metric_selection(run_grue, tmp_path):
    samples = list(TaskPool.prepare("validation", task="totto"))
    predictions = _write(tmp_path / "p.jsonl", [{"id": s.id, "text": "nothing"} for s in samples])
    code, out, _ = run_grue(
        "eval",
        "--task",
        "totto",
        "--split",
        "validation",
        "--predictions",
        str(predictions),
        "--metrics",
        "sacre_bleu,chrf",
    )
    assert code == 0
    assert "split validation, 8 samples" in out
    assert "lexical/sacrebleu" in out and "lexical/chrf" in out and "rouge" not in out
    code, _, err = run_grue(
        "eval",
        "--task",
        "totto",
        "--split",
        "validation",
        "--predictions",
        str(predictions),
        "--metrics",
        "sacrebleu",
    )
    assert code == 2 and "Did you mean 'sacre_bleu'" in err


def test_predictions_file_problems_are_all_reported_with_lines(tmp_path):
    samples = list(TaskPool.prepare("test", task="totto"))
    rows = [{"id": s.id, "text": "x"} for s in samples[1:]]
    rows[2] = {"id": rows[1]["id"], "text": "dup"}
    first_bad = len(rows) + 1
    rows.append({"id": "totto-validation-nope", "text": "x"})
    rows.append("{not json")
    rows.append({"id": 3, "text": "x"})
    path = _write(tmp_path / "p.jsonl", rows)
    with pytest.raises(Exception) as info:
        load_predictions(path, samples)
    message = str(info.value)
    assert str(path) in message
    assert "line 3: id" in message and "predicted twice" in message
    assert f"line {first_bad}: id 'totto-validation-nope' is not in this split" in message
    assert f"line {first_bad + 1}: not valid JSON" in message
    assert f"line {first_bad + 2}: needs string fields 'id' and 'text'" in message
    assert f"have no prediction: {samples[0].id}" in message


def test_missing_predictions_file(run_grue, tmp_path):
    code, _, err = run_grue("eval", "--task", "imdb", "--predictions", str(tmp_path / "none.jsonl"))
    assert code == 2 and "predictions file not found" in err


def test_grue_eval_model_folder_scores_perplexity_under_it(run_grue, tmp_path):
    from transformers import GPT2Config, GPT2LMHeadModel

    from grue_bench.models.tiny import TinyLMConfig, train_tokenizer

    samples = list(TaskPool.prepare("test", task="imdb"))
    tokenizer = train_tokenizer([s.references[0] for s in samples], "causal", TinyLMConfig(vocab_size=300))
    GPT2LMHeadModel(
        GPT2Config(vocab_size=len(tokenizer), n_positions=64, n_embd=16, n_layer=1, n_head=2)
    ).save_pretrained(tmp_path / "lm")
    tokenizer.save_pretrained(tmp_path / "lm")
    predictions = _write(tmp_path / "p.jsonl", [{"id": s.id, "text": "a film"} for s in samples])
    argv = ["eval", "--task", "imdb", "--predictions", str(predictions), "--metrics", "causal_perplexity"]
    code, out, err = run_grue(*argv, "--model", str(tmp_path / "lm"), "--json")
    assert code == 0, err
    assert json.loads(out)["scores"]["fluency_metrics/perplexity"] > 1
    code, _, err = run_grue(*argv, "--model", str(tmp_path / "nowhere"))
    assert code == 2 and "does not exist" in err
