"""Hashed n-gram counts: n-grams mapped to a fixed number of buckets, so a judge trained on tens of
thousands of texts needs no vocabulary (millions of strings) to be saved or loaded.

A token's hash is its CRC-32; an n-gram's is built from its tokens' hashes by multiply-and-add in
64 bits, so every process and thread count gives the same buckets. Collisions merge n-grams at
random; with 2**22 buckets the IMDB judge's validation accuracy was the same as with a vocabulary
of 7.9 million n-grams."""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

_CHUNK = 4096
"""Documents hashed at once."""
_MULTIPLIER = np.uint64(0x9E3779B97F4A7C15)
"""An odd 64-bit constant (2**64 divided by the golden ratio): mixes a prefix's hash into the next."""


@dataclass(frozen=True)
class SparseCounts:
    """Documents as CSR rows of (bucket, count), buckets sorted within each row."""

    offsets: np.ndarray
    """Row ``i`` is ``buckets[offsets[i]:offsets[i + 1]]``; ``n_rows + 1`` entries."""
    buckets: np.ndarray
    counts: np.ndarray

    def rows(self) -> np.ndarray:
        """The row of each entry."""
        return np.repeat(np.arange(len(self.offsets) - 1), np.diff(self.offsets))

    def normalized(self, values: np.ndarray) -> np.ndarray:
        """``values`` (one per entry) divided by their row's L2 norm (a row of zeros stays zero)."""
        rows = self.rows()
        norms = np.sqrt(np.bincount(rows, weights=values**2, minlength=len(self.offsets) - 1))
        return values / np.where(norms > 0, norms, 1.0)[rows]


@dataclass(frozen=True)
class HashedNgrams:
    """Counts of the 1- to ``max_n``-grams of token lists, in ``2**bits`` buckets."""

    max_n: int
    bits: int

    def counts(self, documents: Sequence[Sequence[str]], namespace: int = 0) -> SparseCounts:
        """Each document's bucket counts; ``namespace`` gives another field (a dialogue's context beside
        its reply) buckets of its own hashing. Documents are hashed in chunks, so the arrays in flight
        stay small whatever the corpus."""
        chunks = [
            self._chunk_counts(documents[start : start + _CHUNK], namespace)
            for start in range(0, len(documents), _CHUNK)
        ]
        if not chunks:
            return SparseCounts(np.zeros(1, dtype=np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64))
        ends = np.cumsum([len(chunk.buckets) for chunk in chunks])
        offsets = [chunks[0].offsets] + [
            chunk.offsets[1:] + end for chunk, end in zip(chunks[1:], ends[:-1], strict=True)
        ]
        return SparseCounts(
            offsets=np.concatenate(offsets),
            buckets=np.concatenate([chunk.buckets for chunk in chunks]),
            counts=np.concatenate([chunk.counts for chunk in chunks]),
        )

    def _chunk_counts(self, documents: Sequence[Sequence[str]], namespace: int) -> SparseCounts:
        lengths = np.fromiter((len(tokens) for tokens in documents), dtype=np.int64, count=len(documents))
        hashes = np.fromiter(
            (_token_hash(token) for tokens in documents for token in tokens),
            dtype=np.uint64,
            count=int(lengths.sum()),
        )
        document_of = np.repeat(np.arange(len(documents), dtype=np.int64), lengths)
        mask = np.uint64((1 << self.bits) - 1)
        keys = []
        prefix = hashes + np.uint64(namespace) * _MULTIPLIER
        for n in range(1, self.max_n + 1):
            if n > 1:  # the (n-1)-gram starting at i, extended by the token at i + n - 1
                prefix = prefix[:-1] * _MULTIPLIER + hashes[n - 1 :]
            starts = np.arange(len(prefix))
            whole = document_of[starts] == document_of[starts + n - 1]  # within one document
            mixed = prefix[whole] ^ (prefix[whole] >> np.uint64(29)) ^ np.uint64(n)
            keys.append(document_of[starts[whole]] << self.bits | (mixed & mask).astype(np.int64))
        unique, counts = np.unique(np.concatenate(keys), return_counts=True)
        rows = unique >> self.bits
        offsets = np.searchsorted(rows, np.arange(len(documents) + 1))
        return SparseCounts(offsets=offsets, buckets=unique & int(mask), counts=counts)


@lru_cache(maxsize=1 << 20)
def _token_hash(token: str) -> int:
    return zlib.crc32(token.encode("utf-8"))


def merge(parts: Sequence[SparseCounts]) -> SparseCounts:
    """The sum of several fields' counts over the same documents (a bucket two fields share adds up)."""
    n_rows = len(parts[0].offsets) - 1
    rows = np.concatenate([np.repeat(np.arange(n_rows), np.diff(part.offsets)) for part in parts])
    buckets = np.concatenate([part.buckets for part in parts])
    counts = np.concatenate([part.counts for part in parts])
    width = int(buckets.max(initial=0)).bit_length() + 1
    keys, inverse = np.unique(rows << width | buckets, return_inverse=True)
    summed = np.bincount(inverse, weights=counts).astype(np.int64)
    offsets = np.searchsorted(keys >> width, np.arange(n_rows + 1))
    return SparseCounts(offsets=offsets, buckets=keys & ((1 << width) - 1), counts=summed)
