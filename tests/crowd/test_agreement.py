"""Krippendorff's alpha against a hand-worked example and the published one."""

from __future__ import annotations

import math

import pytest

from grue_bench.crowd.agreement import krippendorff_alpha


def test_hand_worked_ordinal_example():
    # Units (1,1) (1,2) (2,3), two coders each. Ordered pairs: 1-1 twice, 1-2, 2-1, 2-3, 3-2, so the
    # coincidences are o11=2 o12=o21=1 o23=o32=1 and n1=3 n2=2 n3=1, n=6. Ordinal distances:
    # d(1,2) = (3+2 - (3+2)/2)^2 = 6.25, d(2,3) = (2+1 - (2+1)/2)^2 = 2.25, d(1,3) = (6 - (3+1)/2)^2 = 16.
    # Observed: 2*6.25 + 2*2.25 = 17. Expected: 2 * (3*2*6.25 + 2*1*2.25 + 3*1*16) = 180.
    # alpha = 1 - (n - 1) * 17 / 180 = 1 - 85/180 = 19/36.
    assert krippendorff_alpha([[1, 1], [1, 2], [2, 3]]) == pytest.approx(19 / 36)


def test_units_with_one_value_are_left_out_and_order_does_not_matter():
    units = [[1, 1], [2, 1], [3, 2], [5], [4]]
    assert krippendorff_alpha(units) == pytest.approx(19 / 36)


# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability": 4 observers, 12 units, values
# 1-5 with missing ones (None); published: nominal .743, ordinal .815, interval .849.
PUBLISHED = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
    [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
]


@pytest.mark.parametrize(("metric", "alpha"), [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849)])
def test_published_example(metric, alpha):
    units = [[row[unit] for row in PUBLISHED if row[unit] is not None] for unit in range(12)]
    assert krippendorff_alpha(units, metric) == pytest.approx(alpha, abs=5e-4)


def test_perfect_agreement_is_one_and_undefined_cases_are_nan():
    assert krippendorff_alpha([[1, 1, 1], [3, 3], [5, 5]]) == pytest.approx(1.0)
    assert math.isnan(krippendorff_alpha([[4], [2]]))  # nothing pairable
    assert math.isnan(krippendorff_alpha([[3, 3], [3, 3]]))  # one value throughout: no variation


def test_systematic_disagreement_is_below_zero():
    assert krippendorff_alpha([[1, 5], [5, 1], [2, 4], [4, 2]]) < 0
