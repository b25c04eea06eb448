"""What a training pass keeps, and allocates, for its backward pass: less, with the same gradients.

Two places of a transformers LM cost memory that autograd need not spend:

- **The SwiGLU MLP** of Llama-family models (SmolLM2, Llama, Qwen2, Mistral),
  ``down(silu(gate(x)) * up(x))``, keeps four [B, T, I] intermediates: ``gate(x)`` and ``up(x)``
  for the product's backward pass, ``silu(gate(x))`` too, and the product for ``down``'s weight
  gradient. With the intermediate size 2.7x the hidden size that is half of what a training pass
  keeps (SmolLM2-135M on 16 x 51 tokens: 574 of 1122 MiB). ``GatedDownProjection`` keeps
  ``gate(x)`` and ``up(x)`` and recomputes the other two, elementwise, in its backward pass.
- **The LM head** tied to the input embedding (SmolLM2, GPT-2, T5): autograd hands the head's
  weight gradient on as a transposed view of a [H, V] product, and the engine cannot add the
  embedding's gradient to a view in place, so the two are summed into a third [V, H] tensor at
  the end of the backward pass, where memory peaks (+108 MiB at SmolLM2's vocabulary).
  ``ProjectionWithOwnGradient`` returns the same product as a tensor of its own.

Both take the matrix products autograd takes (``mm`` on the same operands, in the same order), so
in float32 their gradients are autograd's bit for bit (``tests/rl/test_lean_backward.py``). Under
autocast their backward passes run under the forward pass's autocast state, as autograd's would.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from grue_bench.rl.frozen_casts import CastOnceLinear, autocast_weight

PLAIN_LINEAR = (nn.Linear, CastOnceLinear)
"""Linear layers whose forward is ``F.linear`` on their own weight and bias (not an adapter's
wrapper, nor a quantized subclass)."""


def _autocast_state(ctx, tensor: torch.Tensor) -> None:
    device_type = tensor.device.type
    ctx.device_type = device_type
    ctx.autocast = (torch.is_autocast_enabled(device_type), torch.get_autocast_dtype(device_type))


def _under_forward_autocast(ctx) -> torch.autocast:
    enabled, dtype = ctx.autocast
    return torch.autocast(ctx.device_type, dtype=dtype, enabled=enabled)


class GatedDownProjection(torch.autograd.Function):
    """``F.linear(silu(gate) * up, weight, bias)``, keeping ``gate`` and ``up`` for the backward
    pass instead of ``silu(gate)`` and the product."""

    @staticmethod
    def forward(ctx, gate, up, weight, bias):
        _autocast_state(ctx, gate)
        ctx.has_bias = bias is not None
        ctx.save_for_backward(gate, up, weight)
        return F.linear(F.silu(gate) * up, weight, bias)

    @staticmethod
    def backward(ctx, grad):
        gate, up, weight = ctx.saved_tensors
        with _under_forward_autocast(ctx):
            grad_2d = grad.reshape(-1, grad.size(-1))
            grad_product = grad_2d.mm(weight).view(gate.shape)
            activated = F.silu(gate)
            grad_up = grad_product * activated
            grad_weight = grad_bias = None
            if ctx.needs_input_grad[2]:  # a frozen weight (an adapter's base) has none
                # aten's backward of mm(product, weight.t()): weight.t() is column-major, so
                # its gradient is taken as grad.t() @ product (the product in silu's buffer)
                grad_weight = grad_2d.t().mm(activated.mul_(up).view(-1, up.size(-1))).to(weight.dtype)
            if ctx.has_bias and ctx.needs_input_grad[3]:
                grad_bias = grad_2d.sum(0)
            del activated
            grad_gate = torch.ops.aten.silu_backward(grad_product.mul_(up), gate)
        return grad_gate, grad_up, grad_weight, grad_bias


class ProjectionWithOwnGradient(torch.autograd.Function):
    """``F.linear(x, weight)`` whose weight gradient is a tensor of its own, not a view."""

    @staticmethod
    def forward(ctx, x, weight):
        _autocast_state(ctx, x)
        ctx.save_for_backward(x, weight)
        return F.linear(x, weight)

    @staticmethod
    def backward(ctx, grad):
        x, weight = ctx.saved_tensors
        with _under_forward_autocast(ctx):
            grad_2d = grad.reshape(-1, grad.size(-1))
            grad_x = grad_2d.mm(weight).view(x.shape) if ctx.needs_input_grad[0] else None
            grad_weight = None
            if ctx.needs_input_grad[1]:
                grad_weight = grad_2d.t().mm(x.reshape(-1, x.size(-1))).to(weight.dtype)
        return grad_x, grad_weight


def _lean_mlp_forward(self, x: torch.Tensor) -> torch.Tensor:
    down = self.down_proj
    # not while sampling, nor where an adapter wraps down_proj, nor under DeepSpeed ZeRO-3, which
    # gathers a partitioned weight only in its own module's call
    if not torch.is_grad_enabled() or type(down) not in PLAIN_LINEAR or hasattr(down.weight, "ds_id"):
        return super(type(self), self).forward(x)
    weight = autocast_weight(down.weight)
    return GatedDownProjection.apply(self.gate_proj(x), self.up_proj(x), weight, down.bias)


def _lean_head_forward(self, x: torch.Tensor) -> torch.Tensor:
    if not torch.is_grad_enabled():
        return super(type(self), self).forward(x)
    return ProjectionWithOwnGradient.apply(x, autocast_weight(self.weight))


def _is_silu(module: object) -> bool:
    from transformers import activations

    return isinstance(module, (nn.SiLU, getattr(activations, "SiLUActivation", nn.SiLU)))


def _is_gated_mlp(module: nn.Module) -> bool:
    return all(
        type(getattr(module, name, None)) in PLAIN_LINEAR for name in ("gate_proj", "up_proj", "down_proj")
    ) and _is_silu(getattr(module, "act_fn", None))


_LEAN_CLASSES: dict[type, type] = {}


def _make_lean(module: nn.Module, forward) -> None:
    """Give ``module`` ``forward`` through a subclass of its class (copies of it keep it)."""
    cls = type(module)
    if cls not in _LEAN_CLASSES:
        _LEAN_CLASSES[cls] = type(cls.__name__, (cls,), {"forward": forward})
    module.__class__ = _LEAN_CLASSES[cls]


def keep_less_for_backward(lm: nn.Module) -> None:
    """Give ``lm``'s SwiGLU MLPs ``GatedDownProjection`` and its bias-free linear LM head
    ``ProjectionWithOwnGradient`` in training passes (sampling under ``no_grad`` is unchanged)."""
    if any(cls in _LEAN_CLASSES.values() for cls in map(type, lm.modules())):
        return
    for module in lm.modules():
        if _is_gated_mlp(module):
            _make_lean(module, _lean_mlp_forward)
    head = lm.get_output_embeddings() if hasattr(lm, "get_output_embeddings") else None
    if type(head) in PLAIN_LINEAR and head.bias is None:
        _make_lean(head, _lean_head_forward)
