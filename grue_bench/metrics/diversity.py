"""Diversity of the generations alone (GEM-style statistics, as RL4LMs reports them).

Texts are split on whitespace (case kept); n-grams never cross two generations.
- distinct-n: distinct n-grams / all n-grams.
- unique-n: how many n-grams occur exactly once in the whole output (GEM's definition).
- entropy-n: Shannon entropy, in bits (log base 2), of the n-gram frequency distribution.
- msttr-100: mean type/token ratio over consecutive 100-token windows of the concatenated
  output; a final partial window is dropped unless it is the only one.
- mean_pred_length: mean tokens per generation (per sample: each generation's length).
- vocab_size: distinct tokens.
All but mean_pred_length are corpus-only: their per-sample entry is None.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import PositiveInt

from grue_bench.metrics.base import Metric, MetricScores
from grue_bench.metrics.lexical import mean
from grue_bench.schema import Output

PREFIX = "diversity_metrics"


def ngram_counts(token_lists: Sequence[Sequence[str]], n: int) -> Counter[tuple[str, ...]]:
    """n-gram frequencies over all texts, without n-grams spanning two texts."""
    return Counter(tuple(tokens[i : i + n]) for tokens in token_lists for i in range(len(tokens) - n + 1))


def entropy_bits(counts: Counter[tuple[str, ...]]) -> float:
    """Shannon entropy in bits of the distribution given by ``counts``; 0 when empty."""
    total = sum(counts.values())
    return -sum(c / total * math.log2(c / total) for c in counts.values()) if total else 0.0


def msttr(tokens: Sequence[str], window: int = 100) -> float:
    """Mean segmental type/token ratio over consecutive windows of ``window`` tokens."""
    if not tokens:
        return 0.0
    starts = range(0, len(tokens) - window + 1, window) if len(tokens) >= window else [0]
    segments = [tokens[start : start + window] for start in starts]
    return mean([len(set(segment)) / len(segment) for segment in segments])


class Diversity(Metric):
    """distinct-1/2, unique-1/2, entropy-1..4, msttr-100, mean_pred_length and vocab_size."""

    reference_free = True

    @classmethod
    def outputs_with(cls, args: Mapping[str, Any]) -> Mapping[str, Output]:
        """Every statistic, its MSTTR key named by the window (``msttr-100`` by default)."""
        window = args.get("window", 100)
        return {
            f"{PREFIX}/distinct-1": Output(display="Distinct-1", naturalness=True),
            f"{PREFIX}/distinct-2": Output(display="Distinct-2", naturalness=True),
            f"{PREFIX}/unique-1": Output(display="Unique-1", naturalness=True, decimals=0),
            f"{PREFIX}/unique-2": Output(display="Unique-2", naturalness=True, decimals=0),
            **{
                f"{PREFIX}/entropy-{n}": Output(display=f"Entropy-{n}", naturalness=True, decimals=2)
                for n in (1, 2, 3, 4)
            },
            f"{PREFIX}/msttr-{window}": Output(display=f"MSTTR-{window}", naturalness=True),
            f"{PREFIX}/vocab_size": Output(display="Vocabulary size", naturalness=True, decimals=0),
            f"{PREFIX}/mean_pred_length": Output(
                display="Mean length",
                higher_is_better=None,
                naturalness=True,
                decimals=1,
                description="mean generation length in whitespace tokens",
            ),
        }

    def __init__(self, window: PositiveInt = 100):
        """``window`` is MSTTR's segment length (the key stays ``msttr-100`` only when it is 100)."""
        self._window = window

    def compute(
        self,
        prompt_texts: list[str],
        generated_texts: list[str],
        reference_texts: list[list[str]],
        meta_infos: list[dict[str, Any]] | None = None,
        model: Any = None,
        split_name: str | None = None,
    ) -> MetricScores:
        """Diversity statistics under ``diversity_metrics/<name>``."""
        token_lists = [text.split() for text in generated_texts]
        scores: MetricScores = {}
        for n in (1, 2):
            counts = ngram_counts(token_lists, n)
            total = sum(counts.values())
            scores[f"{PREFIX}/distinct-{n}"] = (None, len(counts) / total if total else 0.0)
            scores[f"{PREFIX}/unique-{n}"] = (None, float(sum(1 for c in counts.values() if c == 1)))
        for n in (1, 2, 3, 4):
            scores[f"{PREFIX}/entropy-{n}"] = (None, entropy_bits(ngram_counts(token_lists, n)))
        all_tokens = [token for tokens in token_lists for token in tokens]
        scores[f"{PREFIX}/msttr-{self._window}"] = (None, msttr(all_tokens, self._window))
        lengths = [float(len(tokens)) for tokens in token_lists]
        scores[f"{PREFIX}/mean_pred_length"] = (lengths, mean(lengths))
        scores[f"{PREFIX}/vocab_size"] = (None, float(len(set(all_tokens))))
        return scores
