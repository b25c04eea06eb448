"""The lean log-prob/entropy function gives autograd's values and gradients."""

import pytest
import torch

from grue_bench.rl.logprobs import LogProbAndEntropy, logprobs_and_entropy, token_logprobs


def _reference(logits, actions):
    logp = torch.log_softmax(logits, dim=-1)
    return logp.gather(-1, actions.unsqueeze(-1)).squeeze(-1), -(logp.exp() * logp).sum(-1)


@pytest.mark.parametrize("masked", [False, True])
def test_log_probs_entropy_and_gradient_equal_autograds(masked):
    torch.manual_seed(0)
    logits = (3 * torch.randn(3, 5, 11)).requires_grad_()
    action_mask = torch.rand(3, 5, 11) < 0.6 if masked else None
    actions = torch.randint(0, 11, (3, 5))
    if masked:  # the taken token is always allowed (it was sampled under the mask)
        action_mask.scatter_(-1, actions.unsqueeze(-1), True)
    weights = torch.randn(3, 5)

    logprobs, entropy = logprobs_and_entropy(logits, actions, action_mask, entropy_grad=False)
    (grad,) = torch.autograd.grad((logprobs * weights).sum(), logits)
    restricted = (
        logits if action_mask is None else logits.masked_fill(~action_mask, torch.finfo(logits.dtype).min)
    )
    expected_logprobs, expected_entropy = _reference(restricted, actions)
    (expected_grad,) = torch.autograd.grad((expected_logprobs * weights).sum(), logits)

    assert torch.allclose(logprobs, expected_logprobs, atol=1e-6)
    assert torch.allclose(entropy, expected_entropy, atol=1e-5)
    assert torch.allclose(grad, expected_grad, atol=1e-6)
    assert not entropy.requires_grad  # a statistic


def test_the_custom_backward_matches_finite_differences():
    # (gradcheck itself traverses one graph several times, which this backward refuses: below)
    torch.manual_seed(1)
    logits = torch.randn(2, 3, 7, dtype=torch.float64)
    actions = torch.randint(0, 7, (2, 3))
    weights = torch.randn(2, 3, dtype=torch.float64)

    def objective(x: torch.Tensor) -> torch.Tensor:
        return (LogProbAndEntropy.apply(x, actions)[0] * weights).sum()

    leaf = logits.clone().requires_grad_()
    (grad,) = torch.autograd.grad(objective(leaf), leaf)
    eps, numeric = 1e-6, torch.zeros_like(logits)
    for i in range(logits.numel()):
        step = torch.zeros_like(logits).view(-1)
        step[i] = eps
        step = step.view_as(logits)
        numeric.view(-1)[i] = (objective(logits + step) - objective(logits - step)) / (2 * eps)
    assert torch.allclose(grad, numeric, atol=1e-8)


def test_an_entropy_bonus_gets_its_gradient_and_token_logprobs_match():
    torch.manual_seed(2)
    logits = torch.randn(2, 4, 9, requires_grad=True)
    actions = torch.randint(0, 9, (2, 4))
    logprobs, entropy = logprobs_and_entropy(logits, actions, entropy_grad=True)
    assert entropy.requires_grad
    (grad,) = torch.autograd.grad(entropy.sum(), logits)
    (expected,) = torch.autograd.grad(_reference(logits, actions)[1].sum(), logits)
    assert torch.allclose(grad, expected, atol=1e-6)
    assert torch.allclose(token_logprobs(logits.detach(), actions), logprobs.detach())


def test_the_entropy_in_slices_equals_the_whole_and_a_second_backward_is_refused(monkeypatch):
    import grue_bench.rl.logprobs as logprobs_module

    torch.manual_seed(3)
    logits = (2 * torch.randn(4, 5, 13)).requires_grad_()
    actions = torch.randint(0, 13, (4, 5))
    whole_logprobs, whole_entropy = LogProbAndEntropy.apply(logits, actions)
    monkeypatch.setattr(logprobs_module, "ENTROPY_CHUNK_ELEMENTS", 3 * 13)  # 3 rows a slice, 7 slices
    logprobs, entropy = LogProbAndEntropy.apply(logits, actions)
    assert torch.equal(entropy, whole_entropy) and torch.equal(logprobs, whole_logprobs)
    assert torch.allclose(entropy, _reference(logits.detach(), actions)[1], atol=1e-5)

    # the backward pass turns the saved log-softmax into the gradient: the graph serves once
    logprobs.sum().backward(retain_graph=True)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        logprobs.sum().backward()
