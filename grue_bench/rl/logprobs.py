"""Log-probabilities of the taken tokens and the policy's entropy, from logits [B, T, V].

The vocabulary-sized tensors are what an update's memory is made of (a [B, T, V] float tensor
per temporary; V is 50k-150k for hub models). Autograd's ``log_softmax(logits).gather(a)``
keeps the log-softmax for its backward pass, which then allocates two more (the gather's
zero-filled gradient and the log-softmax gradient). ``LogProbAndEntropy`` keeps the logits and
their log-normaliser, and its backward makes one:

    d log p(a) / d logits = onehot(a) - softmax(logits)

The entropy, a statistic unless an entropy bonus is trained, comes from the same forward pass.
"""

from __future__ import annotations

import torch


class LogProbAndEntropy(torch.autograd.Function):
    """(log softmax(logits)[a], entropy) [B, T] for logits [B, T, V] and actions [B, T]; the
    entropy is not differentiable."""

    @staticmethod
    def forward(ctx, logits: torch.Tensor, actions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        index = actions.unsqueeze(-1)
        logp = torch.log_softmax(logits, dim=-1)
        chosen = logp.gather(-1, index)
        log_normaliser = logits.gather(-1, index) - chosen
        entropy = -logp.exp().mul_(logp).sum(-1)  # p * log p in the exp's buffer
        ctx.save_for_backward(logits, log_normaliser, index)
        ctx.mark_non_differentiable(entropy)
        return chosen.squeeze(-1), entropy

    @staticmethod
    def backward(ctx, grad: torch.Tensor, _entropy_grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        logits, log_normaliser, index = ctx.saved_tensors
        grad = grad.to(logits.dtype).unsqueeze(-1)
        grad_logits = (logits - log_normaliser).exp_().mul_(-grad)  # -softmax * grad, in one buffer
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
