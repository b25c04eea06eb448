"""``python -m grue_bench.classifiers``: train (or load) the offline classifiers and print test accuracy."""

from __future__ import annotations

import argparse
import logging
import time

from grue_bench.classifiers.offline import (
    COMMONGEN_PLAUSIBILITY,
    DAILY_DIALOG_INTENT,
    IMDB_SENTIMENT,
    evaluate,
)


def main(argv: list[str] | None = None) -> int:
    """Print the offline classifiers' accuracy on ``--split`` beside the majority-class baseline."""
    parser = argparse.ArgumentParser(prog="python -m grue_bench.classifiers", description=__doc__)
    parser.add_argument("--split", default="test", choices=["train", "validation", "test"])
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    specs = (
        ("IMDB sentiment", IMDB_SENTIMENT),
        ("DailyDialog intent", DAILY_DIALOG_INTENT),
        ("CommonGen plausibility", COMMONGEN_PLAUSIBILITY),
    )
    for label, spec in specs:
        start = time.perf_counter()
        result = evaluate(spec, args.split)
        print(
            f"{label} {result.split} accuracy: {result.accuracy:.3f} (n={result.n}; majority class "
            f"{result.majority_accuracy:.3f}; {time.perf_counter() - start:.1f}s incl. training or loading)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
