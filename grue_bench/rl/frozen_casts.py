"""Frozen weights cast to the autocast type once, not at every call.

Autocast keeps the half-precision copy of a weight it casts only if the weight is a trained leaf
(``requires_grad``), and only until the autocast region ends. A frozen weight (a LoRA adapter's
base, the KL's reference model, NLPO's masking model) is cast anew at every matrix product: on
this project's CPU a decoding step of SmolLM2-135M under bf16 autocast took 0.27 s with frozen
weights, 0.12 s with trained ones and 0.25 s in float32: the LoRA runs of the small profile paid
more for their frozen base in bf16 than in float32. ``autocast_weight`` keeps a frozen float32
weight's cast, made once per autocast type and per version of the weight (an in-place load, as
NLPO's refresh of its masking model, makes a new one); ``cast_frozen_weights_once`` gives an
LM's plain linear layers a forward that uses it. The cast is the one autocast makes, so the
numbers are the same bit for bit.

CPU only: a GPU casts at its memory bandwidth, and the copies (2 bytes a frozen parameter) would
take GPU memory a large model needs.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.weak import WeakIdKeyDictionary

_CASTS: WeakIdKeyDictionary = WeakIdKeyDictionary()
"""A frozen weight -> (its version when cast, the cast)."""


def autocast_weight(weight: torch.Tensor) -> torch.Tensor:
    """``weight`` as autocast would cast it for a matrix product here: a frozen float32 weight on
    the CPU, under CPU autocast, cast once and kept; any other weight as it is (autocast casts it)."""
    device_type = weight.device.type
    if (
        weight.requires_grad
        or device_type != "cpu"
        or weight.dtype != torch.float32
        or not torch.is_autocast_enabled(device_type)
        or torch.compiler.is_compiling()
    ):
        return weight
    dtype = torch.get_autocast_dtype(device_type)
    kept = _CASTS.get(weight)
    if kept is None or kept[0] != weight._version or kept[1].dtype != dtype:
        # a normal tensor even when first cast under inference mode (the reference pass): the
        # update's forward, which saves it for its backward pass, cannot use an inference tensor
        with torch.inference_mode(False):
            kept = (weight._version, weight.detach().to(dtype))
        _CASTS[weight] = kept
    return kept[1]


class CastOnceLinear(nn.Linear):
    """``nn.Linear`` whose frozen weight is cast under autocast once (``autocast_weight``)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(x, autocast_weight(self.weight), self.bias)


def cast_frozen_weights_once(lm: nn.Module) -> None:
    """Give ``lm``'s plain ``nn.Linear`` layers ``CastOnceLinear``'s forward (copies keep it)."""
    for module in lm.modules():
        if type(module) is nn.Linear:
            module.__class__ = CastOnceLinear
