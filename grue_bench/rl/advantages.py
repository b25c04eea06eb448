"""Per-token rewards, GAE and whitening: vectorized over the batch and over time."""

from __future__ import annotations

import torch


def masked_mean(values: torch.Tensor, mask: torch.Tensor, dim: int | None = None) -> torch.Tensor:
    """Mean of ``values`` where ``mask`` is 1."""
    if dim is None:
        return (values * mask).sum() / mask.sum().clamp(min=1)
    return (values * mask).sum(dim) / mask.sum(dim).clamp(min=1)


def whiten(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Zero mean, unit variance over the masked entries (masked-out entries become 0)."""
    mean = masked_mean(values, mask)
    var = masked_mean((values - mean) ** 2, mask)
    return (values - mean) * torch.rsqrt(var + 1e-8) * mask


def token_rewards(
    task_reward: torch.Tensor, kl: torch.Tensor, mask: torch.Tensor, beta: float
) -> torch.Tensor:
    """r_t = -beta * kl_t (kl_t = log pi - log pi_ref), plus the task reward at each sequence's
    last token; zero on padding."""
    rewards = -beta * kl
    last = (mask.sum(1).long() - 1).clamp(min=0)
    rewards[torch.arange(rewards.size(0)), last] += task_reward
    return rewards * mask


def gae(
    rewards: torch.Tensor,
    values: torch.Tensor,
    mask: torch.Tensor,
    gamma: float,
    lam: float,
    bootstrap: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Generalized advantage estimation; returns (advantages, returns), zero on padding.

    A row's transitions end at its last unmasked token; the value after it is ``bootstrap`` [B]
    (the value of the next state for an episode cut short, 0 for one that ended). Computed
    without a loop over time: A_t = sum_{s>=t} (gamma*lam)^(s-t) * delta_s, as one matrix product.
    """
    values = values * mask
    next_values = torch.cat([values[:, 1:], torch.zeros_like(values[:, :1])], dim=1) * torch.cat(
        [mask[:, 1:], torch.zeros_like(mask[:, :1])], dim=1
    )
    if bootstrap is not None:
        last = (mask.sum(1).long() - 1).clamp(min=0)
        next_values[torch.arange(mask.size(0)), last] += bootstrap
    deltas = (rewards + gamma * next_values - values) * mask
    steps = rewards.size(1)
    offsets = torch.arange(steps, device=rewards.device)
    power = (offsets[None, :] - offsets[:, None]).to(rewards.dtype)  # s - t
    discount = torch.where(power >= 0, (gamma * lam) ** power.clamp(min=0), torch.zeros_like(power))
    advantages = deltas @ discount.T
    advantages = advantages * mask
    return advantages, (advantages + values) * mask
