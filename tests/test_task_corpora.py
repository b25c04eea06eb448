"""The synthetic tasks' generated corpora (their ``corpus`` hooks) and ``datapools.task_corpus``."""

from __future__ import annotations

import re

from grue_bench import plugins
from grue_bench.datapools import task_corpus
from grue_bench.metrics.synthetic import DATE_PATTERN, increasing_numbers_fraction

increasing_numbers_corpus = plugins.TASKS.get("increasing_numbers").resolve("hooks:corpus")
dates_corpus = plugins.TASKS.get("dates").resolve("hooks:corpus")


def test_synthetic_corpora_are_deterministic_and_do_not_solve_the_task():
    numbers = increasing_numbers_corpus(500, seed=3)
    assert numbers == increasing_numbers_corpus(500, seed=3) != increasing_numbers_corpus(500, seed=4)
    assert all(re.search(r"\d", text) for text in numbers)
    mostly_sorted = sum(increasing_numbers_fraction(text, 20) > 0.5 for text in numbers)
    assert mostly_sorted < 0.2 * len(numbers)

    dates = dates_corpus(1000, seed=3)
    assert dates == dates_corpus(1000, seed=3)
    share = sum(bool(DATE_PATTERN.search(text)) for text in dates) / len(dates)
    assert 0.1 <= share <= 0.2


def test_task_corpus_gives_synthetic_text_for_the_synthetic_tasks():
    assert task_corpus("increasing_numbers") == increasing_numbers_corpus()
    assert task_corpus("dates") == dates_corpus()
