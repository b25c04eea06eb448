"""How well each offline judge does on texts it was never fitted on: the figures of docs/METRICS.md.

Sentiment judges are measured on the 5,015 test reviews of the IMDB judge's corpus (movies that no
training or validation review is about), the CommonGen plausibility stand-in on its test references
and their shuffles: accuracy, expected calibration error and the mean score of each class. Act judges
on the 7,108 act-labelled utterances of DailyDialog's official test dialogues (those also in train or
validation left out): accuracy, per-act F1. Both versions of each judge are measured on the same
texts."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import get_args

from grue_bench.classifiers.datasets import LabelledTexts, daily_dialog_turns, imdb_reviews
from grue_bench.classifiers.defaults import EOU, TextClassifier, intent_classifier, sentiment_classifier
from grue_bench.classifiers.judges import ActJudge, SentimentJudge
from grue_bench.classifiers.offline import COMMONGEN_PLAUSIBILITY, offline_classifier

ACT_NAMES = {1: "inform", 2: "question", 3: "directive", 4: "commissive"}
CALIBRATION_BINS = 10


@dataclass(frozen=True)
class BinaryJudgeFigures:
    """A two-class judge (1 positive or plausible, 0 not) on its held-out texts."""

    judge: str
    n: int
    accuracy: float
    calibration_error: float
    """Expected calibration error over ``CALIBRATION_BINS`` equal-width bins of P(class 1)."""
    mean_positive: float
    """The mean P(class 1) of the class-1 texts."""
    mean_negative: float
    empty: float
    """P(class 1) of the empty text."""


@dataclass(frozen=True)
class ActJudgeFigures:
    judge: str
    n: int
    accuracy: float
    majority: float
    """The accuracy of always answering the training split's most frequent act."""
    f1: dict[int, float]
    """Per act, F1 over the test utterances."""
    empty_act: int
    """The act given to an empty reply after "How are you ?" (0: none)."""


def expected_calibration_error(
    probabilities: list[float], labels: list[int], bins: int = CALIBRATION_BINS
) -> float:
    """Sum over bins of P(positive) of (bin's share of texts) x |mean P(positive) - share positive|."""
    total = len(probabilities)
    error = 0.0
    for b in range(bins):
        members = [
            (p, y) for p, y in zip(probabilities, labels, strict=True) if min(int(p * bins), bins - 1) == b
        ]
        if members:
            mean_p = sum(p for p, _ in members) / len(members)
            share = sum(y for _, y in members) / len(members)
            error += len(members) / total * abs(mean_p - share)
    return error


def _binary_figures(judge: str, classifier: TextClassifier, test: LabelledTexts) -> BinaryJudgeFigures:
    positive = [row[1] for row in classifier.predict_proba(test.texts)]
    correct = sum((p >= 0.5) == (y == 1) for p, y in zip(positive, test.labels, strict=True))

    def mean_of(label: int) -> float:
        scores = [p for p, y in zip(positive, test.labels, strict=True) if y == label]
        return sum(scores) / len(scores)

    return BinaryJudgeFigures(
        judge=judge,
        n=len(test.labels),
        accuracy=correct / len(test.labels),
        calibration_error=expected_calibration_error(positive, test.labels),
        mean_positive=mean_of(1),
        mean_negative=mean_of(0),
        empty=classifier.predict_proba([""])[0][1],
    )


def measure_sentiment_judge(judge: SentimentJudge) -> BinaryJudgeFigures:
    """``judge``'s figures on the IMDB judge corpus's test reviews."""
    return _binary_figures(judge, sentiment_classifier(judge=judge), imdb_reviews("test"))


def measure_plausibility() -> BinaryJudgeFigures:
    """The CommonGen plausibility stand-in on the test references (1) and their shuffles (0)."""
    classifier = offline_classifier(COMMONGEN_PLAUSIBILITY)
    return _binary_figures(COMMONGEN_PLAUSIBILITY.name, classifier, COMMONGEN_PLAUSIBILITY.data("test"))


def measure_act_judge(judge: ActJudge) -> ActJudgeFigures:
    """``judge``'s figures on DailyDialog's official test utterances (each read after the one before)."""
    classifier = intent_classifier(judge=judge)
    test = daily_dialog_turns("test")
    prompts = [f"{previous} {EOU} " if previous else "" for previous in test.previous]
    predicted = classifier.predict_acts(prompts, test.replies)
    pairs = list(zip(predicted, test.acts, strict=True))
    majority = Counter(daily_dialog_turns("train").acts).most_common(1)[0][0]
    f1 = {}
    for act in ACT_NAMES:
        true_positive = sum(p == act and y == act for p, y in pairs)
        predicted_as = sum(p == act for p, _ in pairs)
        actual = sum(y == act for _, y in pairs)
        f1[act] = 2 * true_positive / (predicted_as + actual) if predicted_as + actual else 0.0
    return ActJudgeFigures(
        judge=judge,
        n=len(pairs),
        accuracy=sum(p == y for p, y in pairs) / len(pairs),
        majority=sum(y == majority for _, y in pairs) / len(pairs),
        f1=f1,
        empty_act=classifier.predict_acts([f"How are you ? {EOU} "], [""])[0],
    )


def measure_all() -> tuple[list[BinaryJudgeFigures], list[ActJudgeFigures]]:
    """Every sentiment and act judge, each version."""
    return (
        [measure_sentiment_judge(judge) for judge in get_args(SentimentJudge)],
        [measure_act_judge(judge) for judge in get_args(ActJudge)],
    )
