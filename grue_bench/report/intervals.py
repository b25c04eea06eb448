"""Intervals over seeds *and* test samples, and paired differences between rows.

A row (task × algorithm × metric) is a matrix of per-sample scores ``x[s, i]``: one line per seed,
one column per test sample, the same samples (columns) in every line and, for a comparison, in both
rows. Its mean ``m`` has three sources of error: which seeds were drawn (σ²_seed), which test
samples the benchmark happens to hold (σ²_sample: some prompts are easy, some hard) and what is
left (σ²_resid: one seed's luck on one sample). Their mean squares, as in a two-way ANOVA without
replication (``m_s`` the seed means, ``c_i`` the sample means)::

    MS_seed   = N · Σ_s (m_s − m)² / (S − 1)                      E = N·σ²_seed + σ²_resid
    MS_sample = S · Σ_i (c_i − m)² / (N − 1)                      E = S·σ²_sample + σ²_resid
    MS_resid  = Σ_si (x_si − m_s − c_i + m)² / ((S − 1)(N − 1))   E = σ²_resid

give the unbiased variance of the mean, ``Var(m) = σ²_seed/S + σ²_sample/N + σ²_resid/(S·N)``::

    V = (MS_seed + MS_sample − MS_resid) / (S · N)

For the difference of two rows A and B (independent seeds, paired by test sample), with
``D_i = c^A_i − c^B_i`` the per-sample difference of the seed-averaged scores, the prompt effects
common to both rows cancel::

    V = MS^A_seed/(S_A·N) + MS^B_seed/(S_B·N) + var_i(D_i)/N − MS^A_resid/(S_A·N) − MS^B_resid/(S_B·N)

Both are linear in mean squares, so the interval is Student's t with Satterthwaite's degrees of
freedom (Satterthwaite 1946): with 3 seeds and seed variance dominant, about 2 of them (t = 4.3),
with sample variance dominant, about N − 1. ``V`` is never taken below its residual part (its
smallest possible value), and the interval is never narrower than Student's t over the seed means
alone (Welch's for a difference), whose degrees of freedom are exact: Satterthwaite's estimated
ones alone cover only 92-93% with 3 seeds where seed variance dominates. A deterministic row (a
floor: the same output whatever the seed) has one line and no seed terms. A row whose metric has
no per-sample values (perplexity of the references, distinct-n) gets a t interval over its seed
means: seed-only, marked as such.

Why not a bootstrap: a percentile bootstrap over 3 seed values cannot widen for its small number
of seeds and covers far below 95% when seed variance dominates (``benchmarks/bench_intervals.py``
measures both; the tests check this estimator's calibration by simulation).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy import stats

CONFIDENCE = 0.95
POWER = 0.80
MIN_SEEDS = 2
"""Fewer seeds than this (for a row that is not deterministic): no interval."""

Method = Literal["seeds×samples", "seeds only", "samples only"]
Verdict = Literal["better", "worse", "tie"]


@dataclass(frozen=True)
class Interval:
    """An estimate with its 95% t interval (nan bounds when it has none)."""

    estimate: float
    low: float
    high: float
    se: float
    df: float
    seeds: int
    samples: int
    """Test samples the interval accounts for (0: seed-only)."""
    method: Method

    @property
    def known(self) -> bool:
        """Whether there is an interval at all."""
        return not math.isnan(self.low)

    def holds_zero(self) -> bool:
        return self.low <= 0.0 <= self.high


@dataclass(frozen=True)
class Squares:
    """Mean squares of a batch of rows (arrays over the leading batch axis) and their sizes."""

    mean: np.ndarray
    seeds: int
    samples: int
    seed: np.ndarray
    sample: np.ndarray
    resid: np.ndarray
    sample_means: np.ndarray

    @classmethod
    def of(cls, scores: np.ndarray) -> Squares:
        """``scores``: (..., seeds, samples)."""
        x = np.asarray(scores, dtype=float)
        if x.ndim < 2 or x.shape[-1] < 2:
            raise ValueError(f"need a seeds × samples matrix with 2+ samples, got shape {x.shape}")
        n_seeds, n_samples = x.shape[-2:]
        grand = x.mean(axis=(-2, -1))
        seed_means, sample_means = x.mean(axis=-1), x.mean(axis=-2)
        ms_sample = n_seeds * ((sample_means - grand[..., None]) ** 2).sum(axis=-1) / (n_samples - 1)
        if n_seeds == 1:
            zero = np.zeros_like(grand)
            return cls(grand, 1, n_samples, zero, ms_sample, zero, sample_means)
        ms_seed = n_samples * ((seed_means - grand[..., None]) ** 2).sum(axis=-1) / (n_seeds - 1)
        resid = x - seed_means[..., :, None] - sample_means[..., None, :] + grand[..., None, None]
        ms_resid = (resid**2).sum(axis=(-2, -1)) / ((n_seeds - 1) * (n_samples - 1))
        return cls(grand, n_seeds, n_samples, ms_seed, ms_sample, ms_resid, sample_means)

    def seed_terms(self) -> tuple[list[Term], list[Term]]:
        """This row's seed and (negative) residual terms in a variance, and its smallest one."""
        if self.seeds == 1:
            return [], []
        sn = self.seeds * self.samples
        resid_df = (self.seeds - 1) * (self.samples - 1)
        return (
            [(1 / sn, self.seed, self.seeds - 1), (-1 / sn, self.resid, resid_df)],
            [(1 / sn, self.resid, resid_df)],
        )


Term = tuple[float, np.ndarray, float]
"""(coefficient, mean square, its degrees of freedom): one part of a variance estimate."""


Bounds = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
"""(low, high, se, df) of a batch of intervals."""


def t_bounds(
    estimate: np.ndarray, terms: list[Term], lowest: list[Term], confidence: float = CONFIDENCE
) -> Bounds:
    """A t interval whose variance is the sum of ``terms``, never below the sum of ``lowest``;
    degrees of freedom by Satterthwaite (inf for a zero variance)."""
    variance = sum(c * ms for c, ms, _ in terms)
    floor = sum(c * ms for c, ms, _ in lowest)
    spread = sum((c * ms) ** 2 / df for c, ms, df in terms)
    floor_spread = sum((c * ms) ** 2 / df for c, ms, df in lowest)
    use_floor = variance < floor
    variance = np.where(use_floor, floor, variance)
    spread = np.where(use_floor, floor_spread, spread)
    with np.errstate(divide="ignore", invalid="ignore"):
        df = np.where(spread > 0, variance**2 / np.where(spread > 0, spread, 1.0), np.inf)
    se = np.sqrt(np.maximum(variance, 0.0))
    half = np.where(se > 0, stats.t.ppf(0.5 + confidence / 2, df) * se, 0.0)
    return estimate - half, estimate + half, se, df


def wider(estimate: np.ndarray, first: Bounds, second: Bounds) -> Bounds:
    """Per batch element, whichever of two intervals around ``estimate`` is wider."""
    take = (first[1] - first[0]) >= (second[1] - second[0])
    return tuple(np.where(take, x, y) for x, y in zip(first, second, strict=True))  # type: ignore[return-value]


def mean_bounds(
    scores: np.ndarray, deterministic: bool = False, confidence: float = CONFIDENCE
) -> tuple[Squares, Bounds]:
    """Batched ``mean_interval``: the squares and bounds of each row. The interval is never
    narrower than Student's t over the seed means (which leaves the test samples out but has
    exact degrees of freedom): with 3 seeds, Satterthwaite's estimated degrees of freedom alone
    cover 92-93% where seed variance dominates (``grue_bench.report.calibration``)."""
    sq = Squares.of(scores)
    n = sq.samples
    if deterministic or sq.seeds == 1:
        if sq.seeds != 1:
            raise ValueError("a deterministic row has one line")
        terms = [(1 / n, sq.sample, n - 1)]
        return sq, t_bounds(sq.mean, terms, terms, confidence)
    seed_terms, lowest = sq.seed_terms()
    terms = [(1 / (sq.seeds * n), sq.sample, n - 1), *seed_terms]
    seeds_only = [seed_terms[0]]
    both = t_bounds(sq.mean, terms, lowest, confidence)
    return sq, wider(sq.mean, both, t_bounds(sq.mean, seeds_only, seeds_only, confidence))


def difference_bounds(
    a: np.ndarray, b: np.ndarray, confidence: float = CONFIDENCE
) -> tuple[np.ndarray, Bounds]:
    """Batched ``difference_interval``: the estimates and bounds. A one-line row is taken as
    deterministic (no seed terms). Never narrower than Welch's t over the two rows' seed means."""
    sa, sb = Squares.of(a), Squares.of(b)
    if sa.samples != sb.samples:
        raise ValueError(f"the rows cover {sa.samples} and {sb.samples} samples: pair them first")
    n = sa.samples
    paired = sa.sample_means - sb.sample_means
    paired_term: Term = (1 / n, paired.var(axis=-1, ddof=1), n - 1)
    terms, lowest, seeds_only = [paired_term], [], []
    for sq in (sa, sb):
        seed_terms, row_lowest = sq.seed_terms()
        terms += seed_terms
        lowest += row_lowest
        seeds_only += seed_terms[:1]
    estimate = sa.mean - sb.mean
    both = t_bounds(estimate, terms, lowest or [paired_term], confidence)
    if not seeds_only:
        return estimate, both
    return estimate, wider(estimate, both, t_bounds(estimate, seeds_only, seeds_only, confidence))


def _interval(estimate: np.ndarray, bounds: Bounds, seeds: int, samples: int, method: Method) -> Interval:
    low, high, se, df = (float(np.asarray(v).reshape(-1)[0]) for v in bounds)
    return Interval(float(np.asarray(estimate).reshape(-1)[0]), low, high, se, df, seeds, samples, method)


def _no_interval(estimate: float, seeds: int, samples: int, method: Method) -> Interval:
    return Interval(estimate, math.nan, math.nan, math.nan, math.nan, seeds, samples, method)


def mean_interval(
    scores: np.ndarray, *, deterministic: bool = False, confidence: float = CONFIDENCE
) -> Interval:
    """The mean of a seeds × samples matrix with its interval over seeds and test samples.
    ``deterministic``: one line whose output does not depend on a seed (a floor)."""
    x = np.asarray(scores, dtype=float)
    n_seeds, n_samples = x.shape
    if not deterministic and n_seeds < MIN_SEEDS:
        return _no_interval(float(x.mean()), n_seeds, n_samples, "seeds×samples")
    sq, bounds = mean_bounds(x, deterministic, confidence)
    method: Method = "samples only" if deterministic else "seeds×samples"
    return _interval(sq.mean, bounds, n_seeds, n_samples, method)


def difference_interval(
    a: np.ndarray,
    b: np.ndarray,
    *,
    a_deterministic: bool = False,
    b_deterministic: bool = False,
    confidence: float = CONFIDENCE,
) -> Interval:
    """Mean of ``a`` minus mean of ``b``, paired by test sample (the columns must be the same
    samples in the same order), their seeds independent; a deterministic row has one line."""
    xa, xb = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    seeds = min(len(xa), len(xb))
    for x, fixed in ((xa, a_deterministic), (xb, b_deterministic)):
        if fixed and len(x) != 1:
            raise ValueError("a deterministic row has one line")
        if not fixed and len(x) < MIN_SEEDS:
            return _no_interval(float(xa.mean() - xb.mean()), seeds, xa.shape[1], "seeds×samples")
    estimate, bounds = difference_bounds(xa, xb, confidence)
    return _interval(estimate, bounds, seeds, xa.shape[1], "seeds×samples")


def seed_mean_interval(seed_means: np.ndarray, confidence: float = CONFIDENCE) -> Interval:
    """A t interval over seed means alone (a metric without per-sample values): seed-only."""
    values = np.asarray(seed_means, dtype=float)
    mean = float(values.mean())
    if values.size < MIN_SEEDS:
        return _no_interval(mean, int(values.size), 0, "seeds only")
    terms = [(1 / values.size, np.asarray(values.var(ddof=1)), values.size - 1)]
    return _interval(
        mean, t_bounds(np.asarray(mean), terms, terms, confidence), int(values.size), 0, "seeds only"
    )


def seed_difference_interval(a: np.ndarray, b: np.ndarray, confidence: float = CONFIDENCE) -> Interval:
    """Difference of seed means (Welch), seed-only: for metrics without per-sample values."""
    va, vb = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    estimate = float(va.mean() - vb.mean())
    seeds = int(min(va.size, vb.size))
    if seeds < MIN_SEEDS:
        return _no_interval(estimate, seeds, 0, "seeds only")
    terms = [
        (1 / va.size, np.asarray(va.var(ddof=1)), va.size - 1),
        (1 / vb.size, np.asarray(vb.var(ddof=1)), vb.size - 1),
    ]
    return _interval(
        estimate, t_bounds(np.asarray(estimate), terms, terms, confidence), seeds, 0, "seeds only"
    )


def improvement_interval(
    a: np.ndarray, b: np.ndarray, *, higher_is_better: bool = True, confidence: float = CONFIDENCE
) -> Interval:
    """P(A > B) per test sample: for a random test sample and a random seed of each row, the chance
    that A's score is the better one (ties count half): rliable's probability of improvement
    (Agarwal et al. 2021), taken sample by sample instead of on seed means. Its variance sums the
    delete-one-seed jackknife variances over A's and over B's seeds and the test samples' (the
    per-sample probabilities' variance over N); Student's t with Satterthwaite's degrees of freedom,
    clipped to [0, 1]. Both rows need 2+ seeds."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.shape[1] != y.shape[1]:
        raise ValueError(f"the rows cover {x.shape[1]} and {y.shape[1]} samples: pair them first")
    if not higher_is_better:
        x, y = -x, -y
    wins = (x[:, None, :] > y[None, :, :]) + 0.5 * (x[:, None, :] == y[None, :, :])
    estimate = float(wins.mean())
    seeds, samples = min(len(x), len(y)), x.shape[1]
    if seeds < MIN_SEEDS:
        return _no_interval(estimate, seeds, samples, "seeds×samples")
    terms: list[Term] = [(1 / samples, np.asarray(wins.mean(axis=(0, 1)).var(ddof=1)), samples - 1)]
    for axis, count in ((0, len(x)), (1, len(y))):
        per_seed = wins.mean(axis=tuple(i for i in range(3) if i != axis))
        left_out = (estimate * count - per_seed) / (count - 1)
        jackknife = (count - 1) / count * float(((left_out - left_out.mean()) ** 2).sum())
        terms.append((1.0, np.asarray(jackknife), count - 1))
    low, high, se, df = t_bounds(np.asarray(estimate), terms, terms, confidence)
    return Interval(
        estimate,
        max(0.0, float(low)),
        min(1.0, float(high)),
        float(se),
        float(df),
        seeds,
        samples,
        "seeds×samples",
    )


def verdict(difference: Interval, higher_is_better: bool) -> Verdict | None:
    """``better``/``worse`` (in the metric's direction) when the interval of A − B excludes 0,
    ``tie`` when it holds 0; None without an interval."""
    if not difference.known:
        return None
    if difference.holds_zero():
        return "tie"
    return "better" if (difference.low > 0) == higher_is_better else "worse"


def detectable_difference(
    difference: Interval, power: float = POWER, confidence: float = CONFIDENCE
) -> float:
    """The smallest true difference this comparison finds with probability ``power``
    (two-sided test at 1 − ``confidence``): (t_{1−α/2} + t_{power}) · SE."""
    if not difference.known:
        return math.nan
    df = difference.df
    return float((stats.t.ppf(0.5 + confidence / 2, df) + stats.t.ppf(power, df)) * difference.se)


@dataclass(frozen=True)
class Components:
    """Variance components of a paired difference, per seed and per sample, to project its
    standard error to other numbers of seeds (both rows) and test samples."""

    seed_a: float
    seed_b: float
    paired_sample: float
    resid_a: float
    resid_b: float

    def se(self, seeds: int, samples: int) -> float:
        return math.sqrt(
            (self.seed_a + self.seed_b) / seeds
            + self.paired_sample / samples
            + (self.resid_a + self.resid_b) / (seeds * samples)
        )


def components(a: np.ndarray, b: np.ndarray) -> Components:
    """Method-of-moments components of A − B (negative estimates set to 0)."""
    sa, sb = Squares.of(a), Squares.of(b)
    n = sa.samples
    ms_paired = float((sa.sample_means - sb.sample_means).var(ddof=1))
    seed_a = max(0.0, float(sa.seed - sa.resid) / n)
    seed_b = max(0.0, float(sb.seed - sb.resid) / n)
    paired = max(0.0, ms_paired - float(sa.resid) / sa.seeds - float(sb.resid) / sb.seeds)
    return Components(seed_a, seed_b, paired, float(sa.resid), float(sb.resid))


def needed(
    parts: Components,
    gap: float,
    *,
    seeds: int,
    samples: int,
    power: float = POWER,
    confidence: float = CONFIDENCE,
) -> tuple[int | None, int | None]:
    """How many seeds per row (test samples kept) and how many test samples (seeds kept) a paired
    comparison needs to find a true difference of ``gap`` with probability ``power`` (normal
    approximation, closed form); None when no number does (the other factor's error alone is
    already too large)."""
    z = float(stats.norm.ppf(0.5 + confidence / 2) + stats.norm.ppf(power))
    target = (abs(gap) / z) ** 2
    seed_part = parts.seed_a + parts.seed_b
    resid_part = parts.resid_a + parts.resid_b
    room_for_seeds = target - parts.paired_sample / samples
    room_for_samples = target - seed_part / seeds
    need_seeds = (
        max(2, math.ceil((seed_part + resid_part / samples) / room_for_seeds)) if room_for_seeds > 0 else None
    )
    need_samples = (
        max(2, math.ceil((parts.paired_sample + resid_part / seeds) / room_for_samples))
        if room_for_samples > 0
        else None
    )
    return need_seeds, need_samples
