"""frozen_casts: a frozen weight is cast to the autocast type once, with the numbers autocast's
own cast gives, bit for bit."""

import copy

import torch
from torch import nn

from grue_bench.rl.adapters import add_adapter
from grue_bench.rl.frozen_casts import CastOnceLinear, autocast_weight, cast_frozen_weights_once
from grue_bench.rl.hparams import PeftSettings
from grue_bench.rl.lean_backward import keep_less_for_backward

from .test_lean_backward import gradients, token_ids
from .tiny_lm import tiny_llama

BF16 = {"device_type": "cpu", "dtype": torch.bfloat16}


def _frozen_pair() -> tuple[nn.Linear, CastOnceLinear]:
    torch.manual_seed(0)
    plain = nn.Linear(8, 4).requires_grad_(False)
    once = copy.deepcopy(plain)
    cast_frozen_weights_once(once)
    return plain, once


def test_a_frozen_weight_is_cast_once_and_gives_autocasts_numbers():
    plain, once = _frozen_pair()
    x = torch.randn(3, 8)
    with torch.autocast(**BF16):
        first = autocast_weight(once.weight)
        assert first.dtype == torch.bfloat16 and autocast_weight(once.weight) is first
        assert torch.equal(once(x), plain(x))
    with torch.autocast(**BF16):  # a later autocast region: the same cast
        assert autocast_weight(once.weight) is first


def test_a_weight_changed_in_place_is_cast_anew():
    plain, once = _frozen_pair()
    x = torch.randn(3, 8)
    with torch.autocast(**BF16):
        stale = autocast_weight(once.weight)
        with torch.no_grad():
            for layer in (plain, once):
                layer.weight.mul_(3.0)  # as NLPO's refresh loads new weights into its masking model
        assert autocast_weight(once.weight) is not stale
        assert torch.equal(once(x), plain(x))


def test_trained_weights_and_float32_are_left_to_autocast():
    layer = nn.Linear(8, 4)
    with torch.autocast(**BF16):
        assert autocast_weight(layer.weight) is layer.weight  # autocast caches a trained leaf itself
    layer.requires_grad_(False)
    assert autocast_weight(layer.weight) is layer.weight  # no autocast: nothing to cast


def test_a_cast_made_under_inference_mode_serves_a_training_pass():
    plain, once = _frozen_pair()
    x = torch.randn(3, 8)
    with torch.autocast(**BF16):
        with torch.inference_mode():  # the reference pass comes first in an iteration
            once(x)
        grads = []
        for layer in (plain, once):
            inputs = x.clone().requires_grad_(True)
            layer(inputs).float().sum().backward()
            grads.append(inputs.grad)
    assert torch.equal(grads[0], grads[1])


def test_a_lora_lm_in_bf16_has_the_same_loss_and_gradients_with_its_base_cast_once():
    lora = PeftSettings(r=4, lora_alpha=8, lora_dropout=0.0)
    plain = add_adapter(tiny_llama(), "causal", lora, key="test")
    once = copy.deepcopy(plain)
    cast_frozen_weights_once(once)
    for lm in (plain, once):
        keep_less_for_backward(lm)
    assert any(isinstance(module, CastOnceLinear) for module in once.modules())
    ids = token_ids(plain)
    for _ in range(2):  # the second pass uses the casts the first one made
        loss, grads = gradients(plain, ids, bf16=True)
        once_loss, once_grads = gradients(once, ids, bf16=True)
        assert torch.equal(loss, once_loss)
        assert grads.keys() == once_grads.keys() and all("lora" in name for name in grads)
        assert all(torch.equal(grads[name], once_grads[name]) for name in grads)
