"""GRPO's and RLOO's credit assignment and GRPO's KL term, against values worked out by hand."""

import math
import random

import pytest
import torch

from grue_bench.data import Sample
from grue_bench.rl.grpo import GRPO
from grue_bench.rl.hparams import GRPOArgs, PPOArgs, RLOOArgs
from grue_bench.rl.policy import ActorCritic
from grue_bench.rl.rloo import RLOO
from grue_bench.rl.rollout import GenerationSettings

from .hand_made import hand_made_episodes
from .tiny_lm import tiny_causal, word_tokenizer

SETTINGS = GenerationSettings(8, "left", 4, False, {"do_sample": True, "top_k": 0})


class ZeroReward:
    def batch(self, prompts, generations, references, meta_infos):
        return [0.0] * len(generations)


def _algorithm(cls, args, kl_coeff=0.0):
    tokenizer = word_tokenizer()
    return cls(
        ActorCritic(tiny_causal(tokenizer), "causal"), tokenizer, ZeroReward(), args, SETTINGS, kl_coeff
    )


def test_grpo_advantage_is_the_reward_standardised_within_its_group():
    grpo = _algorithm(GRPO, GRPOArgs(n_steps=8, batch_size=8, group_size=4))
    mask = torch.tensor([[1.0, 1.0, 0.0]] * 8)
    zeros = torch.zeros(8, 3)
    rollout = grpo.credit(hand_made_episodes([1, 0, 0, 1, 2, 2, 2, 2], zeros, zeros, mask))
    std = math.sqrt(1 / 3)  # unbiased std of [1, 0, 0, 1]
    a = 0.5 / (std + 1e-4)
    assert rollout.advantages[:4, 0].tolist() == pytest.approx([a, -a, -a, a], rel=1e-5)
    assert rollout.advantages[4:].abs().max() == 0  # equal rewards: no signal
    assert (rollout.advantages[:, 2] == 0).all()  # padding gets no credit
    assert rollout.values is None and rollout.returns is None


def test_grpo_kl_term_is_the_k3_estimator():
    grpo = _algorithm(GRPO, GRPOArgs(n_steps=4, batch_size=4, group_size=2), kl_coeff=0.5)
    logprobs = torch.log(torch.tensor([[0.5, 0.25]]))
    ref = torch.log(torch.tensor([[0.25, 0.25]]))
    batch = hand_made_episodes([0.0], logprobs, ref, torch.ones(1, 2)).to_rollout(torch.zeros(1, 2))
    # kl_t = r - log r - 1 with r = pi_ref / pi: token 1: 0.5 - log 0.5 - 1; token 2: 0
    expected = 0.5 * ((0.5 - math.log(0.5) - 1) + 0.0) / 2
    assert float(grpo.penalty(logprobs, batch)) == pytest.approx(expected)


def test_rloo_advantage_is_the_reward_minus_the_others_mean_with_kl_in_the_reward():
    rloo = _algorithm(
        RLOO, RLOOArgs(n_steps=4, batch_size=4, group_size=4, normalize_advantage=False), kl_coeff=0.1
    )
    mask = torch.ones(4, 2)
    logprobs = torch.zeros(4, 2)
    ref = torch.tensor([[0.0, 0.0], [0.0, 0.0], [-1.0, -1.0], [0.0, 0.0]])  # episode 2: KL 2 in total
    rollout = rloo.credit(hand_made_episodes([1.0, 0.0, 0.0, 1.0], logprobs, ref, mask))
    returns = [1.0, 0.0, 0.0 - 0.1 * 2, 1.0]
    expected = [r - (sum(returns) - r) / 3 for r in returns]
    assert rollout.advantages[:, 0].tolist() == pytest.approx(expected)
    assert rollout.advantages[:, 1].tolist() == pytest.approx(expected)


def test_group_algorithms_answer_each_prompt_group_size_times():
    grpo = _algorithm(GRPO, GRPOArgs(n_steps=6, batch_size=6, group_size=3))
    pool = [Sample(id=str(i), prompt_or_input_text=str(i), references=[]) for i in range(10)]
    drawn = [s.id for s in grpo.draw(pool, random.Random(0))]
    assert len(drawn) == 6 and drawn[0:3] == [drawn[0]] * 3 and drawn[3:6] == [drawn[3]] * 3


def test_n_steps_must_be_a_multiple_of_the_group_size():
    with pytest.raises(ValueError, match="n_steps \\(6\\) must be a multiple of group_size \\(4\\)"):
        GRPOArgs(n_steps=6, group_size=4)


class CountReward:
    def batch(self, prompts, generations, references, meta_infos):
        return [float(len(g.split())) for g in generations]


@pytest.mark.parametrize("alg", ["ppo", "grpo", "a2c"])
def test_micro_batches_change_memory_not_the_update(alg):
    from grue_bench.rl.a2c import A2C
    from grue_bench.rl.hparams import A2CArgs
    from grue_bench.rl.ppo import PPO

    tokenizer = word_tokenizer()
    cls, args = {"ppo": (PPO, PPOArgs), "grpo": (GRPO, GRPOArgs), "a2c": (A2C, A2CArgs)}[alg]
    epochs = {} if alg == "a2c" else {"n_epochs": 2}  # A2C: one step per rollout
    pool = [Sample(id=str(i), prompt_or_input_text=f"{i} {i + 1}", references=[]) for i in range(20)]
    updated = []
    for micro in (8, 3):  # one pass per minibatch, or three with accumulated gradients
        lm = tiny_causal(tokenizer, seed=0)
        for module in lm.modules():  # no dropout: both updates must see the same forward passes
            if isinstance(module, torch.nn.Dropout):
                module.p = 0.0
        hparams = args(n_steps=8, batch_size=8, micro_batch_size=micro, learning_rate=1e-2, **epochs)
        algorithm = cls(ActorCritic(lm, "causal"), tokenizer, CountReward(), hparams, SETTINGS, 0.1)
        torch.manual_seed(0)
        stats = algorithm.step(pool, random.Random(0))
        updated.append((torch.nn.utils.parameters_to_vector(lm.parameters()).detach(), stats))
    (first, first_stats), (second, second_stats) = updated
    # equal up to float rounding, which Adam's normalisation scales up for near-zero gradients:
    # within 1% of one step (lr 1e-2) after the four steps
    assert torch.allclose(first, second, atol=1e-4)
    assert float((first - second).abs().median()) < 1e-7
    assert first_stats["train/policy_loss"] == pytest.approx(second_stats["train/policy_loss"], abs=1e-6)


@pytest.mark.parametrize("alg", ["grpo", "ppo"])
def test_a_kl_coefficient_of_zero_keeps_and_runs_no_reference_model_and_reports_no_kl(alg):
    from grue_bench.rl.ppo import PPO

    cls, args = (PPO, PPOArgs) if alg == "ppo" else (GRPO, GRPOArgs)
    pool = [Sample(id=str(i), prompt_or_input_text=f"{i} {i + 1}", references=[]) for i in range(20)]
    stats = {}
    for beta in (0.0, 0.1):
        tokenizer = word_tokenizer()
        hparams = args(n_steps=8, batch_size=8, n_epochs=1, learning_rate=1e-2)
        policy = ActorCritic(tiny_causal(tokenizer), "causal")
        algorithm = cls(policy, tokenizer, CountReward(), hparams, SETTINGS, beta)
        before = torch.nn.utils.parameters_to_vector(algorithm.unwrapped.lm.parameters()).clone()
        rng = random.Random(0)
        algorithm.step(pool, rng)
        stats[beta] = algorithm.step(pool, rng)  # the policy has moved off the reference
        after = torch.nn.utils.parameters_to_vector(algorithm.unwrapped.lm.parameters())
        assert not torch.equal(before, after)  # the update ran
        assert (algorithm.ref_lm is None) == (beta == 0)
    assert not any(k.startswith("train/kl_to_ref") for k in stats[0.0]) and stats[0.0]["train/kl_coef"] == 0.0
    assert stats[0.1]["train/kl_to_ref_per_token"] != 0  # with a reference, the KL is measured
