"""BLEURT: clear errors without a checkpoint, and the loader run on a tiny randomly initialised one."""

import json

import pytest

from grue_bench.errors import MissingAssetError
from grue_bench.metrics.bleurt import Bleurt


@pytest.fixture(scope="module")
def tiny_checkpoint(tiny_sequence_classifier):
    """A 1-layer BERT regression model and a WordLevel tokenizer, saved as a BLEURT-style folder."""
    return tiny_sequence_classifier(num_labels=1)


def test_no_checkpoint_says_how_to_get_one():
    with pytest.raises(MissingAssetError) as error:
        Bleurt()
    message = str(error.value)
    assert "BLEURT needs a checkpoint" in message
    assert "lucadiliello/BLEURT-20-D12" in message
    assert "checkpoint: /path/to/it" in message


def test_a_missing_folder_is_named(tmp_path):
    missing = tmp_path / "BLEURT-20-D12"
    with pytest.raises(MissingAssetError) as error:
        Bleurt(checkpoint=str(missing))
    assert str(missing) in str(error.value)
    assert "does not exist" in str(error.value)


def test_a_hub_id_offline_fails_fast(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(MissingAssetError, match="lucadiliello/BLEURT-20-D12"):
        Bleurt(checkpoint="lucadiliello/BLEURT-20-D12")


def test_a_bleurt_architecture_checkpoint_needs_bleurt_pytorch(tmp_path):
    try:
        import bleurt_pytorch  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("bleurt-pytorch imports here; this checks the error without it")
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "bleurt"}))
    with pytest.raises(MissingAssetError, match="bleurt-pytorch"):
        Bleurt(checkpoint=str(tmp_path))


def test_the_loader_scores_with_a_tiny_checkpoint(tiny_checkpoint):
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    metric = Bleurt(checkpoint=str(tiny_checkpoint), batch_size=2)
    generated = ["the cat sat on the mat", "a dog barked"]
    references = [["the cat sat on the mat"], ["it rained all day long", "a dog barked at the moon"]]
    scores, corpus = metric.compute(["", ""], generated, references)["semantic/bleurt"]

    model = AutoModelForSequenceClassification.from_pretrained(tiny_checkpoint).eval()
    tokenizer = AutoTokenizer.from_pretrained(tiny_checkpoint)
    refs = ["the cat sat on the mat", "it rained all day long", "a dog barked at the moon"]
    cands = ["the cat sat on the mat", "a dog barked", "a dog barked"]
    with torch.no_grad():
        direct = model(**tokenizer(refs, cands, padding=True, return_tensors="pt")).logits.flatten().tolist()
    assert scores == pytest.approx([direct[0], max(direct[1], direct[2])], abs=1e-5)
    assert corpus == pytest.approx(sum(scores) / 2)
