"""Collapse flags: the statistics by hand on small cases, and the thresholds' reasons."""

from __future__ import annotations

import pytest

from grue_bench.report.collapse import Thresholds, output_stats

REFS = [["a b c d"], ["e f g h"], ["i j k l"], ["m n o p"]]


def test_healthy_outputs_are_not_flagged():
    stats = output_stats(["a b c", "e f x h", "i k l", "m n o p q"], REFS)
    assert stats.empty == 0 and stats.distinct == 1.0
    assert stats.length_ratio == pytest.approx((3 + 4 + 3 + 5) / 4 / 4)
    assert stats.repeated_4grams == 0.0
    assert stats.vocabulary == 15  # a b c e f x h i k l m n o p q
    assert stats.reasons() == [] and not stats.flagged


def test_empty_outputs_are_flagged_with_their_share():
    stats = output_stats(["", "", "a b c d", " "], REFS)
    assert stats.empty == 0.75
    assert stats.distinct == 0.5  # "", "a b c d"
    assert "75% empty outputs" in stats.reasons()


def test_one_output_for_every_input_is_flagged():
    stats = output_stats(["the cat sat"] * 4, REFS)
    assert stats.distinct == 0.25
    assert stats.reasons() == ["0.25 distinct outputs per input"]


def test_repetition_and_length_are_flagged():
    text = " ".join(["the"] * 14)  # 11 4-grams, 1 distinct; 14 words against 4
    stats = output_stats([text, text + " a", text + " b", text + " c"], REFS)
    assert stats.repeated_4grams == pytest.approx((10 / 11 + 3 * 10 / 12) / 4)
    assert stats.length_ratio == pytest.approx(14.75 / 4)
    assert stats.reasons() == ["length 3.69× the references'", "85% repeated 4-grams"]


def test_short_outputs_are_flagged_only_when_they_say_next_to_nothing():
    long_refs = [[" ".join(["word"] * 100)]] * 4
    stats = output_stats(["a fine and complete answer of nine words here"] * 3 + ["another one"], long_refs)
    assert stats.length_ratio < 0.3 and stats.mean_length == 7.25
    assert stats.reasons() == []  # the reference is no length target: 7 words say something
    stats = output_stats(["yes", "no", "ok", "fine"], long_refs)
    assert stats.reasons() == ["length 0.01× the references'"]


def test_thresholds_are_settable_and_tasks_without_references_have_no_length_ratio():
    stats = output_stats(["a", "b", "c", ""], [[], [], [], []])
    assert stats.length_ratio is None
    assert stats.reasons() == ["25% empty outputs"]
    assert stats.reasons(Thresholds(empty=0.3)) == []
