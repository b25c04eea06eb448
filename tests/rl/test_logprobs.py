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


def test_gradcheck_of_the_custom_backward():
    torch.manual_seed(1)
    logits = torch.randn(2, 3, 7, dtype=torch.float64, requires_grad=True)
    actions = torch.randint(0, 7, (2, 3))
    assert torch.autograd.gradcheck(lambda x: LogProbAndEntropy.apply(x, actions)[0], (logits,))


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
