"""Classifier-based metrics: learned sentiment (RL4LMs's learned_reward), VADER sentiment, intent accuracy."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, ClassVar

from pydantic import NonNegativeInt, PositiveInt

from grue_bench.classifiers.datasets import join_words
from grue_bench.classifiers.defaults import intent_classifier, sentiment_classifier
from grue_bench.classifiers.judges import (
    DEFAULT_ACT_JUDGE,
    DEFAULT_SENTIMENT_JUDGE,
    SENTIMENT_LABELS,
    ActJudge,
    SentimentJudge,
)
from grue_bench.errors import GrueError, MissingAssetError, Problem
from grue_bench.metrics.base import Metric, MetricScores
from grue_bench.schema import ArgProblems, Output

logger = logging.getLogger(__name__)


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


class SentimentScore(Metric):
    """Probability of class ``label_ix`` (1 = positive) under a sentiment classifier, as RL4LMs scores IMDB.

    ``model_name`` is a hub id (RL4LMs used ``lvwerra/distilbert-imdb``) or a local folder; unset, the
    offline ``judge`` is used (built once, cached): ``imdb_sentiment@2``, an NB-SVM trained on 42,025 IMDB
    reviews, or ``imdb_sentiment@1``, the bag-of-n-grams classifier of the 2,000 shipped train reviews that
    scored stores written before 2026-11-27 (docs/METRICS.md measures both).
    With ``include_prompt_for_eval`` the text scored is prompt + generation, joined by a space where neither
    side has one (RL4LMs concatenates them bare, which glues two words together for a word-level model).
    A hub model reads a text too long for it from the end (RL4LMs truncates on the left).
    """

    outputs: ClassVar[Mapping[str, Output]] = {
        "semantic/learned_automodel_metric": Output(
            display="Sentiment (classifier)",
            description="probability of positive sentiment from the task's learned classifier",
        )
    }

    reference_free = True

    def __init__(
        self,
        model_name: str | None = None,
        label_ix: NonNegativeInt = 1,
        batch_size: PositiveInt = 32,
        include_prompt_for_eval: bool = True,
        judge: SentimentJudge = DEFAULT_SENTIMENT_JUDGE,
    ) -> None:

        self.classifier = sentiment_classifier(model_name, judge, batch_size=batch_size)
        if not label_ix < len(self.classifier.labels):  # a hub model's labels are known once loaded
            raise GrueError(
                f"label_ix {label_ix} is out of range for a classifier with "
                f"{len(self.classifier.labels)} labels",
                key="label_ix",
                fix="use 1 for the positive class of an IMDB sentiment classifier",
            )
        self.label_ix = label_ix
        self.include_prompt_for_eval = include_prompt_for_eval

    @staticmethod
    def check_args(args: Any) -> None:
        """An offline judge's labels are known before it is built: ``label_ix`` must be one of them."""
        if args.model_name is None and args.label_ix >= len(SENTIMENT_LABELS):
            raise ArgProblems(
                Problem(
                    f"label_ix {args.label_ix} is out of range for the offline judge {args.judge}, "
                    f"whose labels are {', '.join(f'{i} {name}' for i, name in enumerate(SENTIMENT_LABELS))}",
                    key="label_ix",
                    fix="use 1 for the positive class",
                )
            )

    def compute(
        self,
        prompt_texts: list[str],
        generated_texts: list[str],
        reference_texts: list[list[str]],
        meta_infos: list[dict[str, Any]] | None = None,
        model: Any = None,
        split_name: str | None = None,
    ) -> MetricScores:
        """Per-sample class probability of prompt + generation (or the generation alone), and its mean."""

        texts = (
            [join_words(p, g) for p, g in zip(prompt_texts, generated_texts, strict=True)]
            if self.include_prompt_for_eval
            else list(generated_texts)
        )
        scores = [row[self.label_ix] for row in self.classifier.predict_proba(texts)]
        return {"semantic/learned_automodel_metric": (scores, _mean(scores))}


class VaderSentiment(Metric):
    """VADER's compound sentiment of each generation, in [-1, 1] (the lexicon ships with vaderSentiment)."""

    outputs: ClassVar[Mapping[str, Output]] = {
        "sentiment/vader_compound": Output(display="Sentiment (VADER)", description="VADER compound score")
    }

    reference_free = True

    def __init__(self) -> None:
        try:
            from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer
        except ImportError as exc:
            raise MissingAssetError(
                "VADER sentiment needs the vaderSentiment package (it ships the lexicon)",
                fix="pip install 'vaderSentiment>=3.3.2' (or pip install 'grue-bench[offline]')",
            ) from exc
        self.analyzer = SentimentIntensityAnalyzer()

    def compute(
        self,
        prompt_texts: list[str],
        generated_texts: list[str],
        reference_texts: list[list[str]],
        meta_infos: list[dict[str, Any]] | None = None,
        model: Any = None,
        split_name: str | None = None,
    ) -> MetricScores:
        """Per-sample compound score and its mean."""
        scores = [float(self.analyzer.polarity_scores(text)["compound"]) for text in generated_texts]
        return {"sentiment/vader_compound": (scores, _mean(scores))}


class IntentAccuracy(Metric):
    """1.0 when the generated reply has the dialogue act of the reference reply, as RL4LMs scores DailyDialog.

    The target act is ``meta_info["response_act"]`` (1 inform .. 4 commissive) when present, else the
    classifier's act for the first reference. ``model_name`` is a hub id (RL4LMs used
    ``rajkumarrrk/roberta-daily-dialog-intent-classifier``) or a folder; unset, the offline ``judge`` is
    used: ``daily_dialog_intent@2`` reads the previous utterance and the reply, as RL4LMs's does, and gives a
    reply with no word (nor "?" or "!") no act; ``daily_dialog_intent@1`` (stores written before
    2026-11-27) reads the reply alone.
    """

    outputs: ClassVar[Mapping[str, Output]] = {"intent/accuracy": Output(display="Intent accuracy")}

    reference_free = True

    def __init__(
        self, model_name: str | None = None, batch_size: PositiveInt = 32, judge: ActJudge = DEFAULT_ACT_JUDGE
    ) -> None:
        self.classifier = intent_classifier(model_name, judge, batch_size=batch_size)

    def compute(
        self,
        prompt_texts: list[str],
        generated_texts: list[str],
        reference_texts: list[list[str]],
        meta_infos: list[dict[str, Any]] | None = None,
        model: Any = None,
        split_name: str | None = None,
    ) -> MetricScores:
        """Per-sample act match (0.0 or 1.0) and the accuracy."""
        predicted = self.classifier.predict_acts(prompt_texts, generated_texts)
        targets = self._target_acts(prompt_texts, reference_texts, meta_infos)
        scores = [float(p == t) for p, t in zip(predicted, targets, strict=True)]
        return {"intent/accuracy": (scores, _mean(scores))}

    def _target_acts(
        self,
        prompt_texts: list[str],
        reference_texts: list[list[str]],
        meta_infos: list[dict[str, Any]] | None,
    ) -> list[int]:
        metas = meta_infos or [{} for _ in prompt_texts]
        missing = [i for i, meta in enumerate(metas) if "response_act" not in meta]
        targets = [int(meta.get("response_act", 0)) for meta in metas]
        if missing:
            logger.info(
                "intent accuracy: %d samples without response_act; classifying their reference", len(missing)
            )
            acts = self.classifier.predict_acts(
                [prompt_texts[i] for i in missing], [reference_texts[i][0] for i in missing]
            )
            for i, act in zip(missing, acts, strict=True):
                targets[i] = act
        return targets
