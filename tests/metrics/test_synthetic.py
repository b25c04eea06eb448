"""RL4LMs's synthetic metrics: the sanity-check rewards on evaluation texts, with their keys."""

import pytest

from grue_bench.metrics.synthetic import DatesInText, IncreasingNumbersInText


def test_increasing_numbers_scores_each_text_and_averages():
    texts = ["1 2 3 4", "5 3 9", "no numbers here", "1 2 x 3"]
    scores = IncreasingNumbersInText(min_tokens=4).compute([""] * 4, texts, [[]] * 4)
    per_sample, corpus = scores["synthetic/increasing_numbers_in_text"]
    # run of increasing numbers over max(tokens, min_tokens / 2): 4/4, 1/3, 0, 3/4
    assert per_sample == pytest.approx([1.0, 1 / 3, 0.0, 0.75])
    assert corpus == pytest.approx((1.0 + 1 / 3 + 0.75) / 4)


def test_increasing_numbers_counts_short_texts_against_half_of_min_tokens():
    scores = IncreasingNumbersInText(min_tokens=20).compute([""], ["1 2"], [[]])
    per_sample, _ = scores["synthetic/increasing_numbers_in_text"]
    assert per_sample == [pytest.approx(2 / 10)]


def test_dates_finds_an_iso_date_anywhere():
    texts = ["it opened on 2021-05-12 at noon", "on 12 May 2021", "2021-5-12"]
    per_sample, corpus = DatesInText().compute([""] * 3, texts, [[]] * 3)["synthetic/dates_in_text"]
    assert per_sample == [1.0, 0.0, 0.0]
    assert corpus == pytest.approx(1 / 3)
