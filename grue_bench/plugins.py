"""The registries of every extension point, with the built-in entries (imported lazily)."""

from __future__ import annotations

from grue_bench.registry import Registry
from grue_bench.tasks import TaskSpec, discover_tasks, load_task

ALGORITHMS: Registry = Registry(
    "algorithms",
    {
        "ppo": "grue_bench.rl.hparams:PPOArgs",
        "nlpo": "grue_bench.rl.hparams:NLPOArgs",
        "a2c": "grue_bench.rl.hparams:A2CArgs",
        "trpo": "grue_bench.rl.hparams:TRPOArgs",
        "supervised": "grue_bench.rl.hparams:SupervisedArgs",
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

DATAPOOLS: Registry = Registry("datapools", {})

REWARDS: Registry = Registry("rewards", {})

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
        # diversity
        "diversity": "grue_bench.metrics.diversity:Diversity",
        # semantic and model-based
        "bert_score": "grue_bench.metrics.bertscore:BertScore",
        "bleurt": "grue_bench.metrics.bleurt:Bleurt",
        "causal_perplexity": "grue_bench.metrics.perplexity:Perplexity",
        "learned_reward": "grue_bench.metrics.classifiers:SentimentScore",
        "vader_sentiment": "grue_bench.metrics.classifiers:VaderSentiment",
        "intent_accuracy": "grue_bench.metrics.classifiers:IntentAccuracy",
        # any `evaluate` module given by a local path
        "evaluate": "grue_bench.metrics.hf_evaluate:EvaluateMetric",
    },
)

TASKS: Registry[TaskSpec] = Registry("tasks", loader=load_task)
TASKS.add_discoverer(discover_tasks)

REGISTRIES: dict[str, Registry] = {
    registry.kind: registry for registry in (TASKS, DATAPOOLS, REWARDS, METRICS, ALGORITHMS, POLICIES)
}
