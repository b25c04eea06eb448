"""PARENT for table-to-text (ToTTo), written from the definitions in Dhingra et al. (2019),
"Handling Divergent Reference Texts when Evaluating Table-to-Text Generation".

With G the generation, R a reference and T the table (records of attribute and value tokens):
- w(g), the probability that n-gram g is entailed by T (word-overlap model): the share of g's
  tokens found anywhere in T (attributes or values).
- Entailed precision for order n: each n-gram of G counts as correct with probability
  P(g in R) + P(g not in R)·w(g), where P(g in R) = min(1, #R(g) / #G(g)).
- Entailed recall: R_ref^(1-λ) · R_table^λ. R_ref is recall of R's n-grams weighted by w(g)
  (only what the table supports has to be recalled); R_table is the mean over records of
  LCS(value, G) / |value|.
- Precision and R_ref are geometric means over orders 1..max_order; F is their harmonic mean.
Several references: the one with the best F is kept. Corpus scores: means over samples.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import PositiveFloat, PositiveInt

from grue_bench.errors import GrueError
from grue_bench.metrics.base import Metric, MetricScores
from grue_bench.metrics.lexical import mean, require_aligned
from grue_bench.schema import Output, UnitInterval

Record = tuple[tuple[str, ...], tuple[str, ...]]
"""One table record: (attribute tokens, value tokens)."""

# Words and single punctuation marks, so that "2015," matches the table value "2015".
_TOKEN = re.compile(r"\w+|[^\w\s]")


def tokenize(text: str) -> list[str]:
    """Lower-cased words and punctuation marks."""
    return _TOKEN.findall(text.lower())


def table_from_cells(cells: Sequence[dict[str, Any]]) -> list[Record]:
    """Records from ToTTo's ``highlighted_cell_details``: headers are the attribute, the cell the value."""
    records = []
    for cell in cells:
        value = tuple(tokenize(str(cell.get("value", ""))))
        headers = [*cell.get("col_headers", []), *cell.get("row_headers", [])]
        if value:  # an empty cell states nothing to recall
            records.append((tuple(tokenize(" ".join(headers))), value))
    return records


def ngram_counts(tokens: Sequence[str], n: int) -> Counter[tuple[str, ...]]:
    """How often each n-gram occurs in ``tokens``."""
    return Counter(tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1))


def lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common subsequence of ``a`` and ``b``."""
    previous = [0] * (len(b) + 1)
    for x in a:
        current = [0]
        for j, y in enumerate(b):
            current.append(previous[j] + 1 if x == y else max(previous[j + 1], current[j]))
        previous = current
    return previous[-1]


@dataclass(frozen=True)
class ParentScore:
    """PARENT of one generation against one reference."""

    precision: float
    recall: float
    f1: float


def _geometric_mean(values: Sequence[float], epsilon: float) -> float:
    # A zero order would zero the whole mean (and log(0) fails): smooth it to epsilon instead.
    return math.exp(sum(math.log(max(v, epsilon)) for v in values) / len(values))


def parent_score(
    prediction: Sequence[str],
    reference: Sequence[str],
    table: Sequence[Record],
    max_order: int = 4,
    lambda_weight: float = 0.5,
    epsilon: float = 1e-5,
) -> ParentScore:
    """PARENT of tokenized ``prediction`` against one tokenized ``reference`` and ``table``."""
    table_tokens = {token for attribute, value in table for token in (*attribute, *value)}

    def entailed(ngram: tuple[str, ...]) -> float:
        return sum(token in table_tokens for token in ngram) / len(ngram)

    precisions, reference_recalls = [], []
    for n in range(1, max_order + 1):
        predicted, referenced = ngram_counts(prediction, n), ngram_counts(reference, n)
        correct = 0.0
        for ngram, count in predicted.items():
            in_reference = min(1.0, referenced[ngram] / count)
            correct += count * (in_reference + (1.0 - in_reference) * entailed(ngram))
        total = sum(predicted.values())
        precisions.append(correct / total if total else 0.0)

        weights = {ngram: entailed(ngram) for ngram in referenced}
        to_recall = sum(count * weights[ngram] for ngram, count in referenced.items())
        recalled = sum(min(count, predicted[ngram]) * weights[ngram] for ngram, count in referenced.items())
        # No reference n-gram is supported by the table: there is nothing to recall.
        reference_recalls.append(recalled / to_recall if to_recall else 1.0)

    precision = _geometric_mean(precisions, epsilon)
    reference_recall = _geometric_mean(reference_recalls, epsilon)
    table_recall = mean([lcs_length(value, prediction) / len(value) for _, value in table])
    recall = reference_recall ** (1.0 - lambda_weight) * max(table_recall, epsilon) ** lambda_weight
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return ParentScore(precision, recall, f1)


class Parent(Metric):
    """PARENT precision, recall and F1 against ToTTo's highlighted cells (``meta_infos``)."""

    outputs: ClassVar[Mapping[str, Output]] = {
        "table_to_text/parent_precision": Output(display="PARENT precision"),
        "table_to_text/parent_recall": Output(display="PARENT recall"),
        "table_to_text/parent_f1": Output(display="PARENT F1"),
    }

    def __init__(
        self, max_order: PositiveInt = 4, lambda_weight: UnitInterval = 0.5, epsilon: PositiveFloat = 1e-5
    ):
        """``lambda_weight`` weighs table recall against reference recall; ``epsilon`` smooths zeros."""
        self._options = {"max_order": max_order, "lambda_weight": lambda_weight, "epsilon": epsilon}

    def compute(
        self,
        prompt_texts: list[str],
        generated_texts: list[str],
        reference_texts: list[list[str]],
        meta_infos: list[dict[str, Any]] | None = None,
        model: Any = None,
        split_name: str | None = None,
    ) -> MetricScores:
        """PARENT under ``table_to_text/parent_{precision,recall,f1}``."""
        require_aligned(generated_texts, reference_texts)
        tables = _tables(meta_infos, len(generated_texts))
        best = [
            max(
                (parent_score(tokenize(text), tokenize(ref), table, **self._options) for ref in refs),
                key=lambda score: score.f1,
            )
            for text, refs, table in zip(generated_texts, reference_texts, tables, strict=True)
        ]
        columns = {
            "precision": [s.precision for s in best],
            "recall": [s.recall for s in best],
            "f1": [s.f1 for s in best],
        }
        return {f"table_to_text/parent_{name}": (values, mean(values)) for name, values in columns.items()}


def _tables(meta_infos: list[dict[str, Any]] | None, count: int) -> list[list[Record]]:
    fix = "PARENT needs each sample's table: use it on ToTTo rows, whose meta has highlighted_cell_details"
    if meta_infos is None or len(meta_infos) != count:
        raise GrueError("PARENT got no meta_infos (or not one per sample)", key="meta", fix=fix)
    missing = [i for i, meta in enumerate(meta_infos) if "highlighted_cell_details" not in meta]
    if missing:
        key = "meta.highlighted_cell_details"
        raise GrueError(f"samples {missing[:5]} have no highlighted_cell_details", key=key, fix=fix)
    return [table_from_cells(meta["highlighted_cell_details"]) for meta in meta_infos]
