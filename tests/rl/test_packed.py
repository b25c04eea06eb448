"""bf16 decoding with packed weights (``grue_bench/rl/packed.py``): the same numbers as autocast's
own products, only where those are oneDNN bf16 products, and the layers as they were afterwards."""

import pytest
import torch

from grue_bench.rl import packed
from grue_bench.rl.packed import applies, packed_linears
from grue_bench.rl.rollout import GenerationSettings, generate

from .tiny_lm import tiny_llama, word_tokenizer

needs_onednn = pytest.mark.skipif(
    not torch.backends.mkldnn.is_available() or not hasattr(torch.ops.mkldnn, "_reorder_linear_weight"),
    reason="oneDNN's linear ops are not in this torch build",
)


@needs_onednn
@pytest.mark.parametrize("bias", [False, True])
def test_a_packed_layer_computes_what_autocast_computes(bias):
    torch.manual_seed(0)
    layer = torch.nn.Linear(24, 40, bias=bias)
    x = torch.randn(2, 5, 24)
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        plain = layer(x)
        with packed_linears(layer, rows=2):
            assert "forward" in layer.__dict__  # packed within the block
            ours = layer(x)
    assert ours.dtype == plain.dtype == torch.bfloat16 and torch.equal(ours, plain)
    assert "forward" not in layer.__dict__  # its own forward back


@needs_onednn
@pytest.mark.parametrize("tie", [True, False])
def test_sampling_with_packed_weights_draws_the_same_tokens_and_log_probs(tie, monkeypatch):
    tokenizer, lm = word_tokenizer(), tiny_llama(tie=tie).eval()
    settings = GenerationSettings(8, "left", 6, False, {"do_sample": True, "top_k": 0})

    def sampled():
        torch.manual_seed(3)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return generate(lm, tokenizer, "causal", ["1 2", "the dog runs 4 5", "7"], settings, "cpu")

    packs, pack = [], packed._packed_forward
    monkeypatch.setattr(
        packed, "_packed_forward", lambda layer, rows: packs.append(layer) or pack(layer, rows)
    )
    ours = sampled()
    assert len(packs) == 2 * 7 + 1  # each layer's 7 linear layers, and the head (tied or not)
    monkeypatch.setattr(packed, "applies", lambda lm: False)
    plain = sampled()
    assert torch.equal(ours.tokens.response_ids, plain.tokens.response_ids)
    assert torch.equal(ours.logprobs, plain.logprobs) and ours.texts == plain.texts


def test_it_packs_nothing_outside_cpu_bf16_autocast_without_gradients():
    layer = torch.nn.Linear(4, 4)
    with torch.no_grad():
        assert not applies(layer)  # float32: MKL's products, not oneDNN's
        with torch.autocast("cpu", dtype=torch.bfloat16):
            assert applies(layer) == torch.backends.mkldnn.is_available()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert not applies(layer)  # a gradient would need autograd through the packed product
        with packed_linears(layer, rows=1):
            assert "forward" not in layer.__dict__


@needs_onednn
def test_a_layer_whose_forward_was_replaced_keeps_its_replacement():
    layer = torch.nn.Linear(4, 4)
    hooked = layer.forward
    layer.forward = hooked  # what accelerate's hooks do
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16), packed_linears(layer, rows=1):
        assert layer.forward is hooked
    assert layer.forward is hooked
