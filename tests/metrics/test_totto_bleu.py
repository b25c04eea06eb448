"""ToTTo's BLEU (RL4LMs ``bleu_totto``) against hand-computed corpus BLEU."""

import math

import pytest

from grue_bench.errors import GrueError
from grue_bench.metrics.totto_bleu import BleuToTTo

HYPOTHESIS = "The cat sat on the mat"
REFERENCE = "the cat sat on a mat"
# clipped n-gram precisions 5/6, 3/5, 2/4, 1/3; equal lengths, so no brevity penalty
BLEU = math.exp((math.log(5 / 6) + math.log(3 / 5) + math.log(2 / 4) + math.log(1 / 3)) / 4)


def _scores(texts, references, overlap):
    metas = [{"overlap_subset": flag} for flag in overlap]
    return BleuToTTo().compute([""] * len(texts), texts, references, metas)


def test_a_corpus_of_one_is_its_hand_computed_bleu_lower_cased_and_padded_with_null():
    scores = _scores([HYPOTHESIS], [[REFERENCE]], [False])
    assert scores["table_to_text/bleu_overall"] == (None, pytest.approx(BLEU, abs=1e-6))
    assert scores["table_to_text/bleu_non_overlap"] == (None, pytest.approx(BLEU, abs=1e-6))
    assert "table_to_text/bleu_overlap" not in scores  # no overlap sample in this split


def test_detokenized_text_matches_its_tokenized_reference():
    scores = _scores(["Herb Schmidt scored 25 goals ."], [["herb schmidt scored 25 goals."]], [True])
    assert scores["table_to_text/bleu_overall"][1] == pytest.approx(1.0)


def test_the_subsets_are_scored_on_their_own_samples():
    texts = [HYPOTHESIS, "a dog ran in the park today"]
    references = [[REFERENCE], ["a dog ran in the park today", "a dog ran"]]
    scores = _scores(texts, references, [False, True])
    assert scores["table_to_text/bleu_overlap"][1] == pytest.approx(1.0)
    assert scores["table_to_text/bleu_non_overlap"][1] == pytest.approx(BLEU, abs=1e-6)
    assert BLEU < scores["table_to_text/bleu_overall"][1] < 1.0


def test_samples_without_totto_flags_are_refused():
    with pytest.raises(GrueError, match="overlap_subset"):
        BleuToTTo().compute([""], ["a b"], [["a b"]], [{}])
