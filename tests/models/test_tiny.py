"""The tiny profile: a BPE tokenizer and a GPT-2/T5-style LM pretrained on a corpus, cached atomically."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
import torch

from grue_bench.errors import GrueError
from grue_bench.models import BaseLM, load_base_lm, pretrain, tiny
from grue_bench.models.cache import MARKER, read_entry

MODEL_TYPES = ["causal", "seq2seq"]


def same_weights(first: torch.nn.Module, second: torch.nn.Module) -> bool:
    a, b = first.state_dict(), second.state_dict()
    return a.keys() == b.keys() and all(a[key].equal(b[key]) for key in a)


@pytest.fixture(scope="module")
def trained(models_cache: Path, imdb_texts: list[str], quick_configs) -> dict[str, BaseLM]:
    """One quick tiny LM per model type, trained once into the shared test cache."""
    return {
        model_type: tiny.load_tiny(
            model_type, imdb_texts, corpus_id="imdb200", config=quick_configs[model_type]
        )
        for model_type in MODEL_TYPES
    }


@pytest.mark.slow
@pytest.mark.parametrize("model_type", MODEL_TYPES)
def test_pretraining_lowers_the_lm_loss(trained, imdb_texts, quick_configs, model_type):
    lm, config = trained[model_type], quick_configs[model_type]
    batches = pretrain.validation_batches(
        imdb_texts[::10], lm.tokenizer, model_type, tiny.pretrain_settings(config), seed=0
    )
    torch.manual_seed(1)
    untrained = type(lm.model)(lm.model.config).eval()
    before = pretrain.mean_loss(untrained, model_type, batches)
    after = pretrain.mean_loss(lm.model, model_type, batches)
    assert after < before - 0.75
    assert after < math.log(len(lm.tokenizer)) - 0.5  # well below a uniform guess
    record = read_entry(tiny.cache_path(model_type, imdb_texts, "imdb200", 0, config))
    assert record["validation_loss_after"] < record["validation_loss_before"]


def test_causal_tokenizer_starts_with_bos_and_pads_left(trained):
    tokenizer = trained["causal"].tokenizer
    assert tokenizer("")["input_ids"] == [tokenizer.bos_token_id]
    assert tokenizer.padding_side == "left"
    batch = tokenizer(["", "a good film"], padding=True)
    assert batch["input_ids"][0][-1] == tokenizer.bos_token_id
    assert batch["input_ids"][0][0] == tokenizer.pad_token_id
    assert tokenizer.decode(tokenizer("a good film")["input_ids"], skip_special_tokens=True) == "a good film"


def test_seq2seq_tokenizer_encodes_empty_text_as_eos(trained):
    lm = trained["seq2seq"]
    assert lm.tokenizer("")["input_ids"] == [lm.tokenizer.eos_token_id]
    assert lm.model.config.decoder_start_token_id == lm.tokenizer.pad_token_id
    assert lm.model.generation_config.decoder_start_token_id == lm.tokenizer.pad_token_id


def test_causal_batch_generation_with_left_padding_matches_one_by_one(trained):
    lm = trained["causal"]
    prompts = ["", "This movie", "I watched this film last night and"]
    batch = lm.tokenizer(prompts, return_tensors="pt", padding=True)
    with torch.no_grad():
        together = lm.model.generate(**batch, max_new_tokens=8, do_sample=False)
    width = batch["input_ids"].shape[1]
    for row, prompt in enumerate(prompts):
        alone_input = lm.tokenizer(prompt, return_tensors="pt")
        with torch.no_grad():
            alone = lm.model.generate(**alone_input, max_new_tokens=8, do_sample=False)
        new_alone = alone[0, alone_input["input_ids"].shape[1] :]
        assert together[row, width : width + len(new_alone)].tolist() == new_alone.tolist()
    texts = lm.tokenizer.batch_decode(together[:, width:], skip_special_tokens=True)
    assert any(text.strip() for text in texts)


def test_seq2seq_generates_from_empty_and_text_prompts(trained):
    lm = trained["seq2seq"]
    batch = lm.tokenizer(["", "This movie was"], return_tensors="pt", padding=True)
    torch.manual_seed(0)
    with torch.no_grad():
        out = lm.model.generate(**batch, max_new_tokens=10, do_sample=True, top_k=50)
    assert out.shape[0] == 2 and out[0, 0].item() == lm.tokenizer.pad_token_id
    assert all(text.strip() for text in lm.tokenizer.batch_decode(out, skip_special_tokens=True))


@pytest.mark.parametrize("model_type", MODEL_TYPES)
def test_second_load_comes_from_the_cache_without_training(
    trained, imdb_texts, quick_configs, monkeypatch, model_type
):
    def refuse(*args, **kwargs):
        raise AssertionError("retrained although the model is cached")

    monkeypatch.setattr(tiny, "train_tiny", refuse)
    again = tiny.load_tiny(model_type, imdb_texts, corpus_id="imdb200", config=quick_configs[model_type])
    assert same_weights(again.model, trained[model_type].model)
    assert again.name == trained[model_type].name
    assert re.fullmatch(rf"tiny-{model_type}/imdb200@[0-9a-f]{{8}}", again.name)
    assert again.tokenizer.get_vocab() == trained[model_type].tokenizer.get_vocab()


def test_half_written_entry_is_rebuilt_and_training_is_deterministic(
    trained, imdb_texts, quick_configs, tmp_path, monkeypatch
):
    # A fresh cache holding only a half-written entry where the causal model belongs.
    monkeypatch.setenv("GRUE_CACHE", str(tmp_path))
    path = tiny.cache_path("causal", imdb_texts, "imdb200", 0, quick_configs["causal"])
    path.mkdir(parents=True)
    (path / "config.json").write_text("{", encoding="utf-8")
    calls = []
    real_train = tiny.train_tiny
    monkeypatch.setattr(tiny, "train_tiny", lambda *args: calls.append(1) or real_train(*args))

    rebuilt = tiny.load_tiny("causal", imdb_texts, corpus_id="imdb200", config=quick_configs["causal"])

    assert calls == [1]
    assert (path / MARKER).is_file()
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no staging folder left behind
    assert same_weights(rebuilt.model, trained["causal"].model)  # same corpus, config and seed


def test_load_base_lm_tiny_uses_the_default_config_and_the_cache(
    trained, imdb_texts, quick_configs, monkeypatch
):
    monkeypatch.setitem(tiny.DEFAULT_CONFIGS, "causal", quick_configs["causal"])
    monkeypatch.setattr(tiny, "train_tiny", lambda *args: pytest.fail("should come from the cache"))
    lm = load_base_lm("causal", profile="tiny", corpus=lambda: imdb_texts, corpus_id="imdb200")
    assert lm.model_type == "causal" and lm.name == trained["causal"].name


def test_load_base_lm_rejects_bad_requests():
    with pytest.raises(GrueError, match="unknown profile 'huge'"):
        load_base_lm("causal", profile="huge")
    with pytest.raises(GrueError, match="unknown model type"):
        load_base_lm("encoder")
    with pytest.raises(GrueError, match="corpus"):
        load_base_lm("causal", profile="tiny")
