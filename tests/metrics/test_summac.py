"""SummaC (RL4LMs ``summaCZS`` / ``summaCConv``) with a small stand-in NLI model built here: the
scores equal SummaC's aggregation computed by hand from that model's probabilities."""

from typing import get_args

import numpy as np
import pytest
import torch

from grue_bench.errors import MissingAssetError
from grue_bench.metrics import summac
from grue_bench.metrics.summac import NLI_MODELS, NLIModelName, SummaCConv, SummaCZS, split_text

SOURCE = "the cat sat on the mat\nit rained all day long\nwhat ?"  # "what ?" is too short: dropped
SUMMARY = "a dog barked at the moon\nthe cat sat on the mat"
MNLI = summac.NLI_MODELS["mnli"]  # entailment 2, contradiction 0


def _probabilities(folder, premise, hypothesis):
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForSequenceClassification.from_pretrained(folder).eval()
    with torch.no_grad():
        return torch.softmax(model(**tokenizer(premise, hypothesis, return_tensors="pt")).logits, -1)[0]


def test_paragraph_chunks_drop_short_lines():
    assert split_text(SOURCE, "paragraph") == ["the cat sat on the mat", "it rained all day long"]
    assert split_text("first part\n\nsecond part is here", "paragraph") == ["second part is here"]


@pytest.mark.parametrize(("use_ent", "use_con"), [(True, True), (True, False), (False, True)])
def test_zero_shot_score_is_max_over_source_then_mean_over_summary(
    tiny_sequence_classifier, use_ent, use_con
):
    folder = tiny_sequence_classifier(3)
    metric = SummaCZS(
        model_name="mnli", granularity="paragraph", use_ent=use_ent, use_con=use_con, model_path=str(folder)
    )
    sources, summaries = split_text(SOURCE, "paragraph"), split_text(SUMMARY, "paragraph")
    probs = [[_probabilities(folder, s, g) for g in summaries] for s in sources]
    entailed = [max(float(probs[i][j][MNLI.entailment]) for i in range(2)) for j in range(2)]
    contradicted = [max(float(probs[i][j][MNLI.contradiction]) for i in range(2)) for j in range(2)]
    if use_ent and use_con:
        per_chunk = [e - c for e, c in zip(entailed, contradicted, strict=True)]
    elif use_ent:
        per_chunk = entailed
    else:
        per_chunk = [1 - c for c in contradicted]
    scores = metric.compute([SOURCE], [SUMMARY], [[]])["consistency/summaczs"]
    assert scores[0] == [pytest.approx(np.mean(per_chunk), abs=1e-6)]


def test_a_text_without_chunks_scores_zero(tiny_sequence_classifier):
    metric = SummaCZS(granularity="paragraph", model_path=str(tiny_sequence_classifier(3)))
    assert metric.compute([SOURCE], ["short"], [[]])["consistency/summaczs"] == ([0.0], 0.0)


def test_offline_the_nli_model_is_named_and_the_offline_profiles_can_tell(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    missing = SummaCZS.missing_asset(model_name="vitc")
    assert isinstance(missing, MissingAssetError)
    assert "tals/albert-xlarge-vitaminc-mnli" in str(missing)
    with pytest.raises(MissingAssetError, match="tals/albert-xlarge-vitaminc-mnli"):
        SummaCZS(model_name="vitc")


def test_conv_refuses_to_score_without_its_trained_layers(tmp_path):
    with pytest.raises(MissingAssetError, match="randomly initialised") as error:
        SummaCConv()
    assert "summac_conv_vitc_sent_perc_e.bin" in str(error.value)
    assert SummaCConv.missing_asset(start_file=str(tmp_path / "none.bin")) is not None


class _FixedImager:
    """An imager whose probabilities are given: [3, source chunks, summary chunks]."""

    image_value = np.array(
        [
            [[0.9, 0.05], [0.2, 0.65]],  # entailment
            [[0.05, 0.9], [0.7, 0.3]],  # contradiction
            [[0.05, 0.05], [0.1, 0.05]],  # neutral
        ]
    )

    def __init__(self, *args, **kwargs):
        pass

    def image(self, source, summary):
        return self.image_value


def test_conv_histograms_each_summary_chunk_and_applies_the_trained_layers(tmp_path, monkeypatch):
    monkeypatch.setattr(summac, "NLIImager", _FixedImager)
    torch.manual_seed(0)
    mlp, final = torch.nn.Linear(4, 1), torch.nn.Linear(3, 2)
    state = {**{f"mlp.{k}": v for k, v in mlp.state_dict().items()}}
    state.update({f"layer_final.{k}": v for k, v in final.state_dict().items()})
    torch.save(state, tmp_path / "conv.bin")
    metric = SummaCConv(start_file=str(tmp_path / "conv.bin"), models=["mnli"], bins="even4", nli_labels="e")
    # entailment of summary chunk 0 over the source chunks: 0.9, 0.2 -> bins [0, .25) and [.75, 1]
    # chunk 1: 0.05 and 0.65 -> bins [0, .25) and [.5, .75)
    rows = torch.tensor([[1.0, 0, 0, 1], [1, 0, 1, 0]])
    with torch.no_grad():
        feature = mlp(rows)[:, 0].mean().repeat(3)
        expected = float(torch.softmax(final(feature), -1)[1])
    (scores, corpus) = metric.compute([SOURCE], [SUMMARY], [[]])["consistency/summacconv"]
    assert scores == [pytest.approx(expected, abs=1e-6)] and corpus == pytest.approx(expected, abs=1e-6)


def test_the_declared_nli_model_names_are_the_models_summac_knows():
    assert set(get_args(NLIModelName)) == set(NLI_MODELS)
