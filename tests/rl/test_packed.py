"""Decoding with packed weights (``grue_bench/rl/packed.py``): in bf16 the same numbers as autocast's
own products, in float32 the same to rounding, only on a CPU without gradients, and the layers as
they were afterwards."""

import pytest
import torch
from conftest import NEEDS_NATIVE_BF16

from grue_bench.rl import packed
from grue_bench.rl.packed import FLOAT32_PACKED_ROWS, packed_dtype, packed_linears
from grue_bench.rl.precision import bf16_supported
from grue_bench.rl.rollout import GenerationSettings, generate

from .tiny_lm import tiny_llama, word_tokenizer

needs_onednn = pytest.mark.skipif(
    not torch.backends.mkldnn.is_available() or not hasattr(torch.ops.mkldnn, "_reorder_linear_weight"),
    reason="oneDNN's linear ops are not in this torch build",
)


@needs_onednn
@NEEDS_NATIVE_BF16
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
@NEEDS_NATIVE_BF16
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
        packed,
        "_packed_forward",
        lambda layer, rows, dtype: packs.append(layer) or pack(layer, rows, dtype),
    )
    ours = sampled()
    assert len(packs) == 2 * 7 + 1  # each layer's 7 linear layers, and the head (tied or not)
    monkeypatch.setattr(packed, "packed_dtype", lambda lm: None)
    plain = sampled()
    assert torch.equal(ours.tokens.response_ids, plain.tokens.response_ids)
    assert torch.equal(ours.logprobs, plain.logprobs) and ours.texts == plain.texts


@needs_onednn
def test_a_packed_float32_layer_computes_mkls_product_to_rounding_and_long_inputs_as_mkl():
    torch.manual_seed(0)
    layer = torch.nn.Linear(576, 1536)
    short, long = torch.randn(16, 576), torch.randn(FLOAT32_PACKED_ROWS + 1, 576)
    with torch.no_grad():
        plain_short, plain_long = layer(short), layer(long)
        exact = torch.nn.functional.linear(short.double(), layer.weight.double(), layer.bias.double())
        with packed_linears(layer, rows=16):
            assert "forward" in layer.__dict__
            ours_short, ours_long = layer(short), layer(long)
    assert ours_short.dtype == torch.float32
    assert torch.allclose(ours_short, plain_short, rtol=0, atol=1e-5)
    assert (ours_short.double() - exact).abs().max() < 1e-5  # float32 rounding, as MKL's
    assert torch.equal(ours_long, plain_long)  # over FLOAT32_PACKED_ROWS rows: MKL's own product


@needs_onednn
def test_float32_sampling_with_packed_weights_draws_the_same_tokens_and_log_probs_to_rounding(monkeypatch):
    tokenizer, lm = word_tokenizer(), tiny_llama().eval()
    settings = GenerationSettings(8, "left", 6, False, {"do_sample": True, "top_k": 0})

    def sampled():
        torch.manual_seed(3)
        return generate(lm, tokenizer, "causal", ["1 2", "the dog runs 4 5", "7"], settings, "cpu")

    ours = sampled()
    monkeypatch.setattr(packed, "packed_dtype", lambda lm: None)
    plain = sampled()
    assert torch.equal(ours.tokens.response_ids, plain.tokens.response_ids) and ours.texts == plain.texts
    assert torch.allclose(ours.logprobs, plain.logprobs, rtol=0, atol=1e-5)


def test_it_packs_only_on_a_cpu_without_gradients_in_bf16_or_float32():
    layer = torch.nn.Linear(4, 4)
    onednn = torch.float32 if torch.backends.mkldnn.is_available() else None
    native_bf16 = onednn and bf16_supported(torch.device("cpu"))
    with torch.no_grad():
        assert packed_dtype(layer) == onednn
        with torch.autocast("cpu", dtype=torch.bfloat16):
            assert packed_dtype(layer) == (torch.bfloat16 if native_bf16 else None)
        with torch.autocast("cpu", dtype=torch.float16):
            assert packed_dtype(layer) is None  # fp16 autocast's own products
        with packed_linears(layer.to(torch.bfloat16), rows=1):
            assert "forward" not in layer.__dict__  # float32 packing leaves other weights alone
    assert packed_dtype(layer) is None  # a gradient would need autograd through the packed product
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
