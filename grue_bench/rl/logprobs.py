"""Log-probabilities of the taken tokens and the policy's entropy, from logits [B, T, V].

The vocabulary-sized tensors are what an update's memory is made of (a [B, T, V] float tensor
per temporary; V is 50k-150k for hub models). Autograd's ``log_softmax(logits).gather(a)``
keeps the log-softmax for its backward pass, which then allocates two more (the gather's
zero-filled gradient and the log-softmax gradient). ``LogProbAndEntropy`` keeps only the
log-softmax, and its backward turns that buffer into the gradient, allocating none:

    d log p(a) / d logits = onehot(a) - softmax(logits)

The entropy, a statistic unless an entropy bonus is trained, comes from the same forward pass, a
few rows at a time (its ``p log p`` temporary is a slice, not another [B, T, V] tensor).
"""

from __future__ import annotations

import torch

ENTROPY_CHUNK_ELEMENTS = 2**22
"""Vocabulary entries per slice of the entropy's temporary (16 MiB in float32)."""


class LogProbAndEntropy(torch.autograd.Function):
    """(log softmax(logits)[a], entropy) [B, T] for logits [B, T, V] and actions [B, T]; the
    entropy is not differentiable. The backward pass consumes the saved log-softmax, so the
    graph through it can be traversed once (a second pass, under ``retain_graph``, is refused by
    autograd's check of saved tensors modified in place)."""

    @staticmethod
    def forward(ctx, logits: torch.Tensor, actions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        index = actions.unsqueeze(-1)
        logp = torch.log_softmax(logits, dim=-1)
        chosen = logp.gather(-1, index).squeeze(-1)
        rows = logp.view(-1, logp.size(-1))
        step = max(1, ENTROPY_CHUNK_ELEMENTS // rows.size(1))
        entropy = torch.cat([-part.exp().mul_(part).sum(-1) for part in rows.split(step)]).view_as(chosen)
        ctx.save_for_backward(logp, index)
        ctx.mark_non_differentiable(entropy)
        return chosen, entropy

    @staticmethod
    def backward(ctx, grad: torch.Tensor, _entropy_grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        logp, index = ctx.saved_tensors
        grad = grad.to(logp.dtype).unsqueeze(-1)
        grad_logits = logp.exp_().mul_(-grad)  # -softmax * grad, in the log-softmax's buffer
        return grad_logits.scatter_add_(-1, index, grad), None


def token_logprobs(logits: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
    """log pi(a) of the taken tokens [B, T] (no entropy: the reference pass needs none)."""
    return torch.log_softmax(logits.float(), dim=-1).gather(-1, actions.unsqueeze(-1)).squeeze(-1)


def logprobs_and_entropy(
    logits: torch.Tensor,
    actions: torch.Tensor,
    action_mask: torch.Tensor | None = None,
    entropy_grad: bool = True,
) -> tuple[torch.Tensor, torch.Tensor]:
    """log pi(a) and entropy, under the distribution restricted to ``action_mask`` if given.

    Without ``entropy_grad`` the entropy is a statistic only: no graph is kept for it (it spans
    the vocabulary at every step, so its backward pass is not free)."""
    logits = logits.float()
    if action_mask is not None:
        logits = logits.masked_fill(~action_mask, torch.finfo(logits.dtype).min)
    if entropy_grad and torch.is_grad_enabled():  # an entropy bonus is trained: autograd's way
        logp_all = torch.log_softmax(logits, dim=-1)
        logprobs = logp_all.gather(-1, actions.unsqueeze(-1)).squeeze(-1)
        return logprobs, -(logp_all.exp() * logp_all).sum(-1)
    return LogProbAndEntropy.apply(logits, actions)
