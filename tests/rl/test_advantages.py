"""GAE, per-token rewards, whitening and the KL controllers against values worked out by hand."""

import pytest
import torch

from grue_bench.rl.advantages import gae, masked_mean, token_rewards, whiten
from grue_bench.rl.kl import AdaptiveKLController, FixedKLController, make_kl_controller


def gae_by_hand(rewards, values, gamma, lam):
    """The textbook backward recursion, on one episode (V after the end is 0)."""
    advantages, running = [], 0.0
    for t in reversed(range(len(rewards))):
        next_value = values[t + 1] if t + 1 < len(values) else 0.0
        delta = rewards[t] + gamma * next_value - values[t]
        running = delta + gamma * lam * running
        advantages.append(running)
    advantages.reverse()
    return advantages, [a + v for a, v in zip(advantages, values, strict=True)]


@pytest.mark.parametrize(("gamma", "lam"), [(1.0, 1.0), (0.99, 0.95), (0.5, 0.0), (0.9, 0.5), (0.0, 0.7)])
def test_gae_matches_the_backward_recursion(gamma, lam):
    rewards = torch.tensor([[0.1, -0.2, 0.0, 1.0], [0.3, 0.5, 0.0, 0.0]])
    values = torch.tensor([[0.5, 0.4, -0.1, 0.2], [0.1, -0.3, 9.0, 9.0]])
    mask = torch.tensor([[1.0, 1, 1, 1], [1, 1, 0, 0]])  # the second episode ends after two tokens
    advantages, returns = gae(rewards, values, mask, gamma, lam)
    for row, length in enumerate((4, 2)):
        expected_adv, expected_ret = gae_by_hand(
            rewards[row, :length].tolist(), values[row, :length].tolist(), gamma, lam
        )
        assert advantages[row, :length].tolist() == pytest.approx(expected_adv, abs=1e-6)
        assert returns[row, :length].tolist() == pytest.approx(expected_ret, abs=1e-6)
        assert advantages[row, length:].abs().sum() == 0


def test_gae_worked_example():
    # gamma = 0.5, lambda = 1: deltas = [0 + 0.5*2 - 1, 4 + 0 - 2] = [0, 2]; A = [0 + 0.5*2, 2] = [1, 2]
    advantages, returns = gae(
        torch.tensor([[0.0, 4.0]]), torch.tensor([[1.0, 2.0]]), torch.ones(1, 2), 0.5, 1.0
    )
    assert advantages.tolist() == [[1.0, 2.0]]
    assert returns.tolist() == [[2.0, 4.0]]


def test_token_rewards_penalise_kl_and_pay_the_task_reward_at_the_end():
    logprobs = torch.tensor([[-1.0, -2.0, -0.5], [-1.0, -1.0, -1.0]])
    ref = torch.tensor([[-1.5, -1.0, -0.5], [-2.0, -1.0, -3.0]])
    mask = torch.tensor([[1.0, 1, 1], [1, 0, 0]])
    kl = (logprobs - ref) * mask
    rewards = token_rewards(torch.tensor([1.0, 2.0]), kl, mask, beta=0.1)
    assert rewards.flatten().tolist() == pytest.approx([-0.05, 0.1, 1.0, -0.1 + 2.0, 0.0, 0.0])


def test_whiten_uses_only_masked_entries():
    values = torch.tensor([[1.0, 3.0, 100.0]])
    mask = torch.tensor([[1.0, 1.0, 0.0]])
    out = whiten(values, mask)
    assert out[0].tolist() == pytest.approx([-1.0, 1.0, 0.0], abs=1e-4)
    assert masked_mean(values, mask) == 2.0


def test_adaptive_kl_controller_follows_its_formula():
    controller = AdaptiveKLController(coeff=0.2, target_kl=1.0, rate=0.1)
    # e = clip((KL - target) / target, -0.2, 0.2); beta <- beta * (1 + 0.1 * e)
    assert controller.update(1.1) == pytest.approx(0.2 * (1 + 0.1 * 0.1))
    beta = controller.value
    assert controller.update(5.0) == pytest.approx(beta * (1 + 0.1 * 0.2))  # clipped at +0.2
    beta = controller.value
    assert controller.update(0.0) == pytest.approx(beta * (1 - 0.1 * 0.2))  # clipped at -0.2
    beta = controller.value
    assert controller.update(0.95) == pytest.approx(beta * (1 + 0.1 * -0.05))


def test_fixed_controller_and_factory():
    assert FixedKLController(0.3).update(100.0) == 0.3
    assert isinstance(make_kl_controller(0.1, None), FixedKLController)
    assert isinstance(make_kl_controller(0.1, 0.5), AdaptiveKLController)
