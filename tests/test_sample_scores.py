"""Per-sample scores: what scoring keeps per sample (a mean's own values, a corpus metric's jackknife
linearization), the store's table, the backfill of older stores, and the intervals they give on the
shipped small-profile stores."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from grue_bench.cli import main
from grue_bench.datapools import TaskPool
from grue_bench.metrics.lexical import SacreBleu, Ter
from grue_bench.report.intervals import difference_interval, mean_interval, verdict
from grue_bench.schema import Component
from grue_bench.scoring import sample_values, score
from grue_bench.store import Store

REPO = Path(__file__).resolve().parents[1]
SMALL_STORES = REPO / "baselines" / "stores" / "small-v1"

HYPOTHESES = ["the cat sat on the mat", "a dog ran home", "hello there world", "ich bin ein berliner"]
REFERENCES = [["the cat is on the mat"], ["the dog runs home"], ["hello world"], ["ich bin ein Berliner"]]


def test_a_mean_metric_keeps_its_own_per_sample_scores():
    samples = list(TaskPool.prepare("test", task="narrative_qa"))[:6]
    texts = [s.references[0].split()[0] for s in samples]
    scores = score([Component(id="rouge")], samples, texts)
    corpus = scores.corpus()
    per_sample = scores.results["rouge"]["lexical/rouge_rougeL"][0]
    assert scores.samples["lexical/rouge_rougeL"] == per_sample
    assert np.mean(scores.samples["lexical/rouge_rougeL"]) == pytest.approx(corpus["lexical/rouge_rougeL"])
    assert scores.of_sample(2)["lexical/rouge_rouge1"] == scores.samples["lexical/rouge_rouge1"][2]


@pytest.mark.parametrize("metric", [SacreBleu(), Ter()])
def test_a_corpus_metric_keeps_its_jackknife_linearization(metric):
    scores = metric.compute([], HYPOTHESES, REFERENCES)
    (key,) = scores
    corpus = scores[key][1]
    left_out = [
        metric.compute([], HYPOTHESES[:i] + HYPOTHESES[i + 1 :], REFERENCES[:i] + REFERENCES[i + 1 :])[key][1]
        for i in range(4)
    ]
    assert metric.leave_one_out(HYPOTHESES, REFERENCES)[key] == pytest.approx(left_out)
    values = sample_values(metric, scores, HYPOTHESES, REFERENCES)[key]
    # theta + (n - 1) * (mean of the leave-one-out scores - the i-th): mean theta, jackknife variance
    expected = [corpus + 3 * (np.mean(left_out) - v) for v in left_out]
    assert values == pytest.approx(expected)
    assert np.mean(values) == pytest.approx(corpus)
    jackknife_variance = 3 / 4 * np.sum((np.array(left_out) - np.mean(left_out)) ** 2)
    assert np.var(values, ddof=1) / 4 == pytest.approx(jackknife_variance)


def test_generations_with_scores_fill_the_table_and_backfill_fills_older_runs(tmp_path: Path, capsys):
    samples = list(TaskPool.prepare("test", task="narrative_qa"))[:5]
    texts = [s.references[0].split()[0] for s in samples]
    suite = [Component(id="rouge")]
    scores = score(suite, samples, texts)
    path = tmp_path / "store.sqlite"
    with Store(path) as store:
        for with_scores in (True, False):
            run = store.start_run(
                task="narrative_qa",
                task_version=1,
                alg=f"ppo{int(with_scores)}",
                seed=0,
                profile="tiny",
                model=None,
                config={"train_evaluation": {"metrics": [{"id": "rouge", "args": {}}]}},
                config_hash="h",
            )
            rows = [
                {"sample_id": s.id, "prompt": s.prompt_or_input_text, "text": t, "references": s.references}
                | ({"scores": scores.of_sample(i)} if with_scores else {})
                for i, (s, t) in enumerate(zip(samples, texts, strict=True))
            ]
            store.finish_run(
                run.id, iteration=3, final_metrics={"test": scores.corpus()}, generations={"test": rows}
            )
        assert store.sample_scores(1, "test", 3)["lexical/rouge_rougeL"] == dict(
            zip([s.id for s in samples], scores.samples["lexical/rouge_rougeL"], strict=True)
        )
        assert store.sample_scores(2, "test", 3) == {}
    assert main(["backfill", str(path)]) == 0
    out = capsys.readouterr().out
    assert "1 evaluation(s) scored per sample, 1 already complete, 0 logged score(s) not confirmed" in out
    with Store(path) as store:
        assert store.sample_scores(2, "test", 3) == store.sample_scores(1, "test", 3)
        table = store.sample_scores_table("test")
        assert len(table) == 2 * 5 * 4  # 2 runs x 5 samples x 4 ROUGE keys
    assert main(["backfill", str(path)]) == 0  # a second backfill has nothing left to do
    assert "0 evaluation(s) scored per sample, 2 already complete" in capsys.readouterr().out


def _headline(store_path: Path, iteration: int | None = None) -> dict[str, float]:
    with sqlite3.connect(store_path) as conn:
        if iteration is None:
            (iteration,) = conn.execute(
                "SELECT max(iteration) FROM sample_scores WHERE split = 'test'"
            ).fetchone()
        rows = conn.execute(
            "SELECT sample_id, value FROM sample_scores WHERE split = 'test' AND iteration = ? AND name = ?",
            [iteration, "semantic/learned_automodel_metric"],
        ).fetchall()
    return dict(rows)


def test_on_the_shipped_small_stores_the_supervised_model_resampled_is_a_tie(tmp_path: Path):
    """The small profile's supervised row against the same weights sampled again (iteration 0 of
    supervised+PPO): the old seed-only bootstrap called them clearly apart; seeds × samples: a tie."""
    rows = {"supervised": [], "resampled": []}
    for seed in range(3):
        copies = {}
        for name in (f"imdb_supervised_seed{seed}", f"imdb_supervised-ppo_seed{seed}"):
            copies[name] = tmp_path / f"{name}.sqlite"  # read a copy: opening never touches the repo
            shutil.copy(SMALL_STORES / f"{name}.sqlite", copies[name])
        rows["supervised"].append(_headline(copies[f"imdb_supervised_seed{seed}"]))
        rows["resampled"].append(_headline(copies[f"imdb_supervised-ppo_seed{seed}"], iteration=0))
    ids = sorted(rows["supervised"][0])
    assert len(ids) == 200 and all(sorted(r) == ids for rs in rows.values() for r in rs)
    supervised = np.array([[r[i] for i in ids] for r in rows["supervised"]])
    resampled = np.array([[r[i] for i in ids] for r in rows["resampled"]])
    difference = difference_interval(supervised, resampled)
    assert difference.estimate > 0.002  # the means differ, by sampling alone
    assert verdict(difference, higher_is_better=True) == "tie"
    assert mean_interval(supervised).high - mean_interval(supervised).low > 0.005


def test_backfill_of_a_missing_store_is_an_error_naming_it(tmp_path: Path, capsys):
    missing = tmp_path / "nope.sqlite"
    assert main(["backfill", str(missing)]) == 2
    error = capsys.readouterr().err
    assert str(missing) in error and "results store not found" in error and "fix:" in error
    assert not missing.exists()
