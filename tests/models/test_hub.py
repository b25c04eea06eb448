"""Hub ids and local folders: offline a hub id fails at once with a helpful error; a folder loads."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from transformers import GPT2Config, GPT2LMHeadModel

from grue_bench.errors import GrueError
from grue_bench.models import load_base_lm, tiny


@pytest.fixture(autouse=True)
def offline(models_cache: Path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def test_paper_profile_hub_id_offline_names_the_model_and_the_offline_profiles():
    with pytest.raises(GrueError) as error:
        load_base_lm("causal", profile="paper", model_name="gpt2")
    message = str(error.value)
    assert "'gpt2'" in message and "offline" in message
    assert "'tiny'" in message and "'small'" in message


def test_paper_profile_defaults_to_the_papers_models():
    with pytest.raises(GrueError, match="'t5-base'"):
        load_base_lm("seq2seq", profile="paper")


def test_missing_local_folder_is_reported_as_a_path(tmp_path):
    with pytest.raises(GrueError, match="does not exist"):
        load_base_lm("causal", model_name=str(tmp_path / "nowhere"))


def test_local_folder_loads_and_gets_a_pad_token_and_left_padding(tmp_path, imdb_texts, quick_configs):
    tokenizer = tiny.train_tokenizer(imdb_texts, "causal", quick_configs["causal"])
    tokenizer.pad_token = None  # like GPT-2: the loader must fall back to eos
    torch.manual_seed(0)
    model = GPT2LMHeadModel(
        GPT2Config(vocab_size=len(tokenizer), n_positions=64, n_embd=32, n_layer=1, n_head=2)
    )
    folder = tmp_path / "my-model"
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)

    lm = load_base_lm("causal", profile="paper", model_name=str(folder))

    assert lm.name == str(folder) and lm.model_type == "causal"
    assert lm.tokenizer.pad_token == lm.tokenizer.eos_token and lm.tokenizer.padding_side == "left"
    batch = lm.tokenizer(["a film", "the best film of the year"], return_tensors="pt", padding=True)
    out = lm.model.generate(
        **batch, max_new_tokens=3, do_sample=False, pad_token_id=lm.tokenizer.pad_token_id
    )
    assert out.shape == (2, batch["input_ids"].shape[1] + 3)


def test_causal_folder_asked_for_as_seq2seq_is_a_clear_error(tmp_path, imdb_texts, quick_configs):
    tokenizer = tiny.train_tokenizer(imdb_texts, "causal", quick_configs["causal"])
    folder = tmp_path / "causal-only"
    GPT2LMHeadModel(
        GPT2Config(vocab_size=len(tokenizer), n_positions=32, n_embd=16, n_layer=1, n_head=2)
    ).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    with pytest.raises(GrueError, match="cannot be loaded as a seq2seq LM"):
        load_base_lm("seq2seq", model_name=str(folder))
