"""``python -m grue_bench.classifiers``: build (or load) the offline judges and print how well each does
on texts it was never fitted on (docs/METRICS.md holds the same figures; ``python -m
grue_bench.report.validity`` writes it)."""

from __future__ import annotations

import argparse
import logging
import time

from grue_bench.classifiers.measure import (
    ACT_NAMES,
    measure_act_judge,
    measure_plausibility,
    measure_sentiment_judge,
)


def main(argv: list[str] | None = None) -> int:
    """One line per judge and version, then the CommonGen plausibility stand-in."""
    parser = argparse.ArgumentParser(prog="python -m grue_bench.classifiers", description=__doc__)
    parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    for judge in ("imdb_sentiment@2", "imdb_sentiment@1"):
        start = time.perf_counter()
        s = measure_sentiment_judge(judge)
        print(
            f"{judge}: held-out accuracy {s.accuracy:.4f} (n={s.n}), calibration error "
            f"{s.calibration_error:.3f}, mean P(positive) {s.mean_positive:.3f} positive / "
            f"{s.mean_negative:.3f} negative, empty text {s.empty:.3f} "
            f"({time.perf_counter() - start:.1f}s incl. building or loading)"
        )
    for judge in ("daily_dialog_intent@2", "daily_dialog_intent@1"):
        start = time.perf_counter()
        a = measure_act_judge(judge)
        f1 = ", ".join(f"{ACT_NAMES[act]} {value:.3f}" for act, value in a.f1.items())
        print(
            f"{judge}: held-out accuracy {a.accuracy:.4f} (n={a.n}; majority act {a.majority:.3f}), F1 {f1}, "
            f"empty reply's act {a.empty_act} ({time.perf_counter() - start:.1f}s incl. building or loading)"
        )
    p = measure_plausibility()
    print(
        f"{p.judge}: test accuracy {p.accuracy:.4f} (n={p.n}; half are shuffles), calibration error "
        f"{p.calibration_error:.3f}, mean P(plausible) {p.mean_positive:.3f} references / "
        f"{p.mean_negative:.3f} shuffles"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
