"""The offline classifiers: the judges the sentiment and intent metrics use when no hub model is named
(each by a versioned name, so a store scored by an older one can be re-read with it), and the CommonGen
plausibility stand-in. What each is trained on, with which settings, and how well it does."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path
from typing import Any

from grue_bench.classifiers.bow import FIT_VERSION, FORMAT_VERSION, BowClassifier, BowConfig
from grue_bench.classifiers.cache import Model, file_digest, load_or_build
from grue_bench.classifiers.context_acts import ContextActClassifier, ContextActConfig
from grue_bench.classifiers.datasets import (
    LabelledTexts,
    commongen_plausibility,
    daily_dialog_acts,
    daily_dialog_turns,
    imdb_reviews,
    imdb_sentiment,
    judge_corpus_path,
)
from grue_bench.classifiers.nbsvm import NbSvmClassifier, NbSvmConfig


@dataclass(frozen=True)
class OfflineClassifierSpec:
    """A bag-of-n-grams classifier trained on shipped task rows: its name, its data by split, its settings."""

    name: str
    data: Callable[[str], LabelledTexts]
    config: BowConfig


# Settings chosen by accuracy on the validation splits (grid: max_n 1-2, min_df 1-2, C 1/10/100), never on
# test; ties go to the faster fit. Validation accuracy: IMDB 0.860, DailyDialog acts 0.770, CommonGen
# plausibility 0.847 (C 100: 0.849; majority class 0.5).
IMDB_SENTIMENT = OfflineClassifierSpec("imdb_sentiment", imdb_sentiment, BowConfig(max_n=2, min_df=2, c=1.0))
"""imdb_sentiment@1: the 2,000 reviews of the task's own train split."""
DAILY_DIALOG_INTENT = OfflineClassifierSpec(
    "daily_dialog_intent", daily_dialog_acts, BowConfig(max_n=2, min_df=1, c=100.0)
)
"""daily_dialog_intent@1: the 2,000 replies of the task's own train split, read without their context."""
COMMONGEN_PLAUSIBILITY = OfflineClassifierSpec(
    "commongen_plausibility", commongen_plausibility, BowConfig(max_n=2, min_df=1, c=10.0)
)
"""The offline stand-in for AI2's CommonGen preference model (see ``commongen_plausibility``)."""


def fingerprint(spec: OfflineClassifierSpec) -> dict[str, Any]:
    """Everything the weights of ``spec``'s classifier depend on (its cache key)."""
    data = spec.data("train")
    return {
        "format_version": FORMAT_VERSION,
        "fit_version": FIT_VERSION,
        "config": asdict(spec.config),
        "texts": data.texts,
        "labels": data.labels,
    }


def offline_classifier(spec: OfflineClassifierSpec) -> BowClassifier:
    """The classifier of ``spec``, trained on its train split on first use and cached."""

    def build() -> BowClassifier:
        data = spec.data("train")
        return BowClassifier.train(data.texts, data.labels, spec.config)

    return load_or_build(spec.name, fingerprint(spec), build, BowClassifier.load)


# imdb_sentiment@2. C from {0.5, 1, 2} by validation accuracy; the n-gram range, punctuation, negation
# marks and hashing width likewise (benchmarks/README.md, "The offline judges: how they were chosen").
IMDB_NBSVM = NbSvmConfig(max_n=3, bits=24, alpha=1.0, c=2.0)
# daily_dialog_intent@2. C from {3, 10, 30} by validation accuracy (3: 0.8145, hashed).
DAILY_DIALOG_CONTEXT_ACTS = ContextActConfig(reply_max_n=3, context_max_n=2, bits=21, c=3.0)


def _judge(
    name: str,
    cache_name: str,
    config: Any,
    corpus: Path,
    build: Callable[[], Model],
    load: Callable[[Path], Model],
) -> Model:
    """The judge ``name`` built by ``build`` on first use and cached, keyed by its settings and corpus."""
    key = {"judge": name, "config": asdict(config), "corpus": file_digest(corpus)}
    return load_or_build(cache_name, key, build, load)


@cache
def imdb_sentiment_judge() -> NbSvmClassifier:
    """imdb_sentiment@2: NB-SVM on the 42,025 train reviews of the judge's corpus, calibrated on its
    validation reviews; built on first use (about 20 s) and cached (read once per process)."""
    return _judge(
        "imdb_sentiment@2",
        "imdb_sentiment_nbsvm",
        IMDB_NBSVM,
        judge_corpus_path("imdb", "reviews.jsonl.xz"),
        lambda: NbSvmClassifier.train(imdb_reviews("train"), imdb_reviews("validation"), IMDB_NBSVM),
        NbSvmClassifier.load,
    )


@cache
def daily_dialog_act_judge() -> ContextActClassifier:
    """daily_dialog_intent@2: the previous utterance and the reply, fitted on every act-labelled
    utterance of DailyDialog's official train split; built on first use (about 70 s) and cached (read
    once per process)."""
    return _judge(
        "daily_dialog_intent@2",
        "daily_dialog_context_acts",
        DAILY_DIALOG_CONTEXT_ACTS,
        judge_corpus_path("daily_dialog", "dialogues.jsonl.xz"),
        lambda: ContextActClassifier.train(daily_dialog_turns("train"), DAILY_DIALOG_CONTEXT_ACTS),
        ContextActClassifier.load,
    )


@dataclass(frozen=True)
class Accuracy:
    """A classifier's accuracy on one split, beside always predicting the training majority class."""

    split: str
    n: int
    accuracy: float
    majority_accuracy: float


def evaluate(spec: OfflineClassifierSpec, split: str = "test") -> Accuracy:
    """Accuracy of the offline classifier on ``split`` and of the train-majority baseline."""
    classifier = offline_classifier(spec)
    data = spec.data(split)
    predictions = classifier.predict(data.texts)
    majority = Counter(spec.data("train").labels).most_common(1)[0][0]
    n = len(data.labels)
    return Accuracy(
        split=split,
        n=n,
        accuracy=sum(p == y for p, y in zip(predictions, data.labels, strict=True)) / n,
        majority_accuracy=sum(y == majority for y in data.labels) / n,
    )
