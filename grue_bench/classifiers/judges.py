"""The offline judges by name: which exist, which score by default, and which scored a store written
before they had names. Light on purpose (no torch): the runner, submissions and floors read it."""

from __future__ import annotations

from typing import Any, Literal, get_args

SentimentJudge = Literal["imdb_sentiment@2", "imdb_sentiment@1"]
"""The offline IMDB sentiment judges, the default first: @2 an NB-SVM on 42,025 IMDB reviews, @1 the
bag-of-n-grams logistic regression on the task's 2,000 train reviews."""
ActJudge = Literal["daily_dialog_intent@2", "daily_dialog_intent@1"]
"""The offline DailyDialog act judges, the default first: @2 reads the previous utterance and the
reply (87,159 training utterances), @1 the reply alone (the task's 2,000 train replies)."""
SENTIMENT_LABELS = ("negative", "positive")
"""The classes of every offline sentiment judge, by index (a metric's ``label_ix``)."""
DEFAULT_SENTIMENT_JUDGE: SentimentJudge = get_args(SentimentJudge)[0]
DEFAULT_ACT_JUDGE: ActJudge = get_args(ActJudge)[0]

JUDGED_METRICS = {"learned_reward": "sentiment", "intent_accuracy": "intent"}
"""The metric ids whose scores come from an offline judge, and which kind of judge."""
CURRENT_JUDGES = {"sentiment": DEFAULT_SENTIMENT_JUDGE, "intent": DEFAULT_ACT_JUDGE}
"""What a run records (``versions.offline_judges``): the judges its metrics use unless its config
names another."""
LEGACY_JUDGES = {"sentiment": "imdb_sentiment@1", "intent": "daily_dialog_intent@1"}
"""The judges of a run that records none: every run stored before judges had names."""


def judges_of(versions: dict[str, Any]) -> dict[str, str]:
    """The offline judges a stored run's metrics used, from its ``versions``."""
    return dict(versions.get("offline_judges") or LEGACY_JUDGES)


def with_judges(metric_id: str, args: dict[str, Any], judges: dict[str, str]) -> dict[str, Any]:
    """``args`` of the metric ``metric_id`` with the judge of ``judges`` filled in where the metric takes
    one and its args name neither a hub model nor a judge."""
    kind = JUDGED_METRICS.get(metric_id)
    if kind is None or args.get("model_name") or "judge" in args:
        return args
    return {**args, "judge": judges[kind]}
