"""The sentiment and dialogue-act classifiers the metrics use: RL4LMs's hub models, or offline defaults."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from grue_bench.classifiers.datasets import join_words
from grue_bench.classifiers.hub import HubClassifier
from grue_bench.classifiers.offline import DAILY_DIALOG_INTENT, IMDB_SENTIMENT, offline_classifier

RL4LMS_SENTIMENT_MODEL = "lvwerra/distilbert-imdb"
"""RL4LMs's IMDB sentiment classifier (label 0 negative, 1 positive)."""
RL4LMS_INTENT_MODEL = "rajkumarrrk/roberta-daily-dialog-intent-classifier"
"""RL4LMs's DailyDialog act classifier (label k is act k + 1)."""
EOU = "<EOU>"
"""The utterance separator in DailyDialog prompts."""


class TextClassifier(Protocol):
    """What the metrics need of a classifier: classes and per-class probabilities."""

    labels: list[int]

    def predict_proba(self, texts: Sequence[str]) -> list[list[float]]: ...

    def predict(self, texts: Sequence[str]) -> list[int]: ...


def sentiment_classifier(model_name: str | None = None, batch_size: int = 32) -> TextClassifier:
    """``model_name`` (hub id or folder) if given, else the offline IMDB classifier; labels 0 neg, 1 pos."""
    if model_name is None:
        return offline_classifier(IMDB_SENTIMENT)

    return HubClassifier(
        model_name,
        what="sentiment classifier",
        batch_size=batch_size,
        truncation_side="left",  # as RL4LMs: a text too long loses its start, not the generation
        offline_fix="or leave model_name unset to use the offline default, a bag-of-n-grams classifier "
        "trained on the shipped IMDB train split (`python -m grue_bench.classifiers` reports its accuracy)",
    )


@dataclass(frozen=True)
class DialogActClassifier:
    """Predicts the dialogue act (1 inform, 2 question, 3 directive, 4 commissive) of a reply."""

    classifier: TextClassifier
    with_context: bool
    """RL4LMs's hub model reads the last utterance then the reply; the offline one reads the reply alone."""

    def predict_acts(self, prompts: Sequence[str], replies: Sequence[str]) -> list[int]:
        """The act of each reply to its prompt."""
        if self.with_context:
            texts = [join_words(last_utterance(p), r) for p, r in zip(prompts, replies, strict=True)]
        else:
            texts = list(replies)
        return self.classifier.predict(texts)


def last_utterance(prompt: str) -> str:
    """The last non-empty ``<EOU>``-separated utterance of a dialogue prompt."""
    turns = [turn.strip() for turn in prompt.split(EOU) if turn.strip()]
    return turns[-1] if turns else ""


def intent_classifier(model_name: str | None = None, batch_size: int = 32) -> DialogActClassifier:
    """``model_name`` (hub id or folder) if given, else the offline DailyDialog act classifier."""
    if model_name is None:
        return DialogActClassifier(offline_classifier(DAILY_DIALOG_INTENT), with_context=False)

    hub = HubClassifier(
        model_name,
        what="dialogue-act classifier",
        labels=[1, 2, 3, 4],
        batch_size=batch_size,
        offline_fix="or leave model_name unset to use the offline default, a bag-of-n-grams classifier "
        "trained on the shipped DailyDialog train replies (`python -m grue_bench.classifiers` reports it)",
    )
    return DialogActClassifier(hub, with_context=True)
