"""CIDEr-D: agreement with pycocoevalcap, ceilings and floors."""

import pytest
from pycocoevalcap.cider.cider import Cider as CocoCider

from grue_bench.metrics.cider import Cider, coco_tokenize

PREDICTIONS = ["A man rides a horse on the beach.", "Two kids play soccer in a park", "the cat sleeps"]
REFERENCES = [
    ["A man is riding a horse along the beach.", "Someone rides a horse on the sand."],
    ["Two children are playing football in the park."],
    ["A cat is sleeping on the sofa.", "The cat sleeps.", "A kitten naps."],
]


def cider(metric: Cider, predictions: list[str], references: list[list[str]]):
    return metric.compute([""] * len(predictions), predictions, references)["lexical/cider"]


def test_coco_tokenize_lowercases_and_drops_punctuation():
    assert coco_tokenize("A dog, running. Isn't it?") == "a dog running is n't it"


@pytest.mark.parametrize("coco_tokenization", [True, False])
def test_cider_equals_pycocoevalcap(coco_tokenization: bool):
    prepare = coco_tokenize if coco_tokenization else str
    gts = {i: [prepare(r) for r in refs] for i, refs in enumerate(REFERENCES)}
    res = {i: [prepare(p)] for i, p in enumerate(PREDICTIONS)}
    corpus, per_sample = CocoCider().compute_score(gts, res)
    result = cider(Cider(coco_tokenization=coco_tokenization), PREDICTIONS, REFERENCES)
    assert result == (list(per_sample), corpus)


def test_predictions_equal_to_references_score_high_and_unrelated_ones_zero():
    ceiling = cider(Cider(), [refs[0] for refs in REFERENCES], REFERENCES)
    assert ceiling[1] > 1.0 and all(score > 0 for score in ceiling[0])
    floor = cider(Cider(), ["", "zebra quantum", "purple xylophone"], REFERENCES)
    assert floor == ([0.0, 0.0, 0.0], 0.0)


def test_one_sample_scores_zero_because_idf_comes_from_the_corpus():
    # Documented behaviour of CIDEr: with a single sample every n-gram has IDF log(1/1) = 0.
    assert cider(Cider(), [REFERENCES[0][0]], REFERENCES[:1]) == ([0.0], 0.0)
