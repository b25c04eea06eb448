"""`grue compare`: the reference baselines beside the paper's numbers, with the ordering verdicts."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import yaml

from grue_bench import plugins
from grue_bench.cli import main
from grue_bench.errors import GrueError
from grue_bench.report.aggregate import bootstrap_mean_ci
from grue_bench.submit.compare import (
    ROWS,
    Estimate,
    TaskRow,
    _verdict,
    compare_profile,
    folder_name,
    load_paper,
)
from grue_bench.tasks import GRUE_TASKS

BASELINES = Path(__file__).resolve().parents[2] / "baselines"


def row(
    name: str, values: list[float], ppl: list[float] | None = None, paper: float | None = None
) -> TaskRow:
    return TaskRow(name, Estimate.of(values), Estimate.of(ppl) if ppl else None, paper, None)


def test_estimate_is_the_mean_with_the_leaderboards_bootstrap_interval():
    values = [0.5, 0.6, 0.7]
    estimate = Estimate.of(values)
    assert estimate.mean == pytest.approx(0.6)
    assert (estimate.low, estimate.high) == bootstrap_mean_ci(values)
    assert estimate.n_seeds == 3
    assert Estimate.of([0.5]).text(2) == "0.50 (1 seed)"


def test_a_step_holds_when_the_means_are_ordered_and_says_whether_the_intervals_overlap():
    start = row("zero-shot", [0.50, 0.51, 0.52], paper=0.489)
    clear = row("supervised", [0.60, 0.61, 0.62], paper=0.539)
    line, holds = _verdict(clear, {"zero-shot": start, "supervised": clear}, higher=True)
    assert holds
    assert line == (
        "supervised > zero-shot: holds (clear: the intervals do not overlap); in the paper: holds"
    )
    close = row("supervised", [0.49, 0.52, 0.53])
    line, holds = _verdict(close, {"zero-shot": start, "supervised": close}, higher=True)
    assert holds and "within the seeds' spread" in line


def test_rl_must_beat_supervised_and_supervised_rl_at_least_equal_rl():
    sup = row("supervised", [0.6, 0.6, 0.6], paper=0.539)
    ppo = row("ppo", [0.55, 0.56, 0.57], paper=0.602)
    both = row("supervised+ppo", [0.55, 0.56, 0.57], paper=0.626)
    rows = {"supervised": sup, "ppo": ppo, "supervised+ppo": both}
    line, holds = _verdict(ppo, rows, higher=True)
    assert not holds
    assert line.startswith("ppo > supervised: does not hold") and "in the paper: holds" in line
    line, holds = _verdict(both, rows, higher=True)  # equal means: >= holds
    assert holds and line.startswith("supervised+ppo >= ppo: holds")
    assert _verdict(row("zero-shot", [0.5, 0.5]), rows, higher=True) is None  # nothing below it


def test_means_equal_at_the_tables_precision_are_equal():
    start = row("zero-shot", [0.0001, 0.0001, 0.0001])
    sup = row("supervised", [0.0003, 0.0004, 0.0002])
    line, holds = _verdict(sup, {"zero-shot": start, "supervised": sup}, higher=True, decimals=3)
    assert not holds
    assert line == "supervised > zero-shot: does not hold (equal at 3 decimals)"


def test_lower_is_better_headlines_flip_the_order():
    start = row("zero-shot", [2.0, 2.1, 2.2])
    sup = row("supervised", [1.0, 1.1, 1.2])
    assert _verdict(sup, {"zero-shot": start, "supervised": sup}, higher=False)[1]


def test_perplexity_more_than_10_percent_from_the_start_fails_the_step():
    start = row("zero-shot", [0.5, 0.5, 0.5], ppl=[100.0, 100.0, 100.0])
    near = row("supervised", [0.6, 0.6, 0.6], ppl=[108.0, 109.0, 110.0])
    far = row("supervised", [0.6, 0.6, 0.6], ppl=[120.0, 121.0, 122.0])
    line, holds = _verdict(near, {"zero-shot": start, "supervised": near}, higher=True)
    assert holds and "perplexity +9% of the start: within 10%" in line
    line, holds = _verdict(far, {"zero-shot": start, "supervised": far}, higher=True)
    assert not holds and "perplexity +21% of the start: outside 10%" in line


def test_the_papers_headline_is_each_tasks_own_headline_metric():
    paper = load_paper()
    assert paper.rows == list(ROWS)
    assert set(paper.tasks) == set(GRUE_TASKS)
    for task, numbers in paper.tasks.items():
        assert numbers.headline.metric == plugins.TASKS.get(task).headline.metric, task
        assert set(numbers.headline.values) == set(ROWS), task
    assert paper.tasks["imdb"].headline.values["zero-shot"] == 0.489
    assert paper.tasks["imdb"].fluency.values["zero-shot"] == 32.171


def test_the_shipped_tiny_baselines_compare_with_their_stated_numbers():
    comparisons = {c.task: c for c in compare_profile(BASELINES, "tiny")}
    assert len(comparisons) == 7
    imdb = comparisons["imdb"]
    stated = yaml.safe_load((BASELINES / "tiny-ppo" / "submission.yaml").read_text())["tasks"]["imdb"][
        "scores"
    ]
    values = [stated[seed]["semantic/learned_automodel_metric"] for seed in (0, 1, 2)]
    ppo = next(r for r in imdb.rows if r.row == "ppo")
    assert ppo.headline.mean == pytest.approx(np.mean(values))
    assert ppo.paper_headline == 0.602
    assert ppo.fluency is not None  # IMDB's runs log perplexity
    assert comparisons["totto"].fluency_metric is None
    assert set(imdb.verdicts) == {r.row for r in imdb.rows} - {"zero-shot"}


def test_a_profile_without_baselines_is_an_error_naming_the_folder(tmp_path: Path):
    with pytest.raises(GrueError) as error:
        compare_profile(tmp_path, "huge")
    assert "no baseline of profile 'huge'" in str(error.value)
    assert folder_name("huge", "supervised+ppo") == "huge-supervised-ppo"


def test_grue_compare_writes_the_markdown(tmp_path: Path):
    out = tmp_path / "COMPARISON.md"
    assert main(["compare", "--profile", "tiny", "--baselines", str(BASELINES), "--out", str(out)]) == 0
    text = out.read_text()
    assert text.startswith("# Reference baselines beside the RL4LMs paper")
    assert "## Profile `tiny`" in text and "| ppo | 0.602 |" in text


def test_the_shipped_comparison_is_what_grue_compare_writes_today(tmp_path: Path):
    shipped = (BASELINES / "COMPARISON.md").read_text()
    profiles = re.search(r"Written by `grue compare --profile ([a-z,]+)`", shipped).group(1)
    out = tmp_path / "COMPARISON.md"
    assert main(["compare", "--profile", profiles, "--baselines", str(BASELINES), "--out", str(out)]) == 0
    assert out.read_text() == shipped, (
        "regenerate it: grue compare --profile ... --out baselines/COMPARISON.md"
    )


def test_grue_compare_refuses_an_out_file_in_a_missing_folder(tmp_path: Path, capsys):
    out = tmp_path / "missing" / "COMPARISON.md"
    assert main(["compare", "--profile", "tiny", "--baselines", str(BASELINES), "--out", str(out)]) == 2
    error = capsys.readouterr().err
    assert "--out" in error and "its folder does not exist" in error and "create the folder first" in error
    assert not out.parent.exists()
