"""The registries of every extension point, with the built-in entries (imported lazily)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from grue_bench.errors import GrueError
from grue_bench.registry import Registry
from grue_bench.tasks import TaskSpec, discover_tasks, load_task, task_yaml

if TYPE_CHECKING:
    from grue_bench.schema import Component, Output

ALGORITHMS: Registry = Registry(
    "algorithms",
    {
        "ppo": "grue_bench.rl.ppo:PPO",
        "nlpo": "grue_bench.rl.nlpo:NLPO",
        "a2c": "grue_bench.rl.a2c:A2C",
        "trpo": "grue_bench.rl.trpo:TRPO",
        "grpo": "grue_bench.rl.grpo:GRPO",
        "rloo": "grue_bench.rl.rloo:RLOO",
        "supervised": "grue_bench.rl.supervised:Supervised",
    },
)

POLICIES: Registry = Registry(
    "policies",
    {
        "causal_lm_actor_critic_policy": "grue_bench.rl.hparams:CausalPolicyArgs",
        "seq2seq_lm_actor_critic_policy": "grue_bench.rl.hparams:Seq2SeqPolicyArgs",
        "maskable_causal_lm_actor_critic_policy": "grue_bench.rl.hparams:MaskableCausalPolicyArgs",
        "maskable_seq2seq_lm_actor_critic_policy": "grue_bench.rl.hparams:MaskableSeq2SeqPolicyArgs",
    },
)


DATAPOOLS: Registry = Registry(
    "datapools",
    {
        "task": "grue_bench.datapools:TaskPool",
        "dummy_pool": "grue_bench.datapools:SyntheticPool",
        # RL4LMs ids, reading our tasks' data
        "imdb": "grue_bench.datapools.rl4lms:IMDB",
        "imdb_seq2seq": "grue_bench.datapools.rl4lms:IMDBForSeq2Seq",
        "commongen": "grue_bench.datapools.rl4lms:CommonGen",
        "cnn_daily_mail": "grue_bench.datapools.rl4lms:CNNDailyMail",
        "totto": "grue_bench.datapools.rl4lms:ToTTo",
        "narrative_qa": "grue_bench.datapools.rl4lms:NarrativeQA",
        "iwslt2017en_de": "grue_bench.datapools.rl4lms:IWSLT2017EnDe",
        "daily_dialog": "grue_bench.datapools.rl4lms:DailyDialog",
        # RL4LMs ids for data with no shipped subset (hub or download only)
        "wmt16": "grue_bench.datapools.rl4lms_hub:WMT",
        "wmt14_processed_en_de": "grue_bench.datapools.rl4lms_hub:WMT14PreprocessedEnDe",
        "wmt16newsonly": "grue_bench.datapools.rl4lms_hub:WMT16NewsOnlyDatasetEnDe",
        "crd3": "grue_bench.datapools.rl4lms_hub:CRD3DialogueGeneration",
    },
)

_R = "grue_bench.rewards.metric_reward"
REWARDS: Registry = Registry(
    "rewards",
    {
        "metric": f"{_R}:MetricReward",
        "rouge": f"{_R}:RougeReward",
        "rouge_combined": f"{_R}:RougeCombinedReward",
        "meteor": f"{_R}:MeteorReward",
        "bleu": f"{_R}:BleuReward",
        "sacre_bleu": f"{_R}:SacreBleuReward",
        "chrf": f"{_R}:ChrFReward",
        "ter": f"{_R}:TerReward",
        "bert_score": f"{_R}:BertScoreReward",
        "bleurt": f"{_R}:BleurtReward",
        "parent": f"{_R}:ParentReward",
        "rouge_l_max": f"{_R}:RougeLMaxReward",
        "cider": f"{_R}:CiderReward",
        "learned_reward": f"{_R}:SentimentReward",
        "intent_accuracy": f"{_R}:IntentAccuracyReward",
        "common_gen_repeat_penalty": "grue_bench.rewards.synthetic:CommonGenRepeatPenalty",
        "common_gen_repeat_penalty_batched": "grue_bench.rewards.synthetic:CommonGenRepeatPenalty",
        "common_gen_preference_model": "grue_bench.rewards.preference:CommonGenPreference",
        "increasing_numbers": "grue_bench.rewards.synthetic:IncreasingNumbers",
        "sentences_with_dates": "grue_bench.rewards.synthetic:SentencesWithDates",
    },
)

METRICS: Registry = Registry(
    "metrics",
    {
        # lexical
        "rouge": "grue_bench.metrics.lexical:Rouge",
        "rouge_l_max": "grue_bench.metrics.lexical:RougeLMax",
        "bleu": "grue_bench.metrics.lexical:Bleu",
        "sacre_bleu": "grue_bench.metrics.lexical:SacreBleu",
        "chrf": "grue_bench.metrics.lexical:ChrF",
        "ter": "grue_bench.metrics.lexical:Ter",
        "meteor": "grue_bench.metrics.meteor:Meteor",
        # task-specific
        "cider": "grue_bench.metrics.cider:Cider",
        "spice": "grue_bench.metrics.spice:Spice",
        "parent_totto": "grue_bench.metrics.parent:Parent",
        "bleu_totto": "grue_bench.metrics.totto_bleu:BleuToTTo",
        # synthetic (RL4LMs's sanity checks)
        "increasing_numbers": "grue_bench.metrics.synthetic:IncreasingNumbersInText",
        "dates": "grue_bench.metrics.synthetic:DatesInText",
        # diversity
        "diversity": "grue_bench.metrics.diversity:Diversity",
        # semantic and model-based
        "bert_score": "grue_bench.metrics.bertscore:BertScore",
        "bleurt": "grue_bench.metrics.bleurt:Bleurt",
        "causal_perplexity": "grue_bench.metrics.perplexity:Perplexity",
        "summaCZS": "grue_bench.metrics.summac:SummaCZS",
        "summaCConv": "grue_bench.metrics.summac:SummaCConv",
        "learned_reward": "grue_bench.metrics.classifiers:SentimentScore",
        "vader_sentiment": "grue_bench.metrics.classifiers:VaderSentiment",
        "intent_accuracy": "grue_bench.metrics.classifiers:IntentAccuracy",
        # a registered reward reported as a metric
        "reward": "grue_bench.rewards.reward_metric:RewardMetric",
        # any `evaluate` module given by a local path
        "evaluate": "grue_bench.metrics.hf_evaluate:EvaluateMetric",
    },
)

POST_PROCESSORS: Registry = Registry(
    "post_processors",
    {"three_sentence_summary": "grue_bench.postprocessing:three_sentence_summary"},
)

TASKS: Registry[TaskSpec] = Registry("tasks", loader=load_task)
TASKS.add_discoverer(discover_tasks)

REGISTRIES: dict[str, Registry] = {
    registry.kind: registry
    for registry in (TASKS, DATAPOOLS, REWARDS, METRICS, ALGORITHMS, POLICIES, POST_PROCESSORS)
}


def default_policy(alg_id: str, model_type: str) -> str:
    """The built-in policy (RL4LMs's id) an RL algorithm takes for a model type: the maskable one
    for an algorithm that samples through a mask (NLPO)."""
    maskable = "maskable_" if ALGORITHMS.get(alg_id).Args.masked_sampling else ""
    return f"{maskable}{model_type}_lm_actor_critic_policy"


def grue_tasks() -> tuple[str, ...]:
    """What ``--task all`` means: the tasks whose ``task.yaml`` gives a ``grue_order`` (GRUE's
    seven), in that order."""
    grue = [spec for spec in map(TASKS.get, TASKS.ids()) if spec.grue_order is not None]
    return tuple(spec.id for spec in sorted(grue, key=lambda spec: spec.grue_order))


def task_reading(pool_id: str) -> str | None:
    """The task whose data the RL4LMs datapool ``pool_id`` reads: the task of that id, or the one
    listing it under ``rl4lms_datapools``; None when none does."""
    if pool_id in TASKS:
        return pool_id
    readers = [id for id in TASKS.ids() if pool_id in TASKS.get(id).rl4lms_datapools]
    return readers[0] if readers else None


def metric_outputs(metric: Component) -> Mapping[str, Output]:
    """The keys the metric entry ``metric`` (id and args) reports, with how each is shown."""
    return METRICS.get(metric.id).outputs_with(metric.args)


def declared_outputs() -> dict[str, Output]:
    """Every key a registered metric can report, with how it is shown (first declaration wins)."""
    declared: dict[str, Output] = {}
    for id in METRICS.ids():
        for key, output in METRICS.get(id).outputs_with({}).items():
            declared.setdefault(key, output)
    return declared


def headline_key(spec: TaskSpec) -> str:
    """The key that heads ``spec``: its headline metric's one key, or the declared one its
    ``headline.output`` names (any, for a metric that declares none, as an ``evaluate`` module)."""
    metric, head = spec.headline_metric(), spec.headline
    assert metric is not None and head is not None, "tasks.load_task checks the headline names a metric"
    outputs = metric_outputs(metric)
    where = {"source": str(task_yaml(spec.directory)), "key": "headline.output"}
    if head.output is None and len(outputs) != 1:
        raise GrueError(
            f"headline metric '{metric.id}' reports {len(outputs) or 'no declared'} keys: say which heads",
            fix=f"set headline.output to one of {', '.join(outputs)}" if outputs else "set headline.output",
            **where,
        )
    key = head.output or next(iter(outputs))
    if outputs and key not in outputs:
        raise GrueError(
            f"headline metric '{metric.id}' does not report '{key}'",
            fix=f"set headline.output to one of {', '.join(outputs)}",
            **where,
        )
    return key
