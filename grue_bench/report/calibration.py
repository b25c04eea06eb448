"""How well the intervals of ``grue_bench.report.intervals`` keep their promise, by simulation.

Per-sample scores are drawn as ``x[s, i] = μ + a_s + b_i + e_si``: a seed effect ``a_s`` (σ_seed),
a test-sample effect ``b_i`` (how hard prompt i is: the same for every seed and, for one model,
for every row) and a residual ``e_si``. The per-sample variance σ²_b + σ²_e is 1, split by
``prompt_share``; ``seed_ratio`` is σ_seed over the sampling error of one seed's mean (1/√N), from 0
(seeds alike) to several times it. Two rows that are the same model re-sampled share ``b`` and
draw their own ``a`` and ``e``.

Measured per scenario: how often such a pair is called ``better``/``worse`` (the false verdict
rate, at most 5% + noise when calibrated), how often the mean's interval covers μ, and how often a
true difference of one seed standard deviation (the spread of seed means, √(σ²_seed + σ²_e/N))
is found. ``python benchmarks/bench_intervals.py`` prints the grid; the tests assert it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from grue_bench.report.intervals import difference_bounds, mean_bounds

SEED_RATIOS = (0.0, 0.5, 1.0, 2.0, 4.0)
PROMPT_SHARES = (0.2, 0.8)


@dataclass(frozen=True)
class Scenario:
    """One cell of the simulation grid."""

    seeds: int
    seed_ratio: float
    prompt_share: float
    samples: int = 200

    @property
    def seed_sd(self) -> float:
        return self.seed_ratio / np.sqrt(self.samples)

    @property
    def spread_of_seed_means(self) -> float:
        """The standard deviation of one seed's mean: what 'one seed standard deviation' means."""
        return float(np.sqrt(self.seed_sd**2 + (1 - self.prompt_share) / self.samples))


@dataclass(frozen=True)
class Rates:
    """Observed rates of one scenario over ``simulations`` draws."""

    scenario: Scenario
    simulations: int
    false_verdicts: float
    coverage: float
    power: float


def draw_rows(scenario: Scenario, simulations: int, rng: np.random.Generator, shift: float = 0.0) -> tuple:
    """Two rows of the same model (B shifted by ``shift``): arrays (simulations, seeds, samples)."""
    s, n = scenario.seeds, scenario.samples
    prompts = rng.normal(0.0, np.sqrt(scenario.prompt_share), size=(simulations, 1, n))

    def row() -> np.ndarray:
        seeds = rng.normal(0.0, scenario.seed_sd, size=(simulations, s, 1))
        resid = rng.normal(0.0, np.sqrt(1 - scenario.prompt_share), size=(simulations, s, n))
        return prompts + seeds + resid

    return row(), row() + shift


def simulate(scenario: Scenario, simulations: int = 4000, random_state: int = 0) -> Rates:
    """The false verdict rate, the mean's coverage and the power at one seed standard deviation."""
    rng = np.random.default_rng(random_state)
    a, b = draw_rows(scenario, simulations, rng)
    _, (low, high, _, _) = difference_bounds(a, b)
    false_verdicts = float(np.mean((low > 0) | (high < 0)))
    _, (mean_low, mean_high, _, _) = mean_bounds(a)
    coverage = float(np.mean((mean_low <= 0) & (mean_high >= 0)))
    a, b = draw_rows(scenario, simulations, rng, shift=scenario.spread_of_seed_means)
    _, (low, high, _, _) = difference_bounds(b, a)
    power = float(np.mean(low > 0))
    return Rates(scenario, simulations, false_verdicts, coverage, power)


def grid(seed_counts: tuple[int, ...] = (3, 5), simulations: int = 4000) -> list[Rates]:
    """Every scenario of the grid, each with its own random stream."""
    scenarios = [
        Scenario(seeds, ratio, share)
        for seeds in seed_counts
        for ratio in SEED_RATIOS
        for share in PROMPT_SHARES
    ]
    return [simulate(scenario, simulations, random_state=i) for i, scenario in enumerate(scenarios)]
