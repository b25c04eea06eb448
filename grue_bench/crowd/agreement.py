"""Krippendorff's alpha, written from its definition (Krippendorff, "Computing Krippendorff's
Alpha-Reliability", 2011).

Each unit (an item) holds the values its coders (workers) gave it; units with fewer than two values
cannot be paired and are left out. From the pairable units:

- the coincidence matrix ``o[c][k] = sum over units of (number of c-k pairs in the unit) / (m_u - 1)``,
  ordered pairs of values from different coders, ``m_u`` the unit's number of values;
- the marginals ``n_c = sum_k o[c][k]`` and ``n = sum_c n_c``;
- ``alpha = 1 - (n - 1) * sum_ck o[c][k] d2(c, k) / sum_ck n_c n_k d2(c, k)``.

The ordinal distance between ranks c <= k counts the values that lie between them:
``d2(c, k) = (sum_{g=c..k} n_g - (n_c + n_k) / 2) ** 2``. Nominal and interval distances are given
too, for checking against published examples.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Literal

Metric = Literal["nominal", "ordinal", "interval"]


def krippendorff_alpha(units: Iterable[Sequence[float]], metric: Metric = "ordinal") -> float:
    """Alpha over units given as the values their coders gave; nan when undefined (no pairable unit,
    or a single value used throughout)."""
    pairable = [list(values) for values in units if len(values) >= 2]
    categories = sorted({value for values in pairable for value in values})
    if len(categories) < 2:
        return math.nan
    rank = {value: index for index, value in enumerate(categories)}
    size = len(categories)
    coincidences = [[0.0] * size for _ in range(size)]
    for values in pairable:
        weight = 1.0 / (len(values) - 1)
        for i, first in enumerate(values):
            for j, second in enumerate(values):
                if i != j:
                    coincidences[rank[first]][rank[second]] += weight
    marginals = [sum(row) for row in coincidences]
    total = sum(marginals)
    distance = _distances(categories, marginals, metric)
    observed = sum(coincidences[c][k] * distance[c][k] for c in range(size) for k in range(size))
    expected = sum(marginals[c] * marginals[k] * distance[c][k] for c in range(size) for k in range(size))
    return 1.0 - (total - 1) * observed / expected


def _distances(categories: list[float], marginals: list[float], metric: Metric) -> list[list[float]]:
    """Squared distance between every two categories (indices into ``categories``)."""
    size = len(categories)
    if metric == "nominal":
        return [[float(c != k) for k in range(size)] for c in range(size)]
    if metric == "interval":
        return [[(categories[c] - categories[k]) ** 2 for k in range(size)] for c in range(size)]
    if metric != "ordinal":
        raise ValueError(f"unknown metric {metric!r}: use nominal, ordinal or interval")
    table = [[0.0] * size for _ in range(size)]
    for c in range(size):
        for k in range(c, size):
            between = sum(marginals[c : k + 1]) - (marginals[c] + marginals[k]) / 2
            table[c][k] = table[k][c] = between**2
    return table
