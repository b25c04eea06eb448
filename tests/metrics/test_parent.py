"""PARENT: values worked out by hand from the paper's definitions, and ToTTo rows end to end.

Tables below are records (attribute, value); T̄ is every token in them. Each case's comment
shows the arithmetic.
"""

import json
import math

import pytest

from grue_bench.errors import GrueError
from grue_bench.metrics.parent import Parent, lcs_length, parent_score, table_from_cells, tokenize
from grue_bench.paths import bundled_dir
from grue_bench.plugins.components import build

JOHN = [(("name",), ("john",)), (("age",), ("30",))]


def score(prediction: str, reference: str, table, **options):
    return parent_score(tokenize(prediction), tokenize(reference), table, **options)


def test_lcs_length():
    assert lcs_length(list("abcd"), list("acde")) == 3  # a, c, d
    assert lcs_length([], ["a"]) == 0


def test_divergent_words_lower_precision_and_both_recalls():
    # G = john is old, R = john is 30, T̄ = {name, john, age, 30}.
    # P1: john, is in R -> 1 each; old not in R and w(old) = 0 -> 0; P = 2/3.
    # R_ref: reference unigrams weighted by w: john 1, is 0, 30 1 -> recalled 1 of 2 -> 1/2.
    # R_table: john LCS 1/1, 30 LCS 0/1 -> 1/2.  R = (1/2)^0.5 (1/2)^0.5 = 1/2.
    # F = 2 (2/3)(1/2) / (2/3 + 1/2) = 4/7.
    result = score("john is old", "john is 30", JOHN, max_order=1)
    assert result.precision == pytest.approx(2 / 3)
    assert result.recall == pytest.approx(1 / 2)
    assert result.f1 == pytest.approx(4 / 7)


def test_table_supported_words_missing_from_the_reference_are_not_penalised():
    # G = john age 30, R = john is old: age and 30 are not in R but w = 1 (both in T̄) -> P = 1.
    # R_ref: only john has w > 0 and it is recalled -> 1.  R_table: john and 30 mentioned -> 1.
    result = score("john age 30", "john is old", JOHN, max_order=1)
    assert (result.precision, result.recall, result.f1) == pytest.approx((1.0, 1.0, 1.0))


def test_bigrams_use_the_share_of_table_tokens_and_the_geometric_mean():
    # G = john is 30, R = john is old.
    # P1 = (1 + 1 + w(30)=1) / 3 = 1.  P2: "john is" in R -> 1; "is 30" not, w = (0 + 1)/2 -> 0.5;
    # P2 = 1.5 / 2 = 0.75; P = sqrt(1 * 0.75).
    # R_ref1 = 1 (john); R_ref2: "john is" w = 0.5 recalled, "is old" w = 0 -> 0.5 / 0.5 = 1.
    # R_table = 1 (john and 30 in G).  R = 1.
    result = score("john is 30", "john is old", JOHN, max_order=2)
    precision = math.sqrt(0.75)
    assert result.precision == pytest.approx(precision)
    assert result.recall == pytest.approx(1.0)
    assert result.f1 == pytest.approx(2 * precision / (precision + 1))


def test_table_recall_is_the_lcs_share_of_each_value():
    # Table: team = new york knicks.  G = the knicks won, R = the new york knicks won.
    # P1 = 1 (every word in R).  R_ref: new, york, knicks have w = 1, only knicks is in G -> 1/3.
    # R_table = LCS(new york knicks, G) / 3 = 1/3.  R = 1/3;  F = 2 (1)(1/3) / (4/3) = 1/2.
    table = [(("team",), ("new", "york", "knicks"))]
    result = score("the knicks won", "the new york knicks won", table, max_order=1)
    assert (result.precision, result.recall, result.f1) == pytest.approx((1.0, 1 / 3, 1 / 2))


def test_lambda_weighs_table_recall_against_reference_recall():
    # As the first case plus city = paris: R_ref = 1/2, R_table = (1 + 0 + 0) / 3 = 1/3.
    table = [*JOHN, (("city",), ("paris",))]
    for weight in (0.2, 0.5, 0.9):
        result = score("john is old", "john is 30", table, max_order=1, lambda_weight=weight)
        recall = (1 / 2) ** (1 - weight) * (1 / 3) ** weight
        assert result.recall == pytest.approx(recall)
        assert result.f1 == pytest.approx(2 * (2 / 3) * recall / (2 / 3 + recall))


def test_repeated_ngrams_are_clipped_and_zeros_smoothed():
    # G = john john, R = john, table age = 30 (so w(john) = 0).
    # P1: #G(john) = 2, #R(john) = 1 -> P(in R) = 1/2 -> 2 * (1/2 + 1/2 * 0) / 2 = 1/2.
    # R_ref: no reference n-gram is entailed (denominator 0) -> nothing to recall -> 1.
    # R_table: 30 not mentioned -> 0, smoothed to epsilon -> R = 1^0.5 * epsilon^0.5.
    result = score("john john", "john", [(("age",), ("30",))], max_order=1, epsilon=1e-4)
    assert result.precision == pytest.approx(0.5)
    assert result.recall == pytest.approx(1e-2)


def cell(value: str, col: list[str], row: list[str] | None = None) -> dict:
    return {"value": value, "col_headers": col, "row_headers": row or [], "is_header": False}


def test_table_from_highlighted_cells_uses_headers_as_attributes():
    cells = [cell("Winner on Dec. 6", ["Status"], ["Viviane Araújo"]), cell("", ["Empty"])]
    assert table_from_cells(cells) == [
        (("status", "viviane", "araújo"), ("winner", "on", "dec", ".", "6")),
    ]


def test_parent_metric_keeps_the_best_reference_and_averages_samples():
    meta = {"highlighted_cell_details": [cell("john", ["name"]), cell("30", ["age"])]}
    result = Parent(max_order=1).compute(
        ["", ""], ["john is old", "john age 30"], [["paris", "john is 30"], ["john is old"]], [meta, meta]
    )
    assert result["table_to_text/parent_precision"] == (pytest.approx([2 / 3, 1.0]), pytest.approx(5 / 6))
    assert result["table_to_text/parent_recall"] == (pytest.approx([0.5, 1.0]), pytest.approx(0.75))
    assert result["table_to_text/parent_f1"] == (pytest.approx([4 / 7, 1.0]), pytest.approx((4 / 7 + 1) / 2))


def test_totto_rows_reach_the_ceiling_and_the_floor():
    path = bundled_dir("tasks") / "totto" / "data" / "test.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    metas, refs = [r["meta"] for r in rows], [r["references"] for r in rows]
    metric = Parent()
    ceiling = metric.compute([""] * len(rows), [r[0] for r in refs], refs, metas)
    assert ceiling["table_to_text/parent_precision"][1] == pytest.approx(1.0)
    assert ceiling["table_to_text/parent_f1"][1] > 0.9
    floor = metric.compute([""] * len(rows), [""] * len(rows), refs, metas)
    assert floor["table_to_text/parent_f1"][1] < 1e-4


def test_parent_needs_the_table_in_meta_infos():
    with pytest.raises(GrueError, match="highlighted_cell_details"):
        Parent().compute([""], ["a"], [["a"]], None)
    with pytest.raises(GrueError, match="highlighted_cell_details"):
        Parent().compute([""], ["a"], [["a"]], [{"example_id": "1"}])
    with pytest.raises(GrueError, match=r"args\.lambda_weight: Input should be less than or equal to 1"):
        build("metrics", "parent_totto", {"lambda_weight": 1.5}, "args")
