"""RL that means what RL4LMs's means, on models shaped like the ones users train.

The tiny word-level GPT-2 here keeps GPT-2's default dropout (0.1), unlike the tiny profile's
models: the update must not see dropout noise. The KL controller must see RL4LMs's input (the
per-token mean), and NLPO's KL penalty must not count its own mask as a move off the reference.
"""

import dataclasses
import random

import pytest
import torch

from grue_bench.data import Sample
from grue_bench.rl.grpo import GRPO
from grue_bench.rl.hparams import GRPOArgs, MaskablePolicyArgs, NLPOArgs, PPOArgs, RLOOArgs, TRPOArgs
from grue_bench.rl.nlpo import NLPO
from grue_bench.rl.policy import ActorCritic
from grue_bench.rl.ppo import PPO
from grue_bench.rl.rloo import RLOO
from grue_bench.rl.rollout import GenerationSettings
from grue_bench.rl.trainer import Trainer
from grue_bench.rl.trpo import TRPO

from .hand_made import hand_made_episodes
from .tiny_lm import tiny_causal, tiny_seq2seq, word_tokenizer

SETTINGS = GenerationSettings(8, "left", 6, False, {"do_sample": True, "top_k": 0})
POOL = [Sample(id=str(i), prompt_or_input_text=f"{i} {i + 1} the", references=[]) for i in range(20)]
MASK_ARGS = MaskablePolicyArgs(top_mask=0.5, min_tokens_to_keep=2, target_update_iterations=5)


class CountReward:
    def batch(self, prompts, generations, references, meta_infos):
        return [float(len(g.split())) for g in generations]


def _with_dropout_lm(tokenizer, model_type="causal"):
    lm = (tiny_causal if model_type == "causal" else tiny_seq2seq)(tokenizer, seed=0)
    rates = {m.p for m in lm.modules() if isinstance(m, torch.nn.Dropout)}
    assert rates == {0.1}  # GPT-2's and T5's own dropout, as on the paper profile
    return lm


def _algorithm(cls, args, kl_coeff=0.1, model_type="causal", **extra):
    tokenizer = word_tokenizer()
    policy = ActorCritic(_with_dropout_lm(tokenizer, model_type), model_type)
    return cls(policy, tokenizer, CountReward(), args, SETTINGS, kl_coeff, **extra)


def _record_steps(algorithm) -> list[dict[str, float]]:
    """Every minibatch's statistics, as the algorithm computes them before its step."""
    seen: list[dict[str, float]] = []
    accumulate = algorithm.accumulate_gradient

    def recording(batch):
        seen.append(accumulate(batch))
        return seen[-1]

    algorithm.accumulate_gradient = recording
    return seen


ZERO_LR = {
    "ppo": (PPO, PPOArgs(n_steps=8, batch_size=4, n_epochs=3, learning_rate=0.0), {}),
    "nlpo": (
        NLPO,
        NLPOArgs(n_steps=8, batch_size=4, n_epochs=3, learning_rate=0.0),
        {"mask_args": MASK_ARGS},
    ),
    "grpo": (GRPO, GRPOArgs(n_steps=8, batch_size=4, n_epochs=3, group_size=4, learning_rate=0.0), {}),
    "rloo": (RLOO, RLOOArgs(n_steps=8, batch_size=4, n_epochs=3, group_size=4, learning_rate=0.0), {}),
}


@pytest.mark.parametrize("model_type", ["causal", "seq2seq"])
@pytest.mark.parametrize("alg", sorted(ZERO_LR))
def test_with_dropout_and_learning_rate_zero_the_ratio_is_one_in_every_epoch(alg, model_type):
    torch.manual_seed(0)
    cls, args, extra = ZERO_LR[alg]
    algorithm = _algorithm(cls, args, model_type=model_type, **extra)
    steps = _record_steps(algorithm)
    for _ in range(2):
        algorithm.step(POOL, random.Random(0))
    assert len(steps) == 2 * 3 * 2  # iterations x epochs x minibatches: no early stop
    assert max(s["train/approx_kl"] for s in steps) < 1e-6
    assert max(s["train/clipfrac"] for s in steps) == 0.0


def test_dropout_in_the_update_is_a_setting_and_then_shows_as_noise():
    torch.manual_seed(0)
    args = PPOArgs(n_steps=8, batch_size=4, n_epochs=1, learning_rate=0.0, disable_dropout=False)
    algorithm = _algorithm(PPO, args)
    steps = _record_steps(algorithm)
    algorithm.step(POOL, random.Random(0))
    assert max(s["train/approx_kl"] for s in steps) > 1e-4  # the old behaviour, reachable on purpose


def test_trpo_takes_steps_on_a_model_with_dropout():
    torch.manual_seed(0)
    args = TRPOArgs(n_steps=8, batch_size=8, target_kl=0.05, n_critic_updates=1)
    algorithm = _algorithm(TRPO, args)
    before = torch.nn.utils.parameters_to_vector(algorithm.unwrapped.lm.parameters()).clone()
    algorithm.step(POOL, random.Random(0))
    after = torch.nn.utils.parameters_to_vector(algorithm.unwrapped.lm.parameters())
    assert not torch.equal(before, after)  # the line search accepted a step


def test_the_kl_controller_sees_the_per_token_mean_over_the_rollout():
    """Two episodes, 3 and 1 tokens, with per-token KLs 0.2, 0.4, 0.6 and 1.0: per token the
    mean is 2.2 / 4 = 0.55; per sequence (1.2 + 1.0) / 2 = 1.1."""
    algorithm = _algorithm(PPO, PPOArgs(n_steps=2, batch_size=2), kl_coeff=0.1)
    mask = torch.tensor([[1.0, 1.0, 1.0], [1.0, 0.0, 0.0]])
    logprobs = torch.tensor([[-1.0, -1.0, -1.0], [-1.0, -5.0, -5.0]])
    ref = logprobs - torch.tensor([[0.2, 0.4, 0.6], [1.0, 9.0, 9.0]])  # padding's values never count
    stats = algorithm.kl_to_ref(hand_made_episodes([0.0, 0.0], logprobs, ref, mask))
    assert stats["train/kl_to_ref_per_token"] == pytest.approx(0.55)
    assert stats["train/kl_to_ref_per_sequence"] == pytest.approx(1.1)


def test_an_iteration_adapts_beta_from_the_per_token_kl():
    from grue_bench.rl.kl import AdaptiveKLController

    torch.manual_seed(0)  # the model's weights: this test must not depend on the tests run before it
    # whole episodes (6 tokens): the task reward at their end moves the policy in the first step
    algorithm = _algorithm(
        PPO, PPOArgs(n_steps=8, batch_size=8, n_epochs=1, learning_rate=1e-3), kl_coeff=0.1
    )
    algorithm.kl = AdaptiveKLController(0.1, target_kl=0.5)
    algorithm.step(POOL, random.Random(0))
    stats = algorithm.step(POOL, random.Random(1))  # moved off the reference: a KL to see
    kl = stats["train/kl_to_ref_per_token"]
    assert kl != 0 and abs(stats["train/kl_to_ref_per_sequence"]) > abs(kl)  # several tokens a sequence
    beta_before = stats["train/kl_coef"]
    error = min(max((kl - 0.5) / 0.5, -0.2), 0.2)
    assert algorithm.kl.value == pytest.approx(beta_before * (1 + 0.1 * error), rel=1e-9)


def test_nlpo_kl_penalty_is_zero_while_policy_reference_and_masking_model_are_one():
    """At iteration 0 the policy, the reference and the masking model are the same network: the
    penalty must be 0, though the policy samples from its masked (renormalised) distribution."""
    torch.manual_seed(0)
    args = NLPOArgs(n_steps=8, batch_size=8, n_epochs=1, learning_rate=1e-3)
    algorithm = _algorithm(NLPO, args, kl_coeff=0.1, mask_args=MASK_ARGS)
    episodes = algorithm.collector.collect(POOL[:8])
    mask = episodes.tokens.response_mask
    assert (
        (episodes.logprobs - episodes.ref_logprobs) * mask
    ).abs().max() > 0.01  # the mask's renormalisation
    assert episodes.kl.abs().max() < 1e-6
    stats = algorithm.step(POOL, random.Random(0))
    assert abs(stats["train/kl_to_ref_per_token"]) < 1e-6


def test_minibatch_order_follows_the_runs_seed_not_the_iteration():
    rollout = hand_made_episodes([0.0] * 4, torch.zeros(4, 4), torch.zeros(4, 4), torch.ones(4, 4))
    rollout = rollout.to_rollout(torch.zeros(4, 4))

    def orders(seed):
        algorithm = _algorithm(PPO, PPOArgs(n_steps=16, batch_size=4), seed=seed)
        return [[mb.loss_mask.tolist() for mb in algorithm.minibatches(rollout)] for _ in range(2)]

    assert orders(0) == orders(0)
    assert orders(0) != orders(1)
    assert orders(0)[0] != orders(0)[1]  # and changes from one update to the next


def test_value_loss_is_the_plain_mean_squared_error_weighed_by_vf_coef():
    from grue_bench.rl.ppo import clipped_value_loss

    batch = hand_made_episodes([0.0], torch.zeros(1, 2), torch.zeros(1, 2), torch.ones(1, 2))
    rollout = batch.to_rollout(torch.zeros(1, 2), returns=torch.tensor([[1.0, 3.0]]))
    rollout = dataclasses.replace(rollout, values=torch.zeros(1, 2))
    # ((0 - 1)^2 + (1 - 3)^2) / 2 = 2.5, as stable-baselines3's F.mse_loss (no factor 1/2)
    assert float(clipped_value_loss(torch.tensor([[0.0, 1.0]]), rollout, None)) == pytest.approx(2.5)


def test_a2c_does_not_whiten_advantages_by_default_as_in_stable_baselines3():
    from grue_bench.rl.hparams import A2CArgs

    assert A2CArgs().normalize_advantage is False and PPOArgs().normalize_advantage is True


def _count_optimizer_steps(algorithm) -> list[int]:
    taken = [0]

    def count(*_):
        taken[0] += 1

    algorithm.optimizer.optimizer.register_step_post_hook(count)  # under accelerate's wrapper
    return taken


def test_target_kl_stops_at_the_first_minibatch_past_one_and_a_half_times_it_before_its_step():
    """The first minibatch starts at the rollout policy (approximate KL 0): its step is taken.
    After it the policy has moved (learning rate 0.05), so the second minibatch is past 1.5 x
    1e-9 and stops the phase before its own step: one step in all, of 2 epochs x 2 minibatches."""
    torch.manual_seed(0)
    args = PPOArgs(n_steps=8, batch_size=4, n_epochs=2, learning_rate=0.05, target_kl=1e-9)
    algorithm = _algorithm(PPO, args)
    taken, steps = _count_optimizer_steps(algorithm), _record_steps(algorithm)
    algorithm.step(POOL, random.Random(0))
    assert taken == [1]
    assert len(steps) == 2 and steps[0]["train/approx_kl"] < 1e-9 < steps[1]["train/approx_kl"]
    # the stopping minibatch's gradient, never applied, is not kept through the next rollout
    assert all(p.grad is None for p in algorithm.unwrapped.parameters())


def test_supervised_steps_the_last_partial_gradient_accumulation_of_each_epoch():
    from grue_bench.rl.hparams import SupervisedArgs
    from grue_bench.rl.supervised import Supervised

    tokenizer = word_tokenizer()
    args = SupervisedArgs(per_device_train_batch_size=2, gradient_accumulation_steps=2, num_train_epochs=2)
    trainer = Supervised(tiny_causal(tokenizer), tokenizer, "causal", args, 8, 4)
    samples = [Sample(id=str(i), prompt_or_input_text=f"{i}", references=[f"{i + 1}"]) for i in range(10)]
    taken = _count_optimizer_steps(trainer)
    Trainer(trainer, samples, random.Random(0)).fit(trainer.n_steps(samples))
    # 5 batches an epoch: steps after batches 2, 4 and 5, twice
    assert taken == [2 * 3] and trainer.n_steps(samples) == 6


def test_a_rollout_holds_n_envs_times_n_steps_transitions_the_crossing_episode_cut():
    """n_envs 3 x n_steps 5 = 15 transitions of 4-token episodes: three whole episodes and 3 tokens
    of a fourth; prompts are drawn 3 at a time (6 sampled, as few calls as 4-token episodes allow)."""
    settings = GenerationSettings(8, "left", 4, False, {"do_sample": True, "top_k": 0})
    tokenizer = word_tokenizer()
    algorithm = PPO(
        ActorCritic(_with_dropout_lm(tokenizer), "causal"),
        tokenizer,
        CountReward(),
        PPOArgs(n_steps=5, batch_size=4),
        settings,
        0.1,
        n_envs=3,
    )
    episodes = algorithm.collect(POOL, random.Random(0))
    assert len(episodes) == 6 and episodes.tokens.response_mask.sum() == 24
    kept = algorithm.rollout_episodes(episodes)
    assert kept.tokens.response_mask.sum(1).tolist() == [4, 4, 4, 3]
    assert kept.cut.tolist() == [False, False, False, True]
    assert kept.texts == episodes.texts[:4]


def test_first_transitions_keep_whole_episodes_then_cut_the_one_that_crosses():
    mask = torch.tensor([[1.0, 1, 1, 0], [1, 0, 0, 0], [1, 1, 1, 1], [1, 1, 0, 0]])
    episodes = hand_made_episodes([1.0, 2.0, 3.0, 4.0], torch.zeros(4, 4), torch.zeros(4, 4), mask)
    kept = episodes.first_transitions(6)
    assert kept.tokens.response_mask.tolist() == [[1, 1, 1, 0], [1, 0, 0, 0], [1, 1, 0, 0]]
    assert kept.cut.tolist() == [False, False, True]
    assert kept.task_rewards.tolist() == [1.0, 2.0, 3.0]


def test_a_cut_episode_has_no_task_reward_and_bootstraps_from_the_value_at_the_cut():
    """gamma = lambda = 1, no KL: an ended episode's advantage at t is R - V_t; a cut one's is
    V_cut - V_t (its reward never arrives within the rollout)."""
    args = PPOArgs(n_steps=2, batch_size=2, gamma=1.0, gae_lambda=1.0)
    algorithm = _algorithm(PPO, args, kl_coeff=0.0)
    mask = torch.tensor([[1.0, 1.0, 0.0], [1.0, 1.0, 1.0]])
    episodes = hand_made_episodes([5.0, 7.0], torch.zeros(2, 3), torch.zeros(2, 3), mask)
    values = torch.tensor([[1.0, 2.0, 0.0], [1.0, 2.0, 3.0]])
    episodes = dataclasses.replace(episodes, values=values).first_transitions(4)  # cut row 1 at 2
    rollout = algorithm.credit(episodes)
    assert rollout.advantages.tolist() == [[4.0, 3.0, 0.0], [2.0, 1.0, 0.0]]
    assert rollout.returns.tolist() == [[5.0, 5.0, 0.0], [3.0, 3.0, 0.0]]


def test_minibatches_hold_batch_size_transitions_drawn_across_the_rollout():
    algorithm = _algorithm(PPO, PPOArgs(n_steps=15, batch_size=4))
    mask = torch.tensor([[1.0, 1, 1, 1, 1], [1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [1, 1, 0, 0, 0]])
    rollout = hand_made_episodes([0.0] * 4, torch.zeros(4, 5), torch.zeros(4, 5), mask).to_rollout(
        torch.zeros(4, 5)
    )
    rollout = dataclasses.replace(rollout, response_ids=torch.arange(4)[:, None].expand(4, 5))  # row ids
    batches = algorithm.minibatches(rollout)
    assert [int(b.loss_mask.sum()) for b in batches] == [4, 4, 4, 3]
    covered = torch.zeros(4, 5)
    for batch in batches:  # rows of the rollout (context) up to their last trained token
        steps = batch.loss_mask.size(1)
        assert torch.equal(batch.response_mask, mask[batch.response_ids[:, 0], :steps])
        covered[batch.response_ids[:, 0], :steps] += batch.loss_mask
    assert torch.equal(covered, mask)  # every transition once per epoch
    rows_per_batch = [len(b) for b in batches]
    assert max(rows_per_batch) > 1  # transitions are shuffled across episodes, not episode by episode


def test_advantages_are_whitened_per_minibatch_over_its_transitions():
    algorithm = _algorithm(PPO, PPOArgs(n_steps=4, batch_size=2))
    mask = torch.tensor([[1.0, 1.0], [1.0, 1.0]])
    rollout = hand_made_episodes([0.0, 0.0], torch.zeros(2, 2), torch.zeros(2, 2), mask).to_rollout(
        torch.tensor([[1.0, 3.0], [10.0, 30.0]])
    )
    minibatch = rollout.transitions(torch.tensor([0, 1]), torch.tensor([0, 1]))  # A = 1 and 30
    whitened = algorithm.normalized(minibatch)
    chosen = whitened.advantages[whitened.loss_mask.bool()]
    assert chosen.tolist() == pytest.approx([-1.0, 1.0], abs=1e-4)
    assert (whitened.advantages[~whitened.loss_mask.bool()] == 0).all()


@pytest.mark.parametrize(("verbose", "level"), [(1, "INFO"), (0, "DEBUG")])
def test_verbose_logs_every_iterations_statistics_at_info_from_1_up(caplog, verbose, level):
    """stable-baselines3's ``verbose`` (RL4LMs's configs say 1) prints each iteration's table."""
    algorithm = _algorithm(PPO, PPOArgs(n_steps=4, batch_size=4, n_epochs=1, verbose=verbose))
    caplog.set_level("DEBUG", logger="grue_bench.rl.algorithm")
    stats = algorithm.step(POOL, random.Random(0))
    (record,) = [r for r in caplog.records if r.getMessage().startswith("iteration 1: ")]
    assert record.levelname == level
    assert f"rollout/reward {stats['rollout/reward']:.4g}" in record.getMessage()
    assert "train/kl_to_ref_per_token" in record.getMessage()


@pytest.mark.parametrize(
    ("apply", "gpus", "processes", "said"),
    [(True, 4, 1, True), (False, 4, 1, False), (True, 4, 4, False), (True, 1, 1, False)],
)
def test_apply_model_parallel_on_several_gpus_of_one_process_says_how_to_use_them(
    monkeypatch, caplog, apply, gpus, processes, said
):
    from grue_bench.runner import assemble

    monkeypatch.setattr(torch.cuda, "device_count", lambda: gpus)
    caplog.set_level("WARNING", logger="grue_bench.runner.assemble")
    assemble._say_how_to_use_the_gpus(apply, processes)
    assert ("a run spans several GPUs when launched with `accelerate launch`" in caplog.text) == said
