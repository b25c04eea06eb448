"""A TF-IDF bag-of-n-grams logistic regression in torch: trained in seconds, saved as safetensors + JSON."""

from __future__ import annotations

import json
import logging
import time
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from grue_bench.classifiers.features import SparseBatch, TfidfVectorizer

if TYPE_CHECKING:
    import torch

logger = logging.getLogger(__name__)

FORMAT_VERSION = 1
"""Bumped whenever the saved files or the features change meaning; part of the cache key."""
FIT_VERSION = 2
"""Bumped whenever the fit gives other weights for the same inputs; part of the cache key
(2: fitted on one thread, so a classifier cached by version 1 with another thread count is refitted)."""


@dataclass(frozen=True)
class BowConfig:
    """Hyperparameters of the bag-of-n-grams classifier."""

    max_n: int = 1
    """Longest n-gram used as a feature."""
    min_df: int = 2
    """An n-gram must occur in at least this many training documents."""
    c: float = 10.0
    """Inverse L2 strength, as scikit-learn's ``C``: loss = sum of NLL + |W|^2 / (2C)."""
    max_iter: int = 100
    """L-BFGS iterations (full batch; the problem is convex and starts from zero, so no seed matters)."""


def _matrix(batch: SparseBatch, n_features: int) -> torch.Tensor:
    """The documents as a sparse CSR matrix (documents x features); rows come with sorted columns."""
    import torch

    crow = torch.tensor([*batch.offsets, len(batch.indices)], dtype=torch.int64)
    col = torch.tensor(batch.indices, dtype=torch.int64)
    values = torch.tensor(batch.weights, dtype=torch.float32)
    shape = (len(batch.offsets), n_features)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
        return torch.sparse_csr_tensor(crow, col, values, shape, check_invariants=True)


@contextmanager
def one_thread() -> Iterator[None]:
    """Torch's intra-op threads at 1 inside, restored after. Its float sums then add up in one order:
    with 2 threads DailyDialog's act classifier came out with other weights than with 1, enough to
    change one test reply's act (an intent accuracy 0.005 apart), so a metric depended on the
    thread count of the process that trained its classifier first."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def loss_and_gradients(
    x: torch.Tensor,
    x_t: torch.Tensor,
    target: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor,
    l2: float,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Mean NLL + l2 |W|^2 and its gradients, written out: autograd through sparse products is ~30x slower.

    With P = softmax(XW + b) and Y the one-hot targets:
    dL/dW = X^T (P - Y) / n + 2 l2 W and dL/db = sum over documents of (P - Y) / n.
    """
    import torch

    log_p = torch.log_softmax(x @ weight + bias, dim=-1)
    n = target.size(0)
    loss = -log_p[torch.arange(n), target].mean() + l2 * weight.pow(2).sum()
    residual = log_p.exp()
    residual[torch.arange(n), target] -= 1.0
    residual /= n
    return loss, x_t @ residual + 2.0 * l2 * weight, residual.sum(dim=0)


class BowClassifier:
    """Multinomial logistic regression over TF-IDF n-grams; ``labels[k]`` is the class of column k."""

    def __init__(
        self,
        vectorizer: TfidfVectorizer,
        weight: torch.Tensor,
        bias: torch.Tensor,
        labels: list[int],
        config: BowConfig,
    ) -> None:
        self.vectorizer = vectorizer
        self.weight = weight
        self.bias = bias
        self.labels = labels
        self.config = config

    def predict_proba(self, texts: Sequence[str]) -> list[list[float]]:
        """Class probabilities per text, columns in the order of ``labels``."""
        import torch

        if not texts:
            return []
        x = _matrix(self.vectorizer.transform(texts), len(self.vectorizer.vocabulary))
        return torch.softmax(x @ self.weight + self.bias, dim=-1).tolist()

    def predict(self, texts: Sequence[str]) -> list[int]:
        """The most probable class of each text."""
        return [self.labels[max(range(len(p)), key=p.__getitem__)] for p in self.predict_proba(texts)]

    @classmethod
    def train(cls, texts: Sequence[str], labels: Sequence[int], config: BowConfig) -> BowClassifier:
        """Fit on ``texts`` with integer class ``labels``; the same weights for the same inputs, whatever
        the process's thread count."""
        import torch

        start = time.perf_counter()
        classes = sorted(set(labels))
        vectorizer, batch = TfidfVectorizer.fit_transform(texts, config.max_n, config.min_df)
        x = _matrix(batch, len(vectorizer.vocabulary))
        x_t = x.to_sparse_coo().t().coalesce().to_sparse_csr()
        target = torch.tensor([classes.index(y) for y in labels], dtype=torch.long)
        weight = torch.zeros(len(vectorizer.vocabulary), len(classes))
        bias = torch.zeros(len(classes))
        l2 = 1.0 / (2.0 * config.c * len(texts))  # the per-sample share of |W|^2 / (2C)
        optimizer = torch.optim.LBFGS([weight, bias], max_iter=config.max_iter, line_search_fn="strong_wolfe")

        def closure() -> torch.Tensor:
            loss, weight.grad, bias.grad = loss_and_gradients(x, x_t, target, weight, bias, l2)
            return loss

        with one_thread():
            optimizer.step(closure)
            weight.grad = bias.grad = None
            final_loss = float(loss_and_gradients(x, x_t, target, weight, bias, l2)[0])
        logger.info(
            "trained bag-of-n-grams classifier: %d documents, %d features, %d classes, loss %.4f, %.1fs",
            len(texts),
            len(vectorizer.vocabulary),
            len(classes),
            final_loss,
            time.perf_counter() - start,
        )
        return cls(vectorizer, weight, bias, classes, config)

    def save(self, directory: Path) -> None:
        """Write ``weights.safetensors`` and ``classifier.json`` (no pickle anywhere)."""
        import torch
        from safetensors.torch import save_file

        directory.mkdir(parents=True, exist_ok=True)
        tensors = {
            "weight": self.weight.contiguous(),
            "bias": self.bias.contiguous(),
            "idf": torch.tensor(self.vectorizer.idf, dtype=torch.float64),
        }
        save_file(tensors, str(directory / "weights.safetensors"))
        meta = {
            "format_version": FORMAT_VERSION,
            "labels": self.labels,
            "config": asdict(self.config),
            "vocabulary": self.vectorizer.vocabulary,
        }
        (directory / "classifier.json").write_text(json.dumps(meta), encoding="utf-8")

    @classmethod
    def load(cls, directory: Path) -> BowClassifier:
        """Read a classifier written by ``save``."""
        from safetensors.torch import load_file

        meta = json.loads((directory / "classifier.json").read_text(encoding="utf-8"))
        if meta.get("format_version") != FORMAT_VERSION:
            raise ValueError(
                f"{directory}: classifier format {meta.get('format_version')} != {FORMAT_VERSION}"
            )
        tensors = load_file(str(directory / "weights.safetensors"))
        config = BowConfig(**meta["config"])
        vectorizer = TfidfVectorizer(meta["vocabulary"], tensors["idf"].tolist(), config.max_n)
        return cls(vectorizer, tensors["weight"], tensors["bias"], list(meta["labels"]), config)
