"""Attention on a CPU where torch's ``sdpa`` kernels are slow in bfloat16: decoding steps and
training passes.

Decoding: in a decoding step each of a grouped-query model's query heads (SmolLM2-135M: 9 over 3
key/value heads) attends over the whole cache with one query. transformers' ``sdpa`` attention hands
such a step to torch's ``enable_gqa`` kernel when the batch needs no mask (no padding), and on a CPU
that kernel is slow in bfloat16: 4.4 ms against 0.8 ms for 50 rows over 96 cached positions (one
thread; benchmarks/README.md). Packing the query heads of each key/value head as that many query
positions (``[B, 9, 1, D]`` as ``[B, 3, 3, D]``) runs the same products without copying the cache;
it is the arithmetic of plain ``sdpa`` to float rounding.

Training: a pass that will be differentiated (a query, key or value that requires grad) in bfloat16
runs its attention in float32, the output cast back: torch's CPU flash-attention backward is 2-5x
slower in bfloat16 than in float32 at the update's shapes (one thread, forward and backward, ms:
16 rows x 38 positions 47 against 9; 2 x 96, IMDB's minibatch, 5.7 against 2.7; equal from a few
hundred positions). The products are float32's, so this is bf16's arithmetic made more precise,
not changed in kind.

Every other call (prefill and scoring passes, a GPU, float32, a call with a position bias or
another of ``SDPA_ONLY``, as T5's) is ``sdpa``'s own.
"""

from __future__ import annotations

import torch
from transformers.integrations.sdpa_attention import sdpa_attention_forward

NAME = "grue_sdpa"
"""The attention implementation's name in transformers' registry."""

SDPA_ONLY = ("softcap", "position_bias", "sliding_window", "s_aux", "output_attentions")
"""Keyword arguments that change what attention computes: a call that sets one is ``sdpa``'s."""


def cpu_attention(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    dropout: float = 0.0,
    scaling: float | None = None,
    **kwargs,
) -> tuple[torch.Tensor, None]:
    """``sdpa`` attention, but on a CPU a single query position attends through the key/value
    heads (query ``[B, H, 1, D]``, key and value ``[B, H_kv, L, D]``; returns ``[B, 1, H, D]``),
    and a bfloat16 pass that will be differentiated attends in float32."""
    differentiated = query.requires_grad or key.requires_grad or value.requires_grad
    on_cpu, plain = query.device.type == "cpu", _plain(attention_mask, kwargs)
    if on_cpu and differentiated and plain and _in_bf16(query):
        return _in_float32(module, query, key, value, attention_mask, dropout, scaling, **kwargs)
    batch, heads, positions, dim = query.shape
    groups = heads // key.shape[1]
    if positions != 1 or groups == 1 or not on_cpu or not plain:
        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout, scaling, **kwargs)
    mask = None if attention_mask is None else attention_mask[:, :, :, : key.shape[-2]]
    packed = query.reshape(batch, heads // groups, groups, dim)
    out = torch.nn.functional.scaled_dot_product_attention(
        packed, key, value, attn_mask=mask, dropout_p=dropout if module.training else 0.0, scale=scaling
    )
    return out.reshape(batch, heads, 1, dim).transpose(1, 2).contiguous(), None


def _in_bf16(query: torch.Tensor) -> bool:
    """Whether ``sdpa`` would attend in bfloat16: a bf16 query, or bf16 autocast (which casts a
    float32 query, as Llama's rotary embedding makes it, down)."""
    autocast = torch.is_autocast_enabled("cpu") and torch.get_autocast_dtype("cpu") == torch.bfloat16
    return query.dtype == torch.bfloat16 or autocast


def _in_float32(module, query, key, value, attention_mask, dropout, scaling, **kwargs):
    """``sdpa``'s attention over float32 copies of ``query``, ``key`` and ``value`` (outside
    autocast, which would cast them back), its output in bfloat16, as ``sdpa``'s would be."""
    if attention_mask is not None and attention_mask.is_floating_point():
        attention_mask = attention_mask.float()
    with torch.autocast("cpu", enabled=False):
        out, weights = sdpa_attention_forward(
            module, query.float(), key.float(), value.float(), attention_mask, dropout, scaling, **kwargs
        )
    return out.to(torch.bfloat16), weights


def _plain(attention_mask: torch.Tensor | None, kwargs: dict) -> bool:
    """Whether the call is plain attention: one mask for all heads and none of ``SDPA_ONLY`` set
    (a value may be a tensor, as T5's position bias: compared with None and False, not truth-tested)."""
    if attention_mask is not None and attention_mask.shape[1] != 1:
        return False
    return all(kwargs.get(name) is None or kwargs.get(name) is False for name in SDPA_ONLY)


def _register() -> bool:
    """Register ``NAME`` with ``sdpa``'s masks; False where this transformers has no registry."""
    try:
        from transformers import AttentionInterface
        from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, sdpa_mask
    except ImportError:
        return False
    AttentionInterface.register(NAME, cpu_attention)
    ALL_MASK_ATTENTION_FUNCTIONS.register(NAME, sdpa_mask)
    return True


def use_cpu_attention(model: torch.nn.Module) -> None:
    """Switch ``model`` from ``sdpa`` to ``cpu_attention`` (other implementations stay)."""
    config = getattr(model, "config", None)
    if getattr(config, "_attn_implementation", None) != "sdpa" or not _register():
        return
    model.set_attn_implementation(NAME)
