"""Leaderboard statistics: hand-worked bootstrap, probability of improvement and IQM examples; the
schema's validation; and the report's numbers checked against the store, recomputed here."""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import need_module

from grue_bench import plugins
from grue_bench.errors import GrueError
from grue_bench.report import aggregate, calibration, evidence
from grue_bench.report.aggregate import (
    Headline,
    bootstrap_mean_ci,
    iqm,
    probability_of_improvement,
    stratified_iqm_ci,
)
from grue_bench.report.evidence import Anchors, ReferenceRow, anchored_scores
from grue_bench.report.intervals import improvement_interval, mean_interval, seed_mean_interval
from grue_bench.report.schema import DEFAULT_SCHEMA, load_schema
from grue_bench.store import Store
from grue_bench.tasks import load_task

from .conftest import ALGS, N_ITERS, PROMPTS, TASKS, reference_rows, write_run

# --- bootstrap intervals ------------------------------------------------------------------------


def test_bootstrap_of_constant_values_is_that_value():
    assert bootstrap_mean_ci([2.0, 2.0, 2.0]) == (2.0, 2.0)


def test_bootstrap_of_two_values_spans_both():
    # Resampling [0, 1] gives means 0, 0.5, 1 with probabilities 1/4, 1/2, 1/4: both 2.5% tails
    # fall on the extremes.
    assert bootstrap_mean_ci([0.0, 1.0]) == (0.0, 1.0)


def test_bootstrap_upper_tail_on_a_rare_extreme():
    # [0, 0, 1]: P(mean = 0) = 8/27 > 2.5%, P(mean = 1) = 1/27 ≈ 3.7% > 2.5%.
    assert bootstrap_mean_ci([0.0, 0.0, 1.0]) == (0.0, 1.0)
    # [0, 0, 0, 1]: P(mean = 1) = 1/256 < 2.5% but P(mean >= 0.75) = 13/256 ≈ 5.1%: upper end 0.75.
    assert bootstrap_mean_ci([0.0, 0.0, 0.0, 1.0]) == (0.0, 0.75)


def test_one_seed_has_no_interval():
    low, high = bootstrap_mean_ci([0.7])
    assert np.isnan(low) and np.isnan(high)


def test_bootstrap_is_reproducible_and_near_the_normal_interval():
    values = np.random.default_rng(1).normal(10.0, 2.0, size=40)
    first = bootstrap_mean_ci(values)
    assert bootstrap_mean_ci(values) == first
    assert bootstrap_mean_ci(values, random_state=1) != first
    half_width = 1.96 * values.std(ddof=1) / np.sqrt(values.size)
    assert first[0] == pytest.approx(values.mean() - half_width, abs=0.1 * half_width)
    assert first[1] == pytest.approx(values.mean() + half_width, abs=0.1 * half_width)


# --- probability of improvement -----------------------------------------------------------------


def test_probability_of_improvement_by_hand():
    # Pairs of x=[1,2,3] with y=[2,2,2]: 3 losses, 3 ties, 3 wins -> (0 + 1.5 + 3) / 9.
    assert probability_of_improvement([1, 2, 3], [2, 2, 2]) == 0.5
    assert probability_of_improvement([3, 4], [1, 2]) == 1.0
    # x=[1, 3] vs y=[2]: one loss, one win.
    assert probability_of_improvement([1, 3], [2]) == 0.5
    # x=[2, 3, 4] vs y=[1, 3]: (1 + 0) + (1 + 0.5) + (1 + 1) = 4.5 of 6 pairs.
    assert probability_of_improvement([2, 3, 4], [1, 3]) == 0.75


def test_probability_of_improvement_respects_lower_is_better():
    x, y = [30.0, 32.0, 35.0], [31.0, 35.0, 36.0]
    higher = probability_of_improvement(x, y, higher_is_better=True)
    lower = probability_of_improvement(x, y, higher_is_better=False)
    assert lower == pytest.approx(1 - higher)
    assert probability_of_improvement(x, y, False) + probability_of_improvement(y, x, False) == 1.0
    # Pairs: 30<31,35,36 (3 wins); 32<35,36 (2); 35 vs 31 loss, vs 35 tie, vs 36 win (1.5) -> 6.5/9.
    assert lower == pytest.approx(6.5 / 9)


def test_improvement_table_is_per_sample_with_an_interval_else_over_runs():
    ids = ["s1", "s2", "s3"]
    final = pd.DataFrame(
        {
            "run_id": [1, 2, 3, 4, 5],
            "task": ["t"] * 5,
            "alg": ["a", "a", "b", "b", "c"],
            "seed": [0, 1, 0, 1, 0],
            "metric": ["m"] * 5,
            "value": [0.5, 0.6, 0.4, 0.45, 0.0],
            "iteration": [3] * 5,
        }
    )
    values = {1: [0.4, 0.5, 0.6], 2: [0.5, 0.6, 0.7], 3: [0.3, 0.4, 0.5], 4: [0.4, 0.45, 0.5]}
    per_sample = {(run, "m"): pd.Series(dict(zip(ids, v, strict=True))) for run, v in values.items()}
    headlines = {"t": Headline("m", True)}
    table = evidence.improvement_table(evidence.headline_rows(final, per_sample, headlines), headlines)
    row = table[(table["alg_x"] == "a") & (table["alg_y"] == "b")].iloc[0]
    # per sample, over the 4 seed pairs: s1 wins 0.4>0.3, ties 0.4=0.4 (0.5), 0.5>0.3, 0.5>0.4 -> 3.5/4;
    # s2 0.5>0.4, 0.5>0.45, 0.6>0.4, 0.6>0.45 -> 4/4; s3 0.6>0.5, 0.6>0.5, 0.7>0.5, 0.7>0.5 -> 4/4
    assert row.probability == pytest.approx((3.5 + 4 + 4) / 12)
    assert row.method == "seeds×samples" and row.ci_low <= row.probability <= row.ci_high <= 1.0
    lone = table[(table["alg_x"] == "a") & (table["alg_y"] == "c")].iloc[0]
    assert np.isnan(lone.probability) and lone.method == "seeds only"  # c has one seed, no per-sample values
    average = evidence.average_improvement(table)
    assert (
        average[(average["alg_x"] == "a") & (average["alg_y"] == "b")]["probability"].item()
        == row.probability
    )


def test_the_probability_of_improvement_between_one_model_resampled_is_calibrated():
    """P(X > Y) of two rows of one model is 0.5; its interval excludes 0.5 rarely (2,000 draws
    per cell, seeds 3 and 5, seed variance 0-4x the sampling error)."""
    worst = 0.0
    for seeds in (3, 5):
        for ratio in (0.0, 1.0, 4.0):
            scenario = calibration.Scenario(seeds, ratio, 0.8)
            a, b = calibration.draw_rows(scenario, 2000, np.random.default_rng(seeds * 10 + int(ratio)))
            found = [improvement_interval(x, y) for x, y in zip(a, b, strict=True)]
            rate = float(np.mean([not (f.low <= 0.5 <= f.high) for f in found]))
            print(f"P(X > Y) seeds={seeds} seed_ratio={ratio}: interval excludes 0.5 in {rate:.3f}")
            worst = max(worst, rate)
    assert worst <= 0.07


# --- IQM and the overall score ------------------------------------------------------------------


def test_iqm_by_hand():
    assert iqm([1, 2, 3, 4, 5, 6, 7, 8]) == 4.5  # mean of 3, 4, 5, 6
    assert iqm([0, 1, 2, 3, 100]) == 2.0  # floor(5/4) = 1 cut from each end
    assert iqm([5, 1, 3]) == 3.0  # fewer than 4 values: nothing cut
    np.testing.assert_allclose(iqm(np.array([[1, 2, 3, 4], [10, 0, 0, 10]]), axis=1), [2.5, 5.0])


def test_iqm_matches_scipy_trim_mean():
    stats = need_module("scipy.stats")
    rng = np.random.default_rng(3)
    for size in (4, 7, 10, 21):
        values = rng.normal(size=size)
        assert iqm(values) == pytest.approx(stats.trim_mean(values, 0.25))


def test_stratified_interval_by_hand():
    # Every resample of constant strata pools [.2, .2, .8, .8, .8]; IQM cuts one from each end.
    assert stratified_iqm_ci([[0.2, 0.2], [0.8, 0.8, 0.8]]) == (pytest.approx(0.6), pytest.approx(0.6))
    low, high = stratified_iqm_ci([[0.0, 1.0], [0.5, 0.5]])
    # Pooled resamples hold {0,1} counts (0..2) plus two 0.5s; IQM of 4 values = mean of middle two.
    assert (low, high) == (0.25, 0.75)
    assert all(np.isnan(stratified_iqm_ci([[0.1, 0.2], [0.3]])))  # a task with one run


def test_normalization_is_on_fixed_anchors_in_either_direction():
    final = pd.DataFrame(
        {
            "run_id": range(5),
            "task": ["up"] * 2 + ["down"] * 2 + ["out"],
            "alg": ["a", "b"] * 2 + ["a"],
            "seed": 0,
            "metric": ["m"] * 5,
            "value": [0.2, 0.6, 40.0, 10.0, 3.0],
        }
    )
    anchors = {
        "up": Anchors("up", "floor:copy", 0.2, 1.0),
        "down": Anchors("down", "floor:copy", 40.0, 0.0),  # lower is better: 40 -> 0, 0 -> 1
        "out": Anchors("out", "floor:constant", 5.0, 4.0, "its best floor reaches its human ceiling"),
    }
    normalized = anchored_scores(final, {"up": "m", "down": "m", "out": "m"}, anchors)
    assert normalized.set_index("run_id")["normalized"].sort_index().tolist() == pytest.approx(
        [0, 0.5, 0, 0.75]
    )


def test_anchors_leave_out_a_task_whose_floor_reaches_its_ceiling():
    def row(name: str, value: float) -> ReferenceRow:
        return ReferenceRow(name, "", {"m": value})

    rows = [row("floor:empty", 0.5), row("floor:constant", 0.75), row("ceiling:human", 0.51)]
    found = evidence.anchors("imdb", rows, "m", higher_is_better=True)
    assert found.floor_name == "floor:constant" and not found.usable
    assert "floor:constant" in found.excluded and "0.750" in found.excluded
    found = evidence.anchors(
        "ter", [row("floor:empty", 1.0), row("floor:copy", 0.9), row("ceiling:human", 0.3)], "m", False
    )
    assert (found.floor_name, found.floor, found.ceiling, found.usable) == ("floor:copy", 0.9, 0.3, True)


def test_ranks_skip_one_seed_and_share_ties():
    summary = pd.DataFrame(
        {
            "task": ["t"] * 4,
            "alg": ["a", "b", "c", "d"],
            "metric": ["m"] * 4,
            "mean": [0.5, 0.9, 0.5, 1.0],
            "n_seeds": [3, 3, 3, 1],
        }
    )
    ranks = aggregate.ranks(summary, {"t": Headline("m", True)})
    assert dict(zip(ranks["alg"], ranks["rank"], strict=True)) == {"b": 1, "a": 2, "c": 2}
    lower = aggregate.ranks(summary, {"t": Headline("m", False)})
    assert dict(zip(lower["alg"], lower["rank"], strict=True)) == {"a": 1, "c": 1, "b": 3}


# --- the schema ---------------------------------------------------------------------------------


def test_every_grue_task_heads_on_a_key_its_metric_declares_with_a_direction():
    schema = load_schema()
    assert DEFAULT_SCHEMA.parent.name == "report" and DEFAULT_SCHEMA.parent.parent.name == "grue_bench"
    assert schema.metrics == {}  # the packaged file overrides nothing: the metrics declare their keys
    headlines = schema.headlines({task: plugins.TASKS.get(task) for task in plugins.grue_tasks()})
    assert {task: head.metric for task, head in headlines.items()} == {
        "imdb": "semantic/learned_automodel_metric",
        "commongen": "lexical/cider",
        "cnn_dailymail": "lexical/rouge_rougeL",
        "totto": "table_to_text/parent_f1",
        "narrative_qa": "lexical/rouge_l_max",
        "iwslt2017_en_de": "lexical/sacrebleu",
        "daily_dialog": "intent/accuracy",
    }
    assert all(head.higher_is_better for head in headlines.values())
    assert schema.metric("lexical/ter").higher_is_better is False
    assert schema.metric("lexical/rouge_rougeL").display == "ROUGE-L"
    assert schema.metric("fluency_metrics/perplexity").naturalness
    assert schema.metric("diversity_metrics/mean_pred_length").higher_is_better is None
    assert schema.metric("not/declared").higher_is_better is None


def test_a_synthetic_tasks_headline_is_its_reward_metric_keyed_by_the_reward():
    spec = plugins.TASKS.get("increasing_numbers")
    assert spec.headline.metric == "reward" and spec.headline.output is None
    assert plugins.headline_key(spec) == "reward/increasing_numbers"
    assert "reward/sentences_with_dates" in plugins.declared_outputs()


def _task_with_headline(tmp_path: Path, headline: str) -> Path:
    """The increasing_numbers task copied with another headline (and the metric rouge added)."""
    folder, source = tmp_path / "increasing_numbers", plugins.TASKS.get("increasing_numbers").directory
    shutil.copytree(source, folder)
    shutil.copytree(source.parent / "_shared", tmp_path / "_shared")  # what task.yaml includes
    text = (folder / "task.yaml").read_text()
    text = text.replace("  - {id: diversity}", "  - {id: diversity}\n  - {id: rouge}")
    (folder / "task.yaml").write_text(re.sub(r"^headline:.*$", f"headline: {headline}", text, flags=re.M))
    return folder


@pytest.mark.parametrize(
    ("headline", "where", "message"),
    [
        ("{metric: meteor}", "headline.metric", "headline metric 'meteor' is not one of the task's metrics"),
        ("{metric: rouge}", "headline.output", "headline metric 'rouge' reports 4 keys: say which heads"),
        (
            "{metric: rouge, output: lexical/rouge}",
            "headline.output",
            "headline metric 'rouge' does not report 'lexical/rouge'",
        ),
    ],
)
def test_a_headline_naming_no_metric_or_no_single_key_is_an_error_naming_the_task_file(
    tmp_path: Path, headline: str, where: str, message: str
):
    folder = _task_with_headline(tmp_path, headline)
    with pytest.raises(GrueError) as caught:
        plugins.headline_key(load_task(folder))
    text = str(caught.value)
    assert f"{folder / 'task.yaml'}: {where}: {message}" in text
    if "output" in where:
        assert "set headline.output to one of lexical/rouge_rouge1, lexical/rouge_rouge2" in text


def test_schema_problems_are_collected_and_name_file_and_key(tmp_path: Path):
    path = tmp_path / "board.yaml"
    path.write_text(
        "version: 1\nmetrics:\n  a/x: {display: X, colour: red}\n  a/y: {higher_is_better: false}\n"
    )
    with pytest.raises(GrueError) as caught:
        load_schema(path)
    text = str(caught.value)
    assert str(path) in text
    assert "metrics.a/x.colour: unknown key" in text
    assert "metrics.a/y.display: required key is missing" in text


def test_a_schema_file_overrides_a_metrics_declaration_and_cannot_unrank_a_headline(tmp_path: Path):
    path = tmp_path / "board.yaml"
    path.write_text("version: 1\nmetrics:\n  lexical/cider: {display: CIDEr-D, higher_is_better: null}\n")
    schema = load_schema(path)
    assert schema.metric("lexical/cider").display == "CIDEr-D"
    assert schema.metric("lexical/meteor").display == "METEOR"  # not overridden: as declared
    with pytest.raises(GrueError) as caught:
        schema.headlines({"commongen": plugins.TASKS.get("commongen")})
    assert (
        f"{path}: metrics.lexical/cider: metric 'lexical/cider', the headline of task 'commongen', "
        "has no direction" in str(caught.value)
    )


# --- the report against the store ---------------------------------------------------------------


def raw_final_scores(store_path: Path) -> pd.DataFrame:
    """Final test scores straight from SQLite: finished runs, each at its highest test iteration."""
    with sqlite3.connect(store_path) as conn:
        frame = pd.read_sql_query(
            """SELECT r.task, r.alg, r.seed, m.name AS metric, m.value
               FROM metrics m JOIN runs r ON r.id = m.run_id
               WHERE r.status IN ('finished', 'submitted') AND m.split = 'test'
                 AND m.iteration = (SELECT max(iteration) FROM metrics
                                    WHERE run_id = m.run_id AND split = 'test')""",
            conn,
        )
    conn.close()
    return frame


def per_sample_headline(store_path: Path, task: str, alg: str) -> np.ndarray:
    """Seeds × samples of the headline's per-sample scores at each run's final iteration."""
    with sqlite3.connect(store_path) as conn:
        frame = pd.read_sql_query(
            """SELECT r.seed, s.sample_id, s.value FROM sample_scores s JOIN runs r ON r.id = s.run_id
               WHERE r.task = ? AND r.alg = ? AND r.status = 'finished'
                 AND s.split = 'test' AND s.name = ?""",
            conn,
            params=[task, alg, TASKS[task]["headline"]],
        )
    conn.close()
    return frame.pivot(index="seed", columns="sample_id", values="value").sort_index().to_numpy()


@pytest.fixture
def report_dir(three_seed_report: Path) -> Path:
    return three_seed_report


def test_final_scores_take_the_last_iteration_of_finished_runs(three_seed_store: Path, report_dir: Path):
    final = pd.read_csv(report_dir / "data" / "final_scores.csv")
    assert set(final["iteration"]) == {N_ITERS}  # not the before-training evaluation at -1
    assert len(final[["task", "alg", "seed"]].drop_duplicates()) == len(TASKS) * len(ALGS) * 3
    assert 99.0 not in final["value"].tolist()  # the running run's row is not counted
    assert (final["display"][final["metric"] == "lexical/cider"] == "CIDEr").all()


def test_summary_means_and_intervals_match_the_store(three_seed_store: Path, report_dir: Path):
    raw = raw_final_scores(three_seed_store)
    summary = pd.read_csv(report_dir / "data" / "summary.csv")
    trained = summary[~summary["alg"].str.contains(":")]
    assert len(trained) == raw.groupby(["task", "alg", "metric"]).ngroups
    assert set(summary["profile"]) == {"tiny"}
    for (task, alg, metric), group in raw.groupby(["task", "alg", "metric"]):
        row = trained[(trained["task"] == task) & (trained["alg"] == alg) & (trained["metric"] == metric)]
        assert len(row) == 1
        values = group["value"].to_numpy()
        if metric == TASKS[task]["headline"]:  # per-sample scores: over seeds and samples
            expected = mean_interval(per_sample_headline(three_seed_store, task, alg))
            assert (row["method"].item(), row["n_samples"].item()) == ("seeds×samples", len(PROMPTS))
        else:
            expected = seed_mean_interval(values)
            assert row["method"].item() == "seeds only"
        assert row["mean"].item() == pytest.approx(values.mean(), rel=1e-12)
        assert row["ci_low"].item() == pytest.approx(expected.low, rel=1e-9)
        assert row["ci_high"].item() == pytest.approx(expected.high, rel=1e-9)
        assert row["n_seeds"].item() == 3
    floors = summary[summary["alg"] == "floor:copy"]
    assert set(floors["task"]) == set(TASKS) and (floors["method"] == "samples only").all()


def test_leaderboard_improvement_and_overall_match_the_store(three_seed_store: Path, report_dir: Path):
    raw = raw_final_scores(three_seed_store)
    headline = {task: spec["headline"] for task, spec in TASKS.items()}
    scores = {
        (task, alg): group["value"].to_numpy()
        for (task, alg), group in raw[raw["metric"] == raw["task"].map(headline)].groupby(["task", "alg"])
    }
    board = pd.read_csv(report_dir / "data" / "leaderboard-tiny.csv")
    for (task, alg), values in scores.items():
        row = board[(board["task"] == task) & (board["alg"] == alg)]
        assert row["metric"].item() == headline[task]
        assert row["mean"].item() == pytest.approx(values.mean())
        better = sum(scores[(task, other)].mean() > values.mean() for other in ALGS if other != alg)
        assert row["rank"].item() == better + 1
    improvement = pd.read_csv(report_dir / "data" / "improvement.csv")
    for row in improvement.itertuples():
        x = per_sample_headline(three_seed_store, row.task, row.alg_x)
        y = per_sample_headline(three_seed_store, row.task, row.alg_y)
        wins = (x[:, None, :] > y[None, :, :]) + 0.5 * (x[:, None, :] == y[None, :, :])
        assert row.probability == pytest.approx(wins.mean())
    overall = pd.read_csv(report_dir / "data" / "overall-tiny.csv").set_index("alg")
    references = reference_rows()
    for alg in ALGS:
        pooled = []
        for task in TASKS:
            by_name = {r.name: r.corpus[headline[task]] for r in references[task]}
            floor, ceiling = by_name["floor:copy"], by_name["ceiling:human"]  # copy is the best floor
            pooled += list((scores[(task, alg)] - floor) / (ceiling - floor))
        pooled.sort()  # 6 runs: IQM drops the lowest and the highest
        assert overall.loc[alg, "iqm"] == pytest.approx(np.mean(pooled[1:-1]))
        assert overall.loc[alg, "ci_low"] <= overall.loc[alg, "iqm"] <= overall.loc[alg, "ci_high"]
        assert overall.loc[alg, "n_tasks"] == 2 and overall.loc[alg, "n_runs"] == 6


def test_adding_a_row_leaves_every_other_rows_overall_score_as_it_was(three_seed_store: Path, tmp_path: Path):
    from grue_bench.report import build_report

    store = tmp_path / "grue.db"
    shutil.copy(three_seed_store, store)
    before, after = tmp_path / "before", tmp_path / "after"
    build_report(store, before, references=reference_rows())
    rng = np.random.default_rng(11)
    with Store(store) as opened, pytest.MonkeyPatch.context() as patch:
        patch.setitem(ALGS, "new-alg", 0.2)  # better than every other row
        for task in TASKS:
            for seed in range(3):
                write_run(opened, rng, task, "new-alg", seed)
    build_report(store, after, references=reference_rows())
    old = pd.read_csv(before / "data" / "overall-tiny.csv").set_index("alg")
    new = pd.read_csv(after / "data" / "overall-tiny.csv").set_index("alg")
    assert "new-alg" in new.index and "new-alg" not in old.index
    pd.testing.assert_frame_equal(new.loc[old.index], old)


def test_human_ratings_are_aggregated(report_dir: Path):
    ratings = json.loads((report_dir / "data" / "human_ratings.json").read_text())
    ppo = next(r for r in ratings if r["system"] == "ppo" and r["axis"] == "coherence")
    # Ratings 3.5 + {0, 1, -1} on two samples.
    assert ppo["mean"] == pytest.approx(3.5)
    assert ppo["n_ratings"] == 6 and ppo["n_workers"] == 3


def test_store_generations_reads_the_last_iteration_by_default(tmp_path: Path):
    with Store(tmp_path / "grue.db") as store:
        run = store.start_run(
            task="imdb",
            task_version=1,
            alg="ppo",
            seed=0,
            profile="tiny",
            model=None,
            config={},
            config_hash="h",
        )
        row = {"sample_id": "1", "prompt": "p", "text": "early", "references": ["r"]}
        store.add_generations(run.id, 2, "test", [row])
        store.add_generations(
            run.id, 5, "test", [{**row, "text": "late"}, {**row, "sample_id": "0", "text": "late"}]
        )
        assert [g["text"] for g in store.generations(run.id, "test")] == ["late", "late"]
        assert [g["sample_id"] for g in store.generations(run.id, "test")] == ["0", "1"]
        assert store.generations(run.id, "test", 2) == [
            {"sample_id": "1", "prompt": "p", "text": "early", "references": ["r"]}
        ]
        assert store.generations(run.id, "validation") == []


def test_sample_ids_sort_by_the_numbers_in_them():
    from grue_bench.report.collect import natural_key

    ids = ["test-10", "test-2", "10", "2", "b", "a1", "test-1"]
    assert sorted(ids, key=natural_key) == ["2", "10", "a1", "b", "test-1", "test-2", "test-10"]
