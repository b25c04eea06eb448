"""A dialogue-act classifier that reads the utterance before a reply and the reply, as RL4LMs's hub
classifier does: TF-IDF over hashed reply 1-3-grams and previous-utterance 1-2-grams (hashed apart),
then a multinomial logistic regression. A reply with nothing to read (no word, "?" or "!") has no act."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch

from grue_bench.classifiers.datasets import DialogueTurns
from grue_bench.classifiers.features import tokenize
from grue_bench.classifiers.files import read_classifier, write_classifier
from grue_bench.classifiers.hashing import HashedNgrams, SparseCounts, merge
from grue_bench.classifiers.linear import fit_softmax, sparse_rows

logger = logging.getLogger(__name__)

FORMAT_VERSION = 1
"""Bumped whenever the saved files or the features change meaning."""
NO_ACT = 0
"""The act of a reply with no token (no word, "?" or "!"): it matches no reference act (1-4)."""
_CONTEXT_NAMESPACE = 1
"""The previous utterance's n-grams hash apart from the reply's: "?" asked is not "?" answered."""


@dataclass(frozen=True)
class ContextActConfig:
    """Hyperparameters of the context-and-reply act classifier."""

    reply_max_n: int = 3
    context_max_n: int = 2
    bits: int = 21
    """Features are n-grams hashed into 2**bits buckets."""
    c: float = 3.0
    """Inverse L2 strength, as scikit-learn's ``C``: loss = sum of NLL + |W|^2 / (2C)."""
    max_iter: int = 200


class ContextActClassifier:
    """Acts 1 inform, 2 question, 3 directive, 4 commissive (``labels``; column k is ``labels[k]``)."""

    def __init__(
        self,
        config: ContextActConfig,
        idf: torch.Tensor,
        weight: torch.Tensor,
        bias: torch.Tensor,
        labels: list[int],
    ) -> None:
        self.config = config
        self.idf = idf
        self.weight = weight
        self.bias = bias
        self.labels = labels

    @staticmethod
    def _counts(config: ContextActConfig, previous: Sequence[str], replies: Sequence[str]) -> SparseCounts:
        reply = HashedNgrams(config.reply_max_n, config.bits)
        context = HashedNgrams(config.context_max_n, config.bits)
        return merge(
            [
                reply.counts([tokenize(text) for text in replies]),
                context.counts([tokenize(text) for text in previous], namespace=_CONTEXT_NAMESPACE),
            ]
        )

    @staticmethod
    def _features(counts: SparseCounts, idf: torch.Tensor) -> torch.Tensor:
        """Sublinear TF-IDF rows, L2-normalised; buckets unseen in training (idf 0) drop out."""
        values = (1.0 + np.log(counts.counts)) * idf.numpy()[counts.buckets]
        values = counts.normalized(values)
        return sparse_rows(counts.offsets, counts.buckets, values, len(idf))

    def predict_proba(self, previous: Sequence[str], replies: Sequence[str]) -> list[list[float]]:
        """Per reply, the probability of each act in ``labels``."""
        if not replies:
            return []
        x = self._features(self._counts(self.config, previous, replies), self.idf)
        return torch.softmax(x @ self.weight + self.bias, dim=-1).tolist()

    def predict(self, previous: Sequence[str], replies: Sequence[str]) -> list[int]:
        """The most probable act of each reply, or ``NO_ACT`` for a reply with no token."""
        probabilities = self.predict_proba(previous, replies)
        return [
            self.labels[max(range(len(p)), key=p.__getitem__)] if tokenize(reply) else NO_ACT
            for p, reply in zip(probabilities, replies, strict=True)
        ]

    @classmethod
    def train(cls, turns: DialogueTurns, config: ContextActConfig) -> ContextActClassifier:
        """Fit on every labelled turn of ``turns``."""
        start = time.perf_counter()
        labels = sorted(set(turns.acts))
        n_buckets = 1 << config.bits
        counts = cls._counts(config, turns.previous, turns.replies)
        n = len(turns.replies)
        document_frequency = np.bincount(counts.buckets, minlength=n_buckets)
        frequency = np.where(document_frequency > 0, np.log((1 + n) / (1 + document_frequency)) + 1.0, 0.0)
        idf = torch.as_tensor(frequency, dtype=torch.float32)
        target = torch.tensor([labels.index(act) for act in turns.acts])
        l2 = 1.0 / (2.0 * config.c * n)  # the per-sample share of |W|^2 / (2C)
        weight, bias, final_loss = fit_softmax(
            cls._features(counts, idf), target, len(labels), l2, config.max_iter
        )
        logger.info(
            "trained context-and-reply act classifier: %d turns, loss %.4f, %.1fs",
            n,
            final_loss,
            time.perf_counter() - start,
        )
        return cls(config, idf, weight, bias, labels)

    def save(self, directory: Path) -> None:
        """Write the idf, the weights and the labels (``files.write_classifier``)."""
        arrays = {"idf": self.idf.numpy(), "weight": self.weight.numpy(), "bias": self.bias.numpy()}
        meta = {"config": asdict(self.config), "labels": self.labels}
        write_classifier(directory, arrays, meta, FORMAT_VERSION)

    @classmethod
    def load(cls, directory: Path) -> ContextActClassifier:
        """Read a classifier written by ``save``."""
        arrays, meta = read_classifier(directory, FORMAT_VERSION)
        tensors = {name: torch.from_numpy(array) for name, array in arrays.items()}
        config = ContextActConfig(**meta["config"])
        return cls(config, tensors["idf"], tensors["weight"], tensors["bias"], list(meta["labels"]))
