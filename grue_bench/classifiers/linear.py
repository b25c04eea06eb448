"""Linear models over sparse features, fitted full-batch with L-BFGS on one thread: a multinomial
logistic regression and the scale of a calibrating sigmoid. Each starts from zero and has a convex
loss, so no seed matters, and one thread adds its sums in one order, so the same inputs give the same
weights in every process."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import numpy as np
import torch


@contextmanager
def one_thread() -> Iterator[None]:
    """Torch's intra-op threads at 1 inside, restored after. Its float sums then add up in one order:
    with 2 threads DailyDialog's act classifier came out with other weights than with 1, enough to
    change one test reply's act (an intent accuracy 0.005 apart), so a metric depended on the
    thread count of the process that trained its classifier first."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def sparse_rows(offsets: np.ndarray, columns: np.ndarray, values: np.ndarray, n_columns: int) -> torch.Tensor:
    """A CSR matrix from row offsets (``n_rows + 1``), sorted column indices per row and values."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
        return torch.sparse_csr_tensor(
            torch.as_tensor(np.asarray(offsets, dtype=np.int64)),
            torch.as_tensor(np.asarray(columns, dtype=np.int64)),
            torch.as_tensor(np.asarray(values, dtype=np.float32)),
            (len(offsets) - 1, n_columns),
            check_invariants=True,
        )


def transposed(x: torch.Tensor) -> torch.Tensor:
    """``x.T`` as CSR (the gradients multiply by it)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
        return x.to_sparse_coo().t().coalesce().to_sparse_csr()


def _minimize(
    loss_and_gradients: Callable[[], tuple[torch.Tensor, ...]],
    params: list[torch.Tensor],
    max_iter: int,
    history_size: int,
) -> float:
    """Full-batch L-BFGS with a strong-Wolfe line search; gradients written out, not by autograd
    (autograd through sparse products is ~30x slower). Returns the final loss. L-BFGS keeps
    2 x ``history_size`` vectors of the parameters' size: over 2**24 hashed features, torch's default
    of 100 took 13 GB."""
    optimizer = torch.optim.LBFGS(
        params, max_iter=max_iter, history_size=history_size, line_search_fn="strong_wolfe"
    )

    def closure() -> torch.Tensor:
        loss, *gradients = loss_and_gradients()
        for param, gradient in zip(params, gradients, strict=True):
            param.grad = gradient
        return loss

    with one_thread():
        optimizer.step(closure)
        for param in params:
            param.grad = None
        return float(loss_and_gradients()[0])


def fit_softmax(
    x: torch.Tensor, target: torch.Tensor, n_classes: int, l2: float, max_iter: int, history_size: int = 10
) -> tuple[torch.Tensor, torch.Tensor, float]:
    """Multinomial logistic regression: mean NLL + l2 |W|^2; returns (W, b, final loss).

    With P = softmax(XW + b) and Y the one-hot targets:
    dL/dW = X^T (P - Y) / n + 2 l2 W and dL/db = sum over documents of (P - Y) / n.
    """
    x_t = transposed(x)
    weight = torch.zeros(x.size(1), n_classes)
    bias = torch.zeros(n_classes)
    n = target.size(0)
    rows = torch.arange(n)

    def loss_and_gradients() -> tuple[torch.Tensor, ...]:
        log_p = torch.log_softmax(x @ weight + bias, dim=-1)
        loss = -log_p[rows, target].mean() + l2 * weight.pow(2).sum()
        residual = log_p.exp()
        residual[rows, target] -= 1.0
        residual /= n
        return loss, x_t @ residual + 2.0 * l2 * weight, residual.sum(dim=0)

    final_loss = _minimize(loss_and_gradients, [weight, bias], max_iter, history_size)
    return weight, bias, final_loss


def fit_scale(scores: torch.Tensor, positive: torch.Tensor) -> float:
    """The a for which sigmoid(a * score) is the probability of ``positive``, by maximum likelihood on
    held-out scores (the classifier's own training scores are over-confident). Platt's sigmoid without
    its intercept: the classifier's decisions stand, and the held-out texts' share of positives (which a
    fitted intercept would carry over to every text) does not move them."""
    scores = scores.to(torch.float64)
    target = positive.to(torch.float64)
    scale = torch.ones(1, dtype=torch.float64)

    def loss_and_gradients() -> tuple[torch.Tensor, ...]:
        logits = scale * scores
        loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, target)
        return loss, ((torch.sigmoid(logits) - target) * scores).mean().reshape(1)

    _minimize(loss_and_gradients, [scale], max_iter=100, history_size=10)
    return float(scale)
