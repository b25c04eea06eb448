"""Intervals over seeds and test samples: hand-computed values, verdict words, and calibration by
simulation (false verdicts, coverage) over a grid of seed-to-sample variance ratios."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from grue_bench.report import calibration
from grue_bench.report.intervals import (
    components,
    detectable_difference,
    difference_interval,
    mean_interval,
    needed,
    seed_difference_interval,
    seed_mean_interval,
    verdict,
)

X = np.array([[1.0, 2.0, 4.0], [2.0, 2.0, 5.0]])
"""2 seeds × 3 samples: seed means 7/3, 3; sample means 1.5, 2, 4.5; grand mean 8/3."""


def test_mean_interval_is_the_anova_variance_with_satterthwaite_df():
    grand = 8 / 3
    ms_seed = 3 * ((7 / 3 - grand) ** 2 + (3 - grand) ** 2)
    ms_sample = 2 * ((1.5 - grand) ** 2 + (2 - grand) ** 2 + (4.5 - grand) ** 2) / 2
    resid = X - X.mean(1, keepdims=True) - X.mean(0, keepdims=True) + grand
    ms_resid = (resid**2).sum() / 2
    variance = (ms_seed + ms_sample - ms_resid) / 6
    parts = [(ms_seed / 6, 1), (ms_sample / 6, 2), (-ms_resid / 6, 2)]
    df = variance**2 / sum(v**2 / d for v, d in parts)
    half = stats.t.ppf(0.975, df) * math.sqrt(variance)
    seeds_only_half = stats.t.ppf(0.975, 1) * math.sqrt(ms_seed / 6)
    got = mean_interval(X)
    assert half < seeds_only_half  # here Student's t over the 2 seed means is the wider: it is taken
    assert (got.low, got.high) == pytest.approx((grand - seeds_only_half, grand + seeds_only_half))
    y = np.array([[1.0, 2.0, 4.0], [1.1, 2.0, 4.2], [0.9, 2.1, 3.9]])  # seeds alike: the ANOVA is wider
    sq_grand = y.mean()
    ms_seed = 3 * ((y.mean(1) - sq_grand) ** 2).sum() / 2
    ms_sample = 3 * ((y.mean(0) - sq_grand) ** 2).sum() / 2
    r = y - y.mean(1, keepdims=True) - y.mean(0, keepdims=True) + sq_grand
    ms_resid = (r**2).sum() / 4
    variance = (ms_seed + ms_sample - ms_resid) / 9
    df = variance**2 / ((ms_seed / 9) ** 2 / 2 + (ms_sample / 9) ** 2 / 2 + (ms_resid / 9) ** 2 / 4)
    half = stats.t.ppf(0.975, df) * math.sqrt(variance)
    got = mean_interval(y)
    assert got.estimate == pytest.approx(sq_grand)
    assert got.se == pytest.approx(math.sqrt(variance))
    assert got.df == pytest.approx(df)
    assert (got.low, got.high) == pytest.approx((sq_grand - half, sq_grand + half))
    assert (got.seeds, got.samples, got.method) == (3, 3, "seeds×samples")


def test_mean_interval_is_never_narrower_than_students_t_over_seed_means():
    # Seeds far apart, samples alike: the seed-means interval is the wider, and is taken.
    x = np.array([[0.0, 0.1, 0.0, 0.1], [1.0, 1.1, 1.0, 1.1], [2.0, 2.1, 2.0, 2.1]])
    means = x.mean(1)
    classic = stats.t.interval(0.95, 2, loc=means.mean(), scale=means.std(ddof=1) / math.sqrt(3))
    got = mean_interval(x)
    assert (got.low, got.high) == pytest.approx(classic)


def test_a_deterministic_row_is_a_t_interval_over_samples():
    row = np.array([[0.0, 1.0, 1.0, 0.0, 1.0]])
    expected = stats.t.interval(0.95, 4, loc=0.6, scale=row.std(ddof=1) / math.sqrt(5))
    got = mean_interval(row, deterministic=True)
    assert (got.low, got.high) == pytest.approx(expected)
    assert got.method == "samples only"


def test_one_seed_has_no_interval_and_no_verdict():
    got = difference_interval(X[:1], X)
    assert not got.known
    assert verdict(got, higher_is_better=True) is None
    assert not mean_interval(X[:1]).known


def test_pairing_removes_what_the_rows_share():
    # Seeds alike, samples very unlike, B = A - 0.01 on every sample: the prompts' spread cancels.
    rng = np.random.default_rng(0)
    a = np.repeat(rng.normal(size=(1, 50)) * 5, 3, axis=0)
    assert mean_interval(a).high - mean_interval(a).low > 1.0
    got = difference_interval(a + 0.01, a.copy())
    assert got.estimate == pytest.approx(0.01)
    assert got.high - got.low < 1e-9
    assert verdict(got, higher_is_better=True) == "better"
    assert verdict(got, higher_is_better=False) == "worse"


def test_difference_with_a_floor_has_no_seed_terms_for_the_floor():
    rng = np.random.default_rng(1)
    a = rng.normal(0.5, 0.1, size=(3, 40))
    floor = np.full((1, 40), 0.5)
    got = difference_interval(a, floor, b_deterministic=True)
    # B is constant, so the paired difference is A's mean against a known number.
    expected = mean_interval(a)
    assert got.estimate == pytest.approx(expected.estimate - 0.5)
    assert got.high - got.low == pytest.approx(expected.high - expected.low)


def test_identical_rows_are_a_tie():
    got = difference_interval(X, X)
    assert got.estimate == 0.0
    assert verdict(got, higher_is_better=True) == "tie"


def test_seed_only_intervals_are_students_and_welchs_t():
    a, b = np.array([0.50, 0.52, 0.51]), np.array([0.40, 0.45, 0.41, 0.43])
    got = seed_mean_interval(a)
    assert (got.low, got.high) == pytest.approx(stats.t.interval(0.95, 2, loc=a.mean(), scale=stats.sem(a)))
    assert got.method == "seeds only"
    welch = stats.ttest_ind(a, b, equal_var=False).confidence_interval(0.95)
    got = seed_difference_interval(a, b)
    assert (got.low, got.high) == pytest.approx((welch.low, welch.high))
    assert verdict(got, higher_is_better=True) == "better"


def test_power_projection_finds_the_smallest_sufficient_counts():
    rng = np.random.default_rng(2)
    prompts = rng.normal(size=(1, 200))
    a = prompts + rng.normal(0, 0.01, size=(3, 1)) + rng.normal(0, 0.5, size=(3, 200))
    b = prompts + rng.normal(0, 0.01, size=(3, 1)) + rng.normal(0, 0.5, size=(3, 200))
    parts = components(a, b)
    gap = 0.1
    seeds, samples = needed(parts, gap, seeds=3, samples=200)
    z = stats.norm.ppf(0.975) + stats.norm.ppf(0.8)
    assert seeds is not None and samples is not None
    assert parts.se(seeds, 200) * z <= gap < parts.se(seeds - 1, 200) * z or seeds == 2
    assert parts.se(3, samples) * z <= gap < parts.se(3, samples - 1) * z or samples == 2
    assert detectable_difference(difference_interval(a, b)) > 0


@pytest.fixture(scope="module")
def simulated() -> list[calibration.Rates]:
    rates = calibration.grid(seed_counts=(3, 5), simulations=4000)
    for r in rates:  # shown with -s and in benchmarks/README.md (python benchmarks/bench_intervals.py)
        s = r.scenario
        print(
            f"seeds={s.seeds} seed_ratio={s.seed_ratio} prompt_share={s.prompt_share}: false verdicts "
            f"{r.false_verdicts:.3f}, coverage {r.coverage:.3f}, power at 1 seed sd {r.power:.3f}"
        )
    return rates


def test_the_same_model_resampled_is_rarely_called_better_or_worse(simulated):
    # 4,000 simulations per cell: a rate's 95% margin is about ±0.7 points.
    assert len(simulated) == 2 * len(calibration.SEED_RATIOS) * len(calibration.PROMPT_SHARES)
    worst = max(simulated, key=lambda r: r.false_verdicts)
    assert worst.false_verdicts <= 0.06, worst


def test_the_means_interval_covers_at_least_92_percent(simulated):
    worst = min(simulated, key=lambda r: r.coverage)
    assert worst.coverage >= 0.92, worst
    # and it is not trivially wide: a true difference of 2 seed sds is found often with 5 seeds
    assert calibration.simulate(calibration.Scenario(5, 1.0, 0.5), 2000).power > 0.2
