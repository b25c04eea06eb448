"""Every algorithm learns: on the synthetic increasing_numbers task, with the tiny causal and the
tiny seq2seq base LM, mean reward rises by at least half the gap between its start and the
maximum reward (1.0) within a bounded number of iterations, for two seeds.

Episodes are 10 tokens (reward: the increasing run from the start over max(length, 5)), the KL
penalty is small, and a run stops as soon as the bar is reached.
"""

import random

import pytest
from conftest import NEEDS_NATIVE_BF16

from grue_bench import plugins
from grue_bench.datapools import task_corpus
from grue_bench.models import load_base_lm
from grue_bench.resolve import apply_override, build_config, task_config
from grue_bench.rl.algorithm import STAT_KEYS
from grue_bench.runner.assemble import Run, load_pool, set_seed

MAX_REWARD = 1.0
SETTINGS = [
    "alg.kl_div.coeff=0.001",
    "alg.kl_div.target_kl=null",
    "reward_fn.args.min_tokens=10",
    "env.args.max_episode_length=10",
    "alg.args.learning_rate=1e-3",
]
PER_ALG = {
    # PPO's seq2seq policy settles on one 3-number answer (reward 0.6, about the bar). Whitened
    # there, the advantages are the critic's noise at unit scale, and Adam makes the tiny gradients
    # of near-certain tokens full-size steps: with rollout-wide whitening one update took
    # p(" 92" | "2 51") from 0.99 to 0.006 and the policy looped ("2 51 2 51 ...", reward 0.33),
    # 2 of 15 seeds failing. Raw advantages shrink as rewards even out: 15 of 15 seeds then (37-56
    # iterations), and 15 of 15 with today's per-minibatch whitening too (32-46; whitened 31-46).
    ("ppo", "seq2seq"): ["alg.args.normalize_advantage=false"],
    # one update per rollout: A2C's seq2seq model needs a larger step to move in time
    ("a2c", "seq2seq"): ["alg.args.learning_rate=3e-3"],
    ("trpo", "causal"): ["alg.args.target_kl=0.1", "alg.args.cg_max_steps=8", "alg.args.n_critic_updates=3"],
    ("trpo", "seq2seq"): ["alg.args.target_kl=0.1", "alg.args.cg_max_steps=8", "alg.args.n_critic_updates=3"],
}
MAX_ITERATIONS = {"ppo": 80, "nlpo": 80, "a2c": 200, "trpo": 80, "grpo": 80, "rloo": 80}


@pytest.fixture(scope="module")
def base_lms():
    corpus = lambda: task_corpus("increasing_numbers")  # noqa: E731
    return {
        model_type: load_base_lm(model_type, profile="tiny", corpus=corpus, corpus_id="increasing_numbers")
        for model_type in ("causal", "seq2seq")
    }


def _config(alg: str, model_type: str, extra=()):
    data = task_config(plugins.TASKS.get("increasing_numbers"), alg, "tiny")
    data["alg"]["policy"]["id"] = data["alg"]["policy"]["id"].replace("causal", model_type)
    for assignment in [*SETTINGS, *PER_ALG.get((alg, model_type), []), *extra]:
        apply_override(data, assignment)
    return build_config(data, f"learning test {alg}/{model_type}")


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("model_type", ["causal", "seq2seq"])
@pytest.mark.parametrize("alg", ["ppo", "nlpo", "a2c", "trpo", "grpo", "rloo"])
def test_reward_rises_by_half_the_gap(alg, model_type, seed, base_lms):
    _rises_by_half_the_gap(alg, model_type, seed, base_lms)


@NEEDS_NATIVE_BF16
@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("model_type", ["causal", "seq2seq"])
def test_in_bf16_ppo_reward_rises_by_half_the_gap_too(model_type, seed, base_lms):
    """The same bar with the forward passes in bfloat16 (``alg.args.bf16``)."""
    algorithm = _rises_by_half_the_gap("ppo", model_type, seed, base_lms, ["alg.args.bf16=true"])
    assert algorithm.precision.name == "bf16"


def _rises_by_half_the_gap(alg, model_type, seed, base_lms, extra=()):
    """Train until the mean reward of 5 iterations clears the bar (or fail); the algorithm."""
    import copy

    config = _config(alg, model_type, extra)
    set_seed(seed)
    base = base_lms[model_type]
    algorithm = Run(config, seed, base, pools={}).rl(copy.deepcopy(base.model))
    pool, rng = list(load_pool(config, "train")), random.Random(seed)
    first = algorithm.step(pool, rng)
    assert set(STAT_KEYS) <= set(first)  # the same metric keys for every algorithm
    rewards = [first["rollout/reward"], *(algorithm.step(pool, rng)["rollout/reward"] for _ in range(2))]
    start = sum(rewards) / 3
    bar = start + 0.5 * (MAX_REWARD - start)
    while len(rewards) < MAX_ITERATIONS[alg]:
        rewards.append(algorithm.step(pool, rng)["rollout/reward"])
        if len(rewards) >= 8 and sum(rewards[-5:]) / 5 >= bar:
            break
    recent = sum(rewards[-5:]) / 5
    assert recent >= bar, (
        f"{alg}/{model_type}/seed{seed}: {start:.3f} -> {recent:.3f} (bar {bar:.3f}) {rewards}"
    )
    return algorithm


def test_compile_sampler_reaches_the_rollouts_and_evaluation_stays_uncompiled():
    from grue_bench.runner.generation import generation_settings

    data = task_config(plugins.TASKS.get("increasing_numbers"), "grpo", "tiny")
    apply_override(data, "alg.policy.args.compile_sampler=true")
    config = build_config(data, "compile_sampler test")
    assert generation_settings(config).compile_sampler
    assert not generation_settings(config, evaluation=True).compile_sampler
