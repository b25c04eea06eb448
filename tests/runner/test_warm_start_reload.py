"""A run killed after its supervised warm start reloads the saved fit through load_base_lm."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from grue_bench.runner.run import _supervised_stage
from tests.rl.tiny_lm import tiny_causal, tiny_seq2seq, word_tokenizer


@pytest.mark.parametrize(("model_type", "build"), [("causal", tiny_causal), ("seq2seq", tiny_seq2seq)])
def test_a_saved_warm_start_is_reloaded_not_fitted_again(tmp_path, model_type, build):
    tokenizer = word_tokenizer()
    fitted = build(tokenizer, seed=3)
    fitted.save_pretrained(tmp_path / "warm_start")
    tokenizer.save_pretrained(tmp_path / "warm_start")
    spec = SimpleNamespace(alg="supervised+ppo")  # nothing is fitted: a fit would need its config
    evaluate = SimpleNamespace(model_type=model_type)
    reloaded = _supervised_stage(spec, None, evaluate, build(tokenizer, seed=4), tmp_path, "cpu")
    assert type(reloaded) is type(fitted)
    saved, loaded = fitted.state_dict(), reloaded.state_dict()
    assert saved.keys() == loaded.keys()
    assert all(torch.equal(saved[name], loaded[name]) for name in saved)
