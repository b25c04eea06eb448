"""Sampled, scored episodes padded into one batch (``Episodes``), and the padding that joins batches."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields, replace

import torch

from grue_bench.rl.batch import Rollout, TokenBatch


def pad_right(tensors: list[torch.Tensor], value: float) -> torch.Tensor:
    """Concatenate [b, t_i, ...] tensors along the batch, right-padding the time dimension."""
    width = max(t.size(1) for t in tensors)
    padded = []
    for t in tensors:
        pad = [0, 0] * (t.dim() - 2) + [0, width - t.size(1)]
        padded.append(torch.nn.functional.pad(t, pad, value=value))
    return torch.cat(padded)


def pad_left(tensors: list[torch.Tensor], value: float) -> torch.Tensor:
    """Concatenate [b, p_i] tensors along the batch, left-padding (causal prompts)."""
    width = max(t.size(1) for t in tensors)
    return torch.cat([torch.nn.functional.pad(t, [width - t.size(1), 0], value=value) for t in tensors])


@dataclass(frozen=True)
class Episodes:
    """Sampled, scored episodes, padded into one batch; the algorithm turns them into a ``Rollout``."""

    tokens: TokenBatch
    texts: list[str]
    task_rewards: torch.Tensor  # [N] the reward function's score of each episode
    logprobs: torch.Tensor  # [N, T] log pi_old(a_t | s_t), under NLPO's mask
    raw_logprobs: torch.Tensor  # [N, T] log pi_old(a_t | s_t) unmasked (NLPO's KL, as in RL4LMs)
    ref_logprobs: torch.Tensor  # [N, T] log pi_ref(a_t | s_t); the policy's own without a reference
    values: torch.Tensor | None  # [N, T] V(s_t), None for critic-free algorithms
    action_mask: torch.Tensor | None  # [N, T, V] NLPO's allowed tokens
    cut: torch.Tensor | None = None
    """[N] bool: episodes cut short by the rollout's size (``first_transitions``); their
    ``response_mask`` ends at the cut, their tokens and values after it are kept (the value at
    the cut bootstraps the return), and the task reward, given at the end, is not theirs."""

    def __len__(self) -> int:
        return len(self.texts)

    @property
    def kl(self) -> torch.Tensor:
        """The per-token KL estimate log pi - log pi_ref [N, T], zero on padding. NLPO's policy
        enters unmasked, as in RL4LMs: its mask is a sampling device, not a change of the policy
        the penalty keeps close to the reference (masked, identical models would show a KL)."""
        return (self.raw_logprobs - self.ref_logprobs) * self.tokens.response_mask

    def to_rollout(self, advantages: torch.Tensor, returns: torch.Tensor | None = None) -> Rollout:
        """The update's batch, with the credit the algorithm assigned."""
        return Rollout(
            **{f.name: getattr(self.tokens, f.name) for f in fields(self.tokens)},
            logprobs=self.logprobs,
            ref_logprobs=self.ref_logprobs,
            values=self.values,
            advantages=advantages,
            returns=returns,
            loss_mask=self.tokens.response_mask,
            action_mask=self.action_mask,
        )

    @classmethod
    def concat(cls, parts: Sequence[Episodes], causal: bool, pad_id: int) -> Episodes:
        """One batch of the episodes of ``parts`` (uncut), padded as ``collect`` pads."""
        if len(parts) == 1:
            return parts[0]
        prompt_pad = pad_left if causal else pad_right

        def joined(name: str, pad, value):
            tensors = [getattr(part, name) for part in parts]
            return None if tensors[0] is None else pad(tensors, value)

        tokens = TokenBatch(
            prompt_ids=prompt_pad([p.tokens.prompt_ids for p in parts], pad_id),
            prompt_mask=prompt_pad([p.tokens.prompt_mask for p in parts], 0),
            response_ids=pad_right([p.tokens.response_ids for p in parts], pad_id),
            response_mask=pad_right([p.tokens.response_mask for p in parts], 0.0),
        )
        return cls(
            tokens=tokens,
            texts=[text for part in parts for text in part.texts],
            task_rewards=torch.cat([part.task_rewards for part in parts]),
            logprobs=joined("logprobs", pad_right, 0.0),
            raw_logprobs=joined("raw_logprobs", pad_right, 0.0),
            ref_logprobs=joined("ref_logprobs", pad_right, 0.0),
            values=joined("values", pad_right, 0.0),
            action_mask=joined("action_mask", pad_right, False),
        )

    def first_transitions(self, budget: int) -> Episodes:
        """The first ``budget`` transitions, episode after episode, as RL4LMs fills its rollout
        buffer: whole episodes while they fit, then the one that crosses the budget cut there
        (``cut``), and none after it."""
        mask = self.tokens.response_mask
        lengths = mask.sum(1).long()
        before = lengths.cumsum(0) - lengths  # transitions of the episodes before each one
        rows = torch.nonzero(before < budget).flatten()
        kept = (budget - before[rows]).clamp(max=lengths[rows])  # each kept row's transitions
        steps = torch.arange(mask.size(1), device=mask.device)
        response_mask = (steps[None, :] < kept[:, None]).to(mask.dtype)
        tokens = replace(self.tokens.select(rows), response_mask=response_mask)
        chosen = {
            f.name: None if getattr(self, f.name) is None else getattr(self, f.name)[rows]
            for f in fields(self)
            if f.name not in ("tokens", "texts", "cut")
        }
        return replace(
            self,
            tokens=tokens,
            texts=[self.texts[i] for i in rows.tolist()],
            cut=kept < lengths[rows],
            **chosen,
        )
