"""Diversity statistics against values counted by hand."""

import math

import pytest

from grue_bench.metrics.diversity import Diversity, entropy_bits, msttr, ngram_counts

# Tokens: "a b a" | "b c".  Unigrams a:2 b:2 c:1 (5).  Bigrams (a b) (b a) (b c) (3, none across texts).
# Trigrams: (a b a) only.  No 4-grams.
TEXTS = ["a b a", "b c"]


def test_diversity_values_counted_by_hand():
    result = Diversity().compute(["", ""], TEXTS, [[""], [""]])
    expected = {
        "distinct-1": 3 / 5,
        "distinct-2": 3 / 3,
        "unique-1": 1.0,  # only c occurs once
        "unique-2": 3.0,
        "entropy-1": -(2 * 0.4 * math.log2(0.4) + 0.2 * math.log2(0.2)),  # = 1.5219...
        "entropy-2": math.log2(3),
        "entropy-3": 0.0,
        "entropy-4": 0.0,
        "msttr-100": 3 / 5,  # fewer than 100 tokens: one partial window
        "vocab_size": 3.0,
    }
    assert set(result) == {f"diversity_metrics/{k}" for k in [*expected, "mean_pred_length"]}
    for name, value in expected.items():
        per_sample, corpus = result[f"diversity_metrics/{name}"]
        assert per_sample is None and corpus == pytest.approx(value), name
    assert result["diversity_metrics/mean_pred_length"] == ([3.0, 2.0], 2.5)


def test_ngrams_do_not_cross_texts():
    assert ngram_counts([["a", "b"], ["c"]], 2) == {("a", "b"): 1}


def test_entropy_is_in_bits():
    assert entropy_bits(ngram_counts([["x", "y", "z", "w"]], 1)) == 2.0  # four equally likely tokens
    assert entropy_bits(ngram_counts([["x", "x"]], 1)) == 0.0


def test_msttr_averages_full_windows_and_drops_the_tail():
    tokens = ["a", "b", "a", "b", "c"]
    assert msttr(tokens, window=2) == 1.0  # [a b] [a b]; [c] dropped
    assert msttr(tokens, window=3) == pytest.approx(2 / 3)  # [a b a]; [b c] dropped
    assert msttr(["w"] * 50 + [str(i) for i in range(150)], window=100) == pytest.approx((51 / 100 + 1.0) / 2)
    result = Diversity(window=2).compute(["", ""], TEXTS, [[""], [""]])
    assert result["diversity_metrics/msttr-2"] == (None, 1.0)


def test_empty_predictions_give_zeros():
    result = Diversity().compute(["", ""], ["", ""], [[""], [""]])
    assert all(corpus == 0.0 for _, corpus in result.values())
