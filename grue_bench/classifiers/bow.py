"""A TF-IDF bag-of-n-grams logistic regression in torch: trained in seconds, saved as safetensors + JSON."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from grue_bench.classifiers.features import SparseBatch, TfidfVectorizer
from grue_bench.classifiers.files import read_classifier, write_classifier
from grue_bench.classifiers.linear import fit_softmax, sparse_rows

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
    offsets = np.array([*batch.offsets, len(batch.indices)], dtype=np.int64)
    return sparse_rows(offsets, np.array(batch.indices, dtype=np.int64), np.array(batch.weights), n_features)


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
        target = torch.tensor([classes.index(y) for y in labels], dtype=torch.long)
        l2 = 1.0 / (2.0 * config.c * len(texts))  # the per-sample share of |W|^2 / (2C)
        # torch's default history (100): the weights these judges have had since they were first fitted
        weight, bias, final_loss = fit_softmax(x, target, len(classes), l2, config.max_iter, history_size=100)
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
        """Write the weights, the idf and the vocabulary (``files.write_classifier``)."""
        arrays = {
            "weight": self.weight.numpy(),
            "bias": self.bias.numpy(),
            "idf": np.asarray(self.vectorizer.idf, dtype=np.float64),
        }
        meta = {
            "labels": self.labels,
            "config": asdict(self.config),
            "vocabulary": self.vectorizer.vocabulary,
        }
        write_classifier(directory, arrays, meta, FORMAT_VERSION)

    @classmethod
    def load(cls, directory: Path) -> BowClassifier:
        """Read a classifier written by ``save``."""
        import torch

        arrays, meta = read_classifier(directory, FORMAT_VERSION)
        config = BowConfig(**meta["config"])
        vectorizer = TfidfVectorizer(meta["vocabulary"], arrays["idf"].tolist(), config.max_n)
        weight, bias = torch.from_numpy(arrays["weight"]), torch.from_numpy(arrays["bias"])
        return cls(vectorizer, weight, bias, list(meta["labels"]), config)
