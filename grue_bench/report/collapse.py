"""Collapse flags: a run whose outputs are degenerate ("", "the the the", one sentence for every
input) is shown with the reason, never ranked and never counted as reproducing the paper.

Per run and split, on its final generations (whitespace tokens): the share of empty outputs,
distinct outputs per input, the mean output length over the mean (first) reference length, the
share of repeated 4-grams within an output (averaged over the outputs that have a 4-gram) and the
vocabulary size (shown, not a reason). A run is flagged past any of ``THRESHOLDS`` (too short: under
0.3× the references' length and under 5 words on average).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from grue_bench.store import Store


@dataclass(frozen=True)
class Thresholds:
    """Where a run counts as collapsed (README states them)."""

    empty: float = 0.10
    """More than this share of outputs is empty."""
    distinct: float = 0.5
    """Fewer distinct outputs per input than this."""
    length_low: float = 0.3
    length_high: float = 3.0
    """Mean output length over mean reference length outside [low, high]..."""
    short_words: float = 5.0
    """...where too short also means fewer words than this on average: a reference that is no
    length target (IMDB's is the rest of a review, far past the generation budget) flags nothing
    unless the outputs say next to nothing."""
    repeated: float = 0.3
    """More than this share of an output's 4-grams repeat an earlier one, on average."""


THRESHOLDS = Thresholds()


@dataclass(frozen=True)
class OutputStats:
    """What the flags read from one run's outputs on one split."""

    outputs: int
    empty: float
    distinct: float
    mean_length: float
    """Words per output."""
    length_ratio: float | None
    """None when the samples have no (non-empty) references."""
    repeated_4grams: float
    vocabulary: int

    def reasons(self, limits: Thresholds = THRESHOLDS) -> list[str]:
        """Why the run is flagged, one phrase per threshold passed (empty: not flagged)."""
        found = []
        if self.empty > limits.empty:
            found.append(f"{self.empty:.0%} empty outputs")
        if self.distinct < limits.distinct:
            found.append(f"{self.distinct:.2f} distinct outputs per input")
        ratio = self.length_ratio
        short = ratio is not None and ratio < limits.length_low and self.mean_length < limits.short_words
        if short or (ratio is not None and ratio > limits.length_high):
            found.append(f"length {ratio:.2f}× the references'")
        if self.repeated_4grams > limits.repeated:
            found.append(f"{self.repeated_4grams:.0%} repeated 4-grams")
        return found

    @property
    def flagged(self) -> bool:
        return bool(self.reasons())


def output_stats(texts: Sequence[str], references: Sequence[Sequence[str]]) -> OutputStats:
    """The collapse statistics of ``texts``, each beside its sample's ``references``."""
    if not texts:
        raise ValueError("no outputs to read")
    tokens = [text.split() for text in texts]
    empty = sum(not t for t in tokens) / len(tokens)
    distinct = len({" ".join(t) for t in tokens}) / len(tokens)
    reference_lengths = [len(refs[0].split()) for refs in references if refs]
    mean_reference = sum(reference_lengths) / len(reference_lengths) if reference_lengths else 0.0
    mean_output = sum(len(t) for t in tokens) / len(tokens)
    ratio = mean_output / mean_reference if mean_reference > 0 else None
    shares = []
    for t in tokens:
        grams = [tuple(t[i : i + 4]) for i in range(len(t) - 3)]
        if grams:
            shares.append(1 - len(set(grams)) / len(grams))
    repeated = sum(shares) / len(shares) if shares else 0.0
    vocabulary = len({word for t in tokens for word in t})
    return OutputStats(len(texts), empty, distinct, mean_output, ratio, repeated, vocabulary)


def final_test_stats(store: Store, run_id: int) -> OutputStats | None:
    """The statistics of a run's final test generations; None when it stored none."""
    generations = store.generations(run_id, "test")
    if not generations:
        return None
    return output_stats([g["text"] for g in generations], [g["references"] for g in generations])
