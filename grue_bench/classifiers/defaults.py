"""The sentiment and dialogue-act classifiers the metrics use: RL4LMs's hub models, or offline defaults."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from grue_bench.classifiers.context_acts import ContextActClassifier
from grue_bench.classifiers.datasets import join_words
from grue_bench.classifiers.hub import HubClassifier
from grue_bench.classifiers.judges import DEFAULT_ACT_JUDGE, DEFAULT_SENTIMENT_JUDGE, ActJudge, SentimentJudge
from grue_bench.classifiers.offline import (
    DAILY_DIALOG_INTENT,
    IMDB_SENTIMENT,
    daily_dialog_act_judge,
    imdb_sentiment_judge,
    offline_classifier,
)

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


def sentiment_classifier(
    model_name: str | None = None, judge: SentimentJudge = DEFAULT_SENTIMENT_JUDGE, batch_size: int = 32
) -> TextClassifier:
    """``model_name`` (hub id or folder) if given, else the offline ``judge``; labels 0 negative, 1 pos."""
    if model_name is None:
        return offline_classifier(IMDB_SENTIMENT) if judge == "imdb_sentiment@1" else imdb_sentiment_judge()

    return HubClassifier(
        model_name,
        what="sentiment classifier",
        batch_size=batch_size,
        truncation_side="left",  # as RL4LMs: a text too long loses its start, not the generation
        offline_fix=f"or leave model_name unset to use the offline default, {DEFAULT_SENTIMENT_JUDGE} "
        "(an NB-SVM trained on 42,025 IMDB reviews; docs/METRICS.md gives its accuracy)",
    )


class ActClassifier(Protocol):
    """What the intent metric needs: the act (1 inform, 2 question, 3 directive, 4 commissive; 0 none)
    of each reply to its dialogue prompt."""

    def predict_acts(self, prompts: Sequence[str], replies: Sequence[str]) -> list[int]: ...


@dataclass(frozen=True)
class TextActClassifier:
    """A text classifier of acts reading the last utterance then the reply as one text (RL4LMs's hub
    model), or the reply alone (daily_dialog_intent@1)."""

    classifier: TextClassifier
    with_context: bool

    def predict_acts(self, prompts: Sequence[str], replies: Sequence[str]) -> list[int]:
        """The act of each reply to its prompt."""
        if self.with_context:
            texts = [join_words(last_utterance(p), r) for p, r in zip(prompts, replies, strict=True)]
        else:
            texts = list(replies)
        return self.classifier.predict(texts)


@dataclass(frozen=True)
class ContextReplyActClassifier:
    """daily_dialog_intent@2: the last utterance and the reply read as two fields."""

    classifier: ContextActClassifier

    def predict_acts(self, prompts: Sequence[str], replies: Sequence[str]) -> list[int]:
        """The act of each reply to its prompt (0 for a reply with no word, "?" or "!")."""
        return self.classifier.predict([last_utterance(p) for p in prompts], replies)


def last_utterance(prompt: str) -> str:
    """The last non-empty ``<EOU>``-separated utterance of a dialogue prompt."""
    turns = [turn.strip() for turn in prompt.split(EOU) if turn.strip()]
    return turns[-1] if turns else ""


def intent_classifier(
    model_name: str | None = None, judge: ActJudge = DEFAULT_ACT_JUDGE, batch_size: int = 32
) -> ActClassifier:
    """``model_name`` (hub id or folder) if given, else the offline ``judge``."""
    if model_name is None:
        if judge == "daily_dialog_intent@1":
            return TextActClassifier(offline_classifier(DAILY_DIALOG_INTENT), with_context=False)
        return ContextReplyActClassifier(daily_dialog_act_judge())

    hub = HubClassifier(
        model_name,
        what="dialogue-act classifier",
        labels=[1, 2, 3, 4],
        batch_size=batch_size,
        offline_fix=f"or leave model_name unset to use the offline default, {DEFAULT_ACT_JUDGE} (the "
        "previous utterance and the reply, trained on 87,159 DailyDialog utterances; docs/METRICS.md)",
    )
    return TextActClassifier(hub, with_context=True)
