"""CPU decoding with every linear layer's weight laid out for oneDNN once per ``generate`` call.

bf16 autocast: a linear layer casts its float32 weight to bf16 and hands it to oneDNN, which lays
it out for its kernel (a reorder) at every call; at a decoding step of 16 rows that reorder costs
about as much as the product itself (SmolLM2's head: 23 ms a step plain, 12.6 ms packed, one
thread). Packed once, the product is the same oneDNN product: the same numbers (tested: identical
tokens and log-probs), 15-22% less sampling time on SmolLM2-135M.

float32 (no autocast): a linear layer is MKL's product, whose kernels for a few rows run far
below the machine's peak (SmolLM2's head over 16 rows: 24.0 ms, against 9.7 ms for oneDNN's on a
weight laid out once; AMD EPYC, AVX2, 2 threads). Products of up to ``FLOAT32_PACKED_ROWS`` rows
(the decoding steps) run on the packed weight, longer ones (a prompt's pass, where MKL is as fast
or faster) stay MKL's. oneDNN sums in another order: the numbers are the same to float32 rounding
(a sampled token can flip), not bit for bit; 12-23% less sampling time on SmolLM2-135M
(benchmarks/README.md).

It applies only on a CPU with oneDNN's ops, without gradients (bf16: where the CPU has bfloat16
instructions, ``precision.bf16_supported``); elsewhere it changes nothing.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch
import torch.nn.functional as F

from grue_bench.rl.precision import bf16_supported

FLOAT32_PACKED_ROWS = 128
"""The most rows a float32 product runs packed (oneDNN's packed product is the faster up to about
100 rows, 5-9% the slower from 320)."""


def packed_dtype(lm: Any) -> torch.dtype | None:
    """The type ``lm``'s linear layers would multiply in packed here and now (bf16 under CPU bf16
    autocast on a CPU with bfloat16 instructions, float32 without autocast), or None where packing
    does not apply."""
    if (
        torch.is_grad_enabled()
        or not torch.backends.mkldnn.is_available()
        or not hasattr(torch.ops.mkldnn, "_reorder_linear_weight")
        or not all(p.device.type == "cpu" for p in lm.parameters())
    ):
        return None
    if torch.is_autocast_enabled("cpu"):
        native = torch.get_autocast_dtype("cpu") == torch.bfloat16 and bf16_supported(torch.device("cpu"))
        return torch.bfloat16 if native else None
    return torch.float32


@contextlib.contextmanager
def packed_linears(lm: Any, rows: int) -> Iterator[None]:
    """Within the block, each ``torch.nn.Linear`` of ``lm`` multiplies by its weight cast to the
    ``packed_dtype`` and laid out once for ``rows`` rows at a time (a hint for oneDNN's layout:
    other row counts work); in float32 only layers with float32 weights are packed. A layer whose
    ``forward`` something already replaced (a hook) is left as it is, and the others get their own
    back afterwards."""
    dtype = packed_dtype(lm)
    if dtype is None:
        yield
        return
    patched: list[torch.nn.Linear] = []
    try:
        for layer in lm.modules():
            if (
                isinstance(layer, torch.nn.Linear)
                and "forward" not in layer.__dict__
                and (dtype == torch.bfloat16 or layer.weight.dtype == torch.float32)
            ):
                layer.forward = _packed_forward(layer, rows, dtype)
                patched.append(layer)
        yield
    finally:
        for layer in patched:
            del layer.forward


def _packed_forward(layer: torch.nn.Linear, rows: int, dtype: torch.dtype):
    weight = torch.ops.mkldnn._reorder_linear_weight(layer.weight.detach().to(dtype), rows)
    bias = None if layer.bias is None else layer.bias.detach().to(dtype)

    def forward(x: torch.Tensor) -> torch.Tensor:
        if dtype == torch.float32 and x.numel() > FLOAT32_PACKED_ROWS * x.size(-1):
            return F.linear(x, layer.weight, layer.bias)  # MKL's, as without packing
        return torch.ops.mkldnn._linear_pointwise(x.to(dtype), weight, bias, "none", [None], "")

    return forward
