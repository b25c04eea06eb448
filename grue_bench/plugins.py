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

METRICS: Registry = Registry("metrics", {})

TASKS: Registry[TaskSpec] = Registry("tasks", loader=load_task)
TASKS.add_discoverer(discover_tasks)

REGISTRIES: dict[str, Registry] = {
    registry.kind: registry for registry in (TASKS, DATAPOOLS, REWARDS, METRICS, ALGORITHMS, POLICIES)
}
