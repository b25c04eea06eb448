"""Seconds to get the offline judges, to score with them, and to refuse hub models offline (run by hand).

    python benchmarks/bench_assets.py

In a fresh temporary GRUE_CACHE, each offline judge (both versions) is built (the first use) and then
loaded from the cache (every later use); the sentiment metric scores 1,000 held-out IMDB reviews with
the default judge; with HF_HUB_OFFLINE=1, a hub classifier and BERTScore's roberta-large backbone are
refused with a MissingAssetError. The tests check that the cache is used and that no network is tried
offline; these are the times. Prints one JSON line.
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
        from grue_bench.classifiers import offline
        from grue_bench.classifiers.datasets import imdb_reviews
        from grue_bench.classifiers.defaults import intent_classifier, sentiment_classifier
        from grue_bench.metrics.bertscore import BertScore
        from grue_bench.metrics.classifiers import SentimentScore

        def from_disk(get: Callable[[], object]) -> Callable[[], object]:
            """``get`` after forgetting the judges read in this process (a new process's first use)."""

            def action() -> object:
                offline.imdb_sentiment_judge.cache_clear()
                offline.daily_dialog_act_judge.cache_clear()
                return get()

            return action

        figures = {}
        for judge in ("imdb_sentiment@2", "imdb_sentiment@1"):
            get = from_disk(lambda judge=judge: sentiment_classifier(judge=judge))
            figures[f"{judge}_build_s"] = seconds(get)
            figures[f"{judge}_cached_load_s"] = seconds(get)
        for judge in ("daily_dialog_intent@2", "daily_dialog_intent@1"):
            get = from_disk(lambda judge=judge: intent_classifier(judge=judge))
            figures[f"{judge}_build_s"] = seconds(get)
            figures[f"{judge}_cached_load_s"] = seconds(get)
        reviews = imdb_reviews("test").texts[:1000]
        metric = SentimentScore(include_prompt_for_eval=False)
        figures["imdb_sentiment@2_score_1000_reviews_s"] = seconds(
            lambda: metric.compute([""] * len(reviews), reviews, [[""]] * len(reviews))
        )
        figures["hub_classifier_offline_refusal_s"] = refusal_seconds(
            lambda: SentimentScore(model_name="lvwerra/distilbert-imdb")
        )
        figures["bertscore_roberta_large_offline_refusal_s"] = refusal_seconds(
            lambda: BertScore(model_type="roberta-large")
        )
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
