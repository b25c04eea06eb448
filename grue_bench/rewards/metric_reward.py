"""Any registered metric as a sentence-level reward, and the RL4LMs reward ids built on it."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, Field, NonNegativeFloat, create_model

from grue_bench import plugins
from grue_bench.classifiers.judges import DEFAULT_ACT_JUDGE, ActJudge
from grue_bench.errors import GrueError
from grue_bench.metrics.lexical import RougeType
from grue_bench.plugins.components import MetricId, ShapingRewardId, build, check_nested
from grue_bench.rewards.base import RewardFunction
from grue_bench.schema import args_model


class MetricReward(RewardFunction):
    """reward = offset + scale * mean(per-sample scores of ``keys``) [+ shaping]."""

    def __init__(
        self,
        metric: MetricId,
        keys: Annotated[list[str], Field(min_length=1)],
        metric_args: dict[str, Any] | None = None,
        scale: float = 1.0,
        offset: float = 0.0,
        shaping_fn: ShapingRewardId | None = None,
    ) -> None:

        self.metric_id = metric
        self.metric = build("metrics", metric, metric_args, "metric_args")
        self.keys = keys
        self.scale = scale
        self.offset = offset
        self.shaping = build("rewards", shaping_fn, {}, "shaping_fn") if shaping_fn else None

    @staticmethod
    def check_args(args: Any) -> None:
        """``metric_args`` are the arguments of ``metric``."""
        check_nested("metrics", args.metric, args.metric_args, "metric_args")

    def batch(self, prompts, generations, references, meta_infos) -> list[float]:
        scores = self.metric.compute(prompts, generations, references, meta_infos)
        columns = []
        for key in self.keys:
            per_sample = scores.get(key, (None, 0.0))[0]
            if per_sample is None:
                raise GrueError(
                    f"metric '{self.metric_id}' gives no per-sample scores under '{key}'",
                    key="reward_fn",
                    fix=f"use one of its per-sample keys: {sorted(k for k, v in scores.items() if v[0])}",
                )
            columns.append(per_sample)
        rewards = [self.offset + self.scale * sum(col) / len(col) for col in zip(*columns, strict=True)]
        if self.shaping is not None:
            shaped = self.shaping.batch(prompts, generations, references, meta_infos)
            rewards = [r + s for r, s in zip(rewards, shaped, strict=True)]
        return rewards


def _metric_reward(metric: str, keys: list[str], scale: float = 1.0, offset: float = 0.0):
    """A reward class for an RL4LMs id: the metric's own args pass through as ``metric_args``."""

    class Reward(MetricReward):
        def __init__(self, shaping_fn: str | None = None, **metric_args: Any) -> None:
            super().__init__(metric, keys, metric_args, scale, offset, shaping_fn)

        @classmethod
        def args_schema(cls) -> type[BaseModel]:
            """The metric's own arguments plus ``shaping_fn``."""

            base = args_model(plugins.METRICS.get(metric), metric)
            return create_model(
                f"{cls.__name__}Args", __base__=base, shaping_fn=(ShapingRewardId | None, None)
            )

    Reward.__name__ = Reward.__qualname__ = f"{metric.title().replace('_', '')}Reward"
    return Reward


class RougeReward(MetricReward):
    """RL4LMs ``rouge``: one ROUGE variant's F-measure, against the first reference unless
    ``use_single_ref`` is False (RL4LMs's default and meaning)."""

    def __init__(
        self,
        rouge_type: RougeType = "rouge1",
        use_stemmer: bool = True,
        shaping_fn: ShapingRewardId | None = None,
        use_single_ref: bool = True,
    ) -> None:
        args = {"use_stemmer": use_stemmer, "use_single_ref": use_single_ref}
        super().__init__("rouge", [f"lexical/rouge_{rouge_type}"], args, shaping_fn=shaping_fn)


class RougeCombinedReward(MetricReward):
    """RL4LMs ``rouge_combined``: the mean of ROUGE-1, ROUGE-2 and ROUGE-L against the first reference.

    RL4LMs always uses the first; ``use_single_ref: false`` (a GRUE extension) takes the best reference.
    """

    def __init__(
        self, use_stemmer: bool = True, shaping_fn: ShapingRewardId | None = None, use_single_ref: bool = True
    ) -> None:
        keys = [f"lexical/rouge_{k}" for k in ("rouge1", "rouge2", "rougeL")]
        args = {"use_stemmer": use_stemmer, "use_single_ref": use_single_ref}
        super().__init__("rouge", keys, args, shaping_fn=shaping_fn)


MeteorReward = _metric_reward("meteor", ["lexical/meteor"])
BleuReward = _metric_reward("bleu", ["lexical/bleu"])
SacreBleuReward = _metric_reward("sacre_bleu", ["lexical/sacrebleu"])
ChrFReward = _metric_reward("chrf", ["lexical/chrf"])
TerReward = _metric_reward("ter", ["lexical/ter"], scale=-1.0, offset=1.0)
"""1 - TER (TER as the metric reports it: sacrebleu's TER / 100)."""
BertScoreReward = _metric_reward("bert_score", ["semantic/bert_score"])
ParentReward = _metric_reward("parent_totto", ["table_to_text/parent_f1"])
RougeLMaxReward = _metric_reward("rouge_l_max", ["lexical/rouge_l_max"])
CiderReward = _metric_reward("cider", ["lexical/cider"])
SentimentReward = _metric_reward("learned_reward", ["semantic/learned_automodel_metric"])
BleurtReward = _metric_reward("bleurt", ["semantic/bleurt"])


class IntentAccuracyReward(RewardFunction):
    """RL4LMs ``intent_accuracy``: intent_coeff * intent match [+ auto_coeff * METEOR when ``shape``].

    Defaults are RL4LMs's. Its METEOR term is, by a slip, the METEOR of all the batch's samples up to
    this one; ours is this sample's. ``model_name`` and ``judge`` (GRUE extensions) name the act
    classifier, as the intent_accuracy metric's do.
    """

    def __init__(
        self,
        shape: bool = True,
        intent_coeff: NonNegativeFloat = 1.0,
        auto_coeff: NonNegativeFloat = 1.0,
        model_name: str | None = None,
        judge: ActJudge = DEFAULT_ACT_JUDGE,
    ) -> None:
        args = {"model_name": model_name, "judge": judge}
        self.intent = MetricReward("intent_accuracy", ["intent/accuracy"], args)
        self.meteor = MetricReward("meteor", ["lexical/meteor"]) if shape else None
        self.intent_coeff = intent_coeff
        self.auto_coeff = auto_coeff

    def batch(self, prompts, generations, references, meta_infos) -> list[float]:
        intent = self.intent.batch(prompts, generations, references, meta_infos)
        rewards = [self.intent_coeff * i for i in intent]
        if self.meteor is not None:
            meteor = self.meteor.batch(prompts, generations, references, meta_infos)
            rewards = [r + self.auto_coeff * m for r, m in zip(rewards, meteor, strict=True)]
        return rewards
