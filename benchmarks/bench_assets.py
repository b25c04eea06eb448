"""Seconds to get the offline classifiers and to refuse hub models offline (run by hand).

    python benchmarks/bench_assets.py

In a fresh temporary GRUE_CACHE, each offline classifier is trained (the first use) and then
loaded from the cache (every later use); with HF_HUB_OFFLINE=1, a hub classifier and BERTScore's
roberta-large backbone are refused with a MissingAssetError. The tests check that the cache is
used and that no network is tried offline; these are the times. Prints one JSON line.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Callable


def seconds(action: Callable[[], object]) -> float:
    started = time.perf_counter()
    action()
    return round(time.perf_counter() - started, 3)


def refusal_seconds(action: Callable[[], object]) -> float:
    """Seconds until ``action`` raises the MissingAssetError it must raise offline."""
    from grue_bench.errors import MissingAssetError

    started = time.perf_counter()
    try:
        action()
    except MissingAssetError:
        return round(time.perf_counter() - started, 3)
    raise SystemExit(f"{action} did not refuse the hub model offline")


def main() -> None:
    os.environ["HF_HUB_OFFLINE"] = "1"
    with tempfile.TemporaryDirectory(prefix="grue_cache_") as cache:
        os.environ["GRUE_CACHE"] = cache
        from grue_bench.classifiers.offline import DAILY_DIALOG_INTENT, IMDB_SENTIMENT, offline_classifier
        from grue_bench.metrics.bertscore import BertScore
        from grue_bench.metrics.classifiers import SentimentScore

        figures = {}
        for name, spec in (("imdb_sentiment", IMDB_SENTIMENT), ("daily_dialog_intent", DAILY_DIALOG_INTENT)):
            figures[f"{name}_train_s"] = seconds(lambda spec=spec: offline_classifier(spec))
            figures[f"{name}_cached_load_s"] = seconds(lambda spec=spec: offline_classifier(spec))
        figures["hub_classifier_offline_refusal_s"] = refusal_seconds(
            lambda: SentimentScore(model_name="lvwerra/distilbert-imdb")
        )
        figures["bertscore_roberta_large_offline_refusal_s"] = refusal_seconds(
            lambda: BertScore(model_type="roberta-large")
        )
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
