"""Calibration of the leaderboard's intervals by simulation, beside a two-level bootstrap (run by hand).

    python benchmarks/bench_intervals.py [--simulations 4000] [--bootstrap-simulations 1000]

Prints one JSON line per scenario of ``grue_bench.report.calibration``'s grid (seeds 3 and 5, seed
standard deviation 0-4 times the sampling error, the prompts' share of the per-sample variance
0.2/0.8): the false ``better``/``worse`` rate between two rows of the same model, the coverage of
a mean's 95% interval and the power at a true difference of one seed standard deviation. Then,
for a few scenarios, the coverage of the candidate it was chosen against: a two-level percentile
bootstrap (seeds with replacement, then test samples with replacement, the same indices for
every seed), with the seconds each takes.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from grue_bench.report.calibration import Scenario, draw_rows, grid


def bootstrap_coverage(scenario: Scenario, simulations: int, resamples: int, random_state: int = 0) -> float:
    """How often the two-level percentile bootstrap's 95% interval of the mean covers it."""
    rng = np.random.default_rng(random_state)
    rows, _ = draw_rows(scenario, simulations, rng)
    s, n = scenario.seeds, scenario.samples
    covered = 0
    for x in rows:
        seeds = rng.integers(0, s, size=(resamples, s))
        samples = rng.integers(0, n, size=(resamples, n))
        picked = x[seeds[:, :, None], samples[:, None, :]]
        low, high = np.percentile(picked.mean(axis=(1, 2)), [2.5, 97.5])
        covered += low <= 0 <= high
    return covered / simulations


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--simulations", type=int, default=4000)
    parser.add_argument("--bootstrap-simulations", type=int, default=1000)
    parser.add_argument("--resamples", type=int, default=1000)
    args = parser.parse_args()

    started = time.perf_counter()
    rates = grid(simulations=args.simulations)
    elapsed = time.perf_counter() - started
    for r in rates:
        s = r.scenario
        print(
            json.dumps(
                {
                    "method": "anova-satterthwaite",
                    "seeds": s.seeds,
                    "seed_ratio": s.seed_ratio,
                    "prompt_share": s.prompt_share,
                    "simulations": r.simulations,
                    "false_verdicts": round(r.false_verdicts, 4),
                    "coverage": round(r.coverage, 4),
                    "power_1sd": round(r.power, 4),
                }
            )
        )
    print(json.dumps({"method": "anova-satterthwaite", "grid_s": round(elapsed, 1), "cells": len(rates)}))
    for ratio in (0.0, 1.0, 4.0):
        scenario = Scenario(3, ratio, 0.5)
        started = time.perf_counter()
        coverage = bootstrap_coverage(scenario, args.bootstrap_simulations, args.resamples)
        print(
            json.dumps(
                {
                    "method": "two-level bootstrap",
                    "seeds": 3,
                    "seed_ratio": ratio,
                    "prompt_share": 0.5,
                    "simulations": args.bootstrap_simulations,
                    "resamples": args.resamples,
                    "coverage": round(coverage, 4),
                    "s": round(time.perf_counter() - started, 1),
                }
            )
        )


if __name__ == "__main__":
    main()
