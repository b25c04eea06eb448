"""The offline default classifiers: what they are trained on, with which settings, and how well they do."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from grue_bench.classifiers.bow import BowClassifier, BowConfig
from grue_bench.classifiers.cache import load_or_train
from grue_bench.classifiers.datasets import (
    LabelledTexts,
    commongen_plausibility,
    daily_dialog_acts,
    imdb_sentiment,
)


@dataclass(frozen=True)
class OfflineClassifierSpec:
    """A classifier trained on shipped data: its name, its data by split, and its hyperparameters."""

    name: str
    data: Callable[[str], LabelledTexts]
    config: BowConfig


# Settings chosen by accuracy on the validation splits (grid: max_n 1-2, min_df 1-2, C 1/10/100), never on
# test; ties go to the faster fit. Validation accuracy: IMDB 0.860, DailyDialog acts 0.770, CommonGen
# plausibility 0.847 (C 100: 0.849; majority class 0.5).
IMDB_SENTIMENT = OfflineClassifierSpec("imdb_sentiment", imdb_sentiment, BowConfig(max_n=2, min_df=2, c=1.0))
DAILY_DIALOG_INTENT = OfflineClassifierSpec(
    "daily_dialog_intent", daily_dialog_acts, BowConfig(max_n=2, min_df=1, c=100.0)
)
COMMONGEN_PLAUSIBILITY = OfflineClassifierSpec(
    "commongen_plausibility", commongen_plausibility, BowConfig(max_n=2, min_df=1, c=10.0)
)
"""The offline stand-in for AI2's CommonGen preference model (see ``commongen_plausibility``)."""


def offline_classifier(spec: OfflineClassifierSpec) -> BowClassifier:
    """The classifier of ``spec``, trained on its train split on first use and cached."""
    return load_or_train(spec.name, spec.data("train"), spec.config)


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
