"""Lexical metrics: ceilings, floors, and exact agreement with rouge-score, nltk and sacrebleu (whose
scores are reported / 100, as RL4LMs reports them)."""

import math
from typing import get_args

import pytest
import sacrebleu
from nltk.translate.bleu_score import SmoothingFunction, corpus_bleu, sentence_bleu
from rouge_score import rouge_scorer

from grue_bench import plugins
from grue_bench.errors import GrueError
from grue_bench.metrics.lexical import (
    Bleu,
    ChrF,
    Rouge,
    RougeLMax,
    SacreBleu,
    SacreTokenizer,
    Ter,
    reference_streams,
)
from grue_bench.plugins.components import build

PREDICTIONS = ["the cat sat on the mat", "a dog barked loudly at the moon", "it rained all day long"]
# Different numbers of references per sample, as in CommonGen and ToTTo.
REFERENCES = [
    ["the cat is sitting on the mat", "the cat sat on a mat"],
    ["the dog barked at the moon"],
    ["rain fell the whole day", "it was raining all day", "all day it rained"],
]
PAIRS = list(zip(PREDICTIONS, REFERENCES, strict=True))


def score(metric, predictions, references):
    return metric.compute([""] * len(predictions), predictions, references)


def test_predictions_equal_to_references_reach_the_ceiling():
    refs = [[r[0]] for r in REFERENCES]
    preds = [r[0] for r in REFERENCES]
    rouge = score(Rouge(), preds, refs)
    for key in ("rouge1", "rouge2", "rougeL", "rougeLsum"):
        assert rouge[f"lexical/rouge_{key}"] == ([1.0, 1.0, 1.0], 1.0)
    assert score(RougeLMax(), preds, refs)["lexical/rouge_l_max"] == ([1.0, 1.0, 1.0], 1.0)
    assert score(Bleu(), preds, refs)["lexical/bleu"][1] == pytest.approx(1.0)
    assert score(SacreBleu(), preds, refs)["lexical/sacrebleu"][1] == pytest.approx(1.0)
    assert score(ChrF(), preds, refs)["lexical/chrf"][1] == pytest.approx(1.0)
    assert score(Ter(), preds, refs)["lexical/ter"] == ([0.0, 0.0, 0.0], 0.0)


@pytest.mark.parametrize("prediction", ["", "qqq zzz"])  # "qqq zzz" shares no character with the reference
def test_empty_or_unrelated_predictions_reach_the_floor(prediction):
    refs = [["the cat sat on the mat"]]
    for key, value in score(Rouge(), [prediction], refs).items():
        assert value == ([0.0], 0.0), key
    assert score(RougeLMax(), [prediction], refs)["lexical/rouge_l_max"] == ([0.0], 0.0)
    assert score(Bleu(), [prediction], refs)["lexical/bleu"][1] == pytest.approx(0.0)
    assert score(SacreBleu(), [prediction], refs)["lexical/sacrebleu"] == ([0.0], 0.0)
    assert score(ChrF(), [prediction], refs)["lexical/chrf"] == ([0.0], 0.0)
    # TER's floor is the worst case: every reference word must be edited.
    assert score(Ter(), [prediction], refs)["lexical/ter"][1] == 1.0


def test_rouge_is_the_best_reference_per_sample_and_the_mean_over_samples():
    scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL", "rougeLsum"], use_stemmer=True)
    expected = [scorer.score_multi(refs, pred) for pred, refs in PAIRS]
    result = score(Rouge(use_single_ref=False), PREDICTIONS, REFERENCES)
    for key in ("rouge1", "rouge2", "rougeL", "rougeLsum"):
        per_sample = [e[key].fmeasure for e in expected]
        assert result[f"lexical/rouge_{key}"] == (per_sample, sum(per_sample) / 3)


def test_rouge_scores_against_the_first_reference_by_default_as_rl4lms():
    """RL4LMs's RougeMetric defaults to ``use_single_ref=True``: only ``references[0]`` counts."""
    prediction, references = "the cat sat on a mat", ["a dog barked", "the cat sat on a mat"]
    # Against "a dog barked" only "a" is shared: P = 1/6, R = 1/3, F = 2PR / (P + R) = 2/9.
    per_sample, corpus = score(Rouge(), [prediction], [references])["lexical/rouge_rouge1"]
    assert per_sample == [pytest.approx(2 / 9)] and corpus == pytest.approx(2 / 9)
    best = score(Rouge(use_single_ref=False), [prediction], [references])["lexical/rouge_rouge1"]
    assert best == ([1.0], 1.0)


def test_rouge_lsum_sees_one_sentence_per_line():
    prediction, reference = "The cat sat. It was happy.", "It was happy. The cat sat on a mat."
    scorer = rouge_scorer.RougeScorer(["rougeLsum"], use_stemmer=True)
    split = scorer.score("It was happy.\nThe cat sat on a mat.", "The cat sat.\nIt was happy.")["rougeLsum"]
    unsplit = scorer.score(reference, prediction)["rougeLsum"]
    assert split.fmeasure != unsplit.fmeasure  # the case tells the two apart
    assert score(Rouge(), [prediction], [[reference]])["lexical/rouge_rougeLsum"][1] == split.fmeasure
    no_split = Rouge(split_sentences=False)
    assert score(no_split, [prediction], [[reference]])["lexical/rouge_rougeLsum"][1] == unsplit.fmeasure


CATS = "The cats were sitting on the mat."
CAT_REFERENCES = ["A cat sat on a mat.", "the cats are sitting on the mats"]
NARRATIVE_QA_ARGS = {  # RL4LMs's NarrativeQA configs
    "max_n": 4,
    "limit_length": True,
    "length_limit": 100,
    "length_limit_type": "words",
    "apply_avg": True,
    "apply_best": True,
    "alpha": 0.5,
    "weight_factor": 1.2,
    "stemming": True,
}


# Expected values are py-rouge 1.1's own, from rouge.Rouge(metrics=["rouge-l"], **args).get_scores(text,
# [reference])["rouge-l"]["f"] maximised over references (RL4LMs's RougeLMax); the comments derive them.
@pytest.mark.parametrize(
    ("args", "prediction", "references", "expected"),
    [
        # stemmed: "the cat were sit on the mat" vs "the cat are sit on the mat": LCS 6 of 7 and 7
        ({}, CATS, CAT_REFERENCES, 6 / 7),
        # unstemmed: LCS "the cats sitting on the" is 5 of 7 and 7
        ({"stemming": False}, CATS, CAT_REFERENCES, 5 / 7),
        # weight_factor takes the 1/1.2 power of P = R = 6/7
        ({"weight_factor": 1.2}, CATS, CAT_REFERENCES[1:], (6 / 7) ** (1 / 1.2)),
        (NARRATIVE_QA_ARGS, CATS, CAT_REFERENCES, (6 / 7) ** (1 / 1.2)),
        # P = 1, R = 1/2: F = P R / ((1 - alpha) P + alpha R) = 0.5 / 0.9
        ({"alpha": 0.2}, "the cat sat", ["the cat sat on the mat"], 0.5 / 0.9),
        # both cut to 3 words, "the cat were" vs "the cat are": 2 of 3
        ({"length_limit": 3, "length_limit_type": "words"}, CATS, CAT_REFERENCES[1:], 2 / 3),
        ({"length_limit": 3, "limit_length": False}, CATS, CAT_REFERENCES[1:], 6 / 7),
        # both cut to 12 characters, "the cat wer" vs "the cat are": 2 of 3
        ({"length_limit": 12}, CATS, CAT_REFERENCES[1:], 2 / 3),
        # sentences are lines, their LCS hits united: the, cat, sat, ran: P = 4/6, R = 4/5
        ({}, "the cat sat\nthe cat ran", ["the cat sat and ran"], 2 * (4 / 6) * (4 / 5) / (4 / 6 + 4 / 5)),
        # the text's one "cat" is used up by the reference's first line: P = 1, R = 1/2
        ({}, "cat", ["cat\ncat"], 2 / 3),
        # "cannot" stays one token, "can not" and nltk's "gon na" are two: LCS 5 of 6 and 7, F = 10/13
        ({}, "He cannot go, gonna stay.", ["he can not go; gonna stay"], 10 / 13),
    ],
)
def test_rouge_l_max_gives_py_rouges_numbers(args, prediction, references, expected):
    per_sample, corpus = score(RougeLMax(**args), [prediction], [references])["lexical/rouge_l_max"]
    assert per_sample == [pytest.approx(expected, abs=1e-12)] and corpus == pytest.approx(expected, abs=1e-12)


def test_rouge_l_max_is_the_mean_of_the_best_references():
    result = score(RougeLMax(), [CATS, "the cat sat"], [CAT_REFERENCES, ["the cat sat on the mat"]])
    per_sample, corpus = result["lexical/rouge_l_max"]
    assert per_sample == pytest.approx([6 / 7, 2 / 3]) and corpus == pytest.approx((6 / 7 + 2 / 3) / 2)


@pytest.mark.parametrize(
    ("args", "key"),
    [
        ({"apply_avg": False, "apply_best": False}, "apply_avg"),
        ({"length_limit_type": "lines"}, "length_limit_type"),
        ({"weight_factor": 0}, "weight_factor"),
        ({"max_n": 0}, "max_n"),
    ],
)
def test_rouge_l_max_refuses_what_py_rouge_or_rl4lms_cannot_use(args, key):
    with pytest.raises(GrueError, match=f"rouge_l_max.{key}"):
        build("metrics", "rouge_l_max", args, "rouge_l_max")


@pytest.mark.filterwarnings("ignore:\\s*The hypothesis contains 0 counts")
def test_bleu_equals_nltk_corpus_and_sentence_bleu():
    hyps = [p.split() for p in PREDICTIONS]
    refs = [[r.split() for r in rs] for rs in REFERENCES]
    per_sample, corpus = score(Bleu(), PREDICTIONS, REFERENCES)["lexical/bleu"]
    assert 0 < corpus == corpus_bleu(refs, hyps)
    smooth = SmoothingFunction().method1
    expected = [sentence_bleu(r, h, smoothing_function=smooth) for h, r in zip(hyps, refs, strict=True)]
    assert per_sample == expected


def test_reference_streams_pad_missing_references_with_none():
    assert reference_streams([["a", "b"], ["c"], ["d", "e", "f"]]) == [
        ["a", "c", "d"],
        ["b", None, "e"],
        [None, None, "f"],
    ]


def test_sacrebleu_chrf_and_ter_equal_sacrebleu_with_variable_references():
    streams = [
        [REFERENCES[0][0], REFERENCES[1][0], REFERENCES[2][0]],
        [REFERENCES[0][1], None, REFERENCES[2][1]],
        [None, None, REFERENCES[2][2]],
    ]
    bleu = score(SacreBleu(tokenize="intl"), PREDICTIONS, REFERENCES)["lexical/sacrebleu"]
    assert bleu[1] == sacrebleu.corpus_bleu(PREDICTIONS, streams, tokenize="intl").score / 100
    assert bleu[0] == [sacrebleu.sentence_bleu(p, r, tokenize="intl").score / 100 for p, r in PAIRS]
    chrf = score(ChrF(), PREDICTIONS, REFERENCES)["lexical/chrf"]
    assert chrf[1] == sacrebleu.corpus_chrf(PREDICTIONS, streams).score / 100
    assert chrf[0] == [sacrebleu.sentence_chrf(p, r).score / 100 for p, r in PAIRS]
    ter = score(Ter(), PREDICTIONS, REFERENCES)["lexical/ter"]
    assert ter[1] == sacrebleu.corpus_ter(PREDICTIONS, streams).score / 100
    assert ter[0] == [sacrebleu.sentence_ter(p, r).score / 100 for p, r in PAIRS]


# One hypothesis, one reference: clipped n-gram precisions 5/6, 3/5, 2/4, 1/3 and equal lengths (no
# brevity penalty); TER is one substitution ("the" -> "a") over the reference's 6 words.
HYPOTHESIS, REFERENCE = "the cat sat on the mat", "the cat sat on a mat"
HAND_BLEU = math.exp((math.log(5 / 6) + math.log(3 / 5) + math.log(2 / 4) + math.log(1 / 3)) / 4)
HAND_TER = 1 / 6


def test_sacrebleu_chrf_and_ter_are_sacrebleus_corpus_score_over_100_as_rl4lms():
    """RL4LMs reports sacrebleu's BLEU, chrF and TER / 100 (0-1), under the same keys."""
    bleu = score(SacreBleu(), [HYPOTHESIS], [[REFERENCE]])["lexical/sacrebleu"]
    assert bleu[1] == sacrebleu.corpus_bleu([HYPOTHESIS], [[REFERENCE]]).score / 100
    assert bleu[1] == pytest.approx(HAND_BLEU) and bleu[0] == [pytest.approx(HAND_BLEU)]
    chrf = score(ChrF(), [HYPOTHESIS], [[REFERENCE]])["lexical/chrf"]
    assert chrf[1] == sacrebleu.corpus_chrf([HYPOTHESIS], [[REFERENCE]]).score / 100
    assert 0 < chrf[1] < 1
    ter = score(Ter(), [HYPOTHESIS], [[REFERENCE]])["lexical/ter"]
    assert ter[1] == sacrebleu.corpus_ter([HYPOTHESIS], [[REFERENCE]]).score / 100
    assert ter == ([pytest.approx(HAND_TER)], pytest.approx(HAND_TER))


def test_sacrebleu_chrf_and_ter_rewards_keep_their_values():
    """The rewards read the 0-1 metrics with scale 1: sentence BLEU / 100, chrF / 100, 1 - TER / 100."""
    texts, references = [HYPOTHESIS, *PREDICTIONS], [[REFERENCE], *REFERENCES]

    def reward(reward_id):
        reward_fn = plugins.REWARDS.get(reward_id)()
        return reward_fn.batch([""] * len(texts), texts, references, [{}] * len(texts))

    pairs = list(zip(texts, references, strict=True))
    sacre_bleu = reward("sacre_bleu")
    assert sacre_bleu == pytest.approx([sacrebleu.sentence_bleu(t, r).score / 100 for t, r in pairs])
    assert sacre_bleu[0] == pytest.approx(HAND_BLEU)
    assert reward("chrf") == pytest.approx([sacrebleu.sentence_chrf(t, r).score / 100 for t, r in pairs])
    ter = reward("ter")
    assert ter == pytest.approx([1 - sacrebleu.sentence_ter(t, r).score / 100 for t, r in pairs])
    assert ter[0] == pytest.approx(1 - HAND_TER)


def test_sacrebleu_args_are_passed_through_and_unknown_ones_named():
    chrf_pp = score(ChrF(word_order=2), PREDICTIONS, REFERENCES)["lexical/chrf"][1]
    direct = sacrebleu.metrics.CHRF(word_order=2).corpus_score(PREDICTIONS, reference_streams(REFERENCES))
    assert chrf_pp == direct.score / 100
    with pytest.raises(GrueError, match=r"args\.tokenise: unknown key") as error:
        build("metrics", "sacre_bleu", {"tokenise": "intl"}, "args")
    assert "did you mean 'tokenize'?" in str(error.value)


def test_misaligned_inputs_are_refused():
    with pytest.raises(GrueError, match="2 generated texts but 1 reference"):
        score(Rouge(), ["a", "b"], [["a"]])
    with pytest.raises(GrueError, match="no reference"):
        score(SacreBleu(), ["a"], [[]])


def test_rouge_l_max_reads_rl4lms_true_with_a_stray_comma_and_refuses_false_so(run_grue, tmp_path, caplog):
    """RL4LMs's NarrativeQA configs write ``apply_best: True,`` (the YAML string 'True,')."""
    config = tmp_path / "c.yml"
    base = "task: narrative_qa\nalg: {id: ppo}\ntrain_evaluation:\n  metrics:\n    - id: rouge_l_max\n"
    config.write_text(base + "      args: {apply_best: 'True,'}\n")
    caplog.set_level("WARNING", logger="grue_bench.schema")
    code, _, err = run_grue("validate", str(config))
    assert code == 0, err
    assert "read 'True,' as true: a YAML boolean with a stray comma" in caplog.text
    config.write_text(base + "      args: {apply_best: 'False,'}\n")
    code, out, err = run_grue("validate", str(config))
    assert code == 2 and out == ""
    assert "train_evaluation.metrics.0.args.apply_best" in err
    assert "which RL4LMs would have read as true\n  fix: write false (no comma)" in err


def test_the_declared_sacrebleu_tokenizers_are_the_installed_sacrebleus():
    from sacrebleu.metrics.bleu import _TOKENIZERS

    assert set(get_args(SacreTokenizer)) == set(_TOKENIZERS)
