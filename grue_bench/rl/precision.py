"""Mixed precision: the models' forward passes in bfloat16 or float16, everything else in float32.

Under ``Precision.autocast`` the matrix products of a forward pass (sampling, the reference and
value passes, the update's and the supervised loss's forward and backward) run in the half type;
the weights, their gradients and Adam's moments stay float32 (the "master" weights), and what
precision matters for is computed in float32 from float32 inputs: log-probabilities and entropy
(``logprobs.py`` upcasts the logits), the value head (``ActorCritic.values`` turns autocast
off), rewards (scored outside it), KL, advantages, returns and the losses. float16 also
scales the loss so that small gradients do not underflow (``torch.amp.GradScaler``). float32,
the default, runs no autocast at all: its arithmetic is unchanged.
"""

from __future__ import annotations

import contextlib
import platform
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import torch

from grue_bench.errors import GrueError

PrecisionName = Literal["fp32", "bf16", "fp16"]

_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}

_X86 = ("x86_64", "amd64", "i386", "i686")
"""``platform.machine()`` of an x86 CPU, lower case."""


@dataclass(frozen=True)
class Precision:
    """The precision of a run's forward passes on ``device_type`` ('cpu' or 'cuda')."""

    name: PrecisionName = "fp32"
    device_type: str = "cpu"

    @classmethod
    def from_flags(cls, bf16: bool, fp16: bool, device: torch.device, key: str) -> Precision:
        """The precision the Hugging Face flags ``bf16``/``fp16`` (under config ``key``) ask for
        on ``device``, refused where the hardware lacks it."""
        name: PrecisionName = "bf16" if bf16 else "fp16" if fp16 else "fp32"
        check_supported(name, device, f"{key}.{name}")
        return cls(name, device.type)

    @property
    def dtype(self) -> torch.dtype:
        """The type the forward passes' matrix products run in."""
        return _DTYPES.get(self.name, torch.float32)

    def autocast(self) -> contextlib.AbstractContextManager:
        """The context the forward passes run in (none for float32)."""
        if self.name == "fp32":
            return contextlib.nullcontext()
        return torch.autocast(self.device_type, dtype=self.dtype)

    def grad_scaler(self) -> torch.amp.GradScaler | None:
        """float16's loss scaler (None for the others: bfloat16 has float32's range)."""
        return torch.amp.GradScaler(self.device_type) if self.name == "fp16" else None


FP32 = Precision()
"""float32: no autocast (the default everywhere)."""


def check_supported(name: PrecisionName, device: torch.device, key: str) -> None:
    """Refuse a half precision ``device`` cannot run (fp16 needs a GPU; bf16 a GPU or a CPU
    with bfloat16 instructions, AVX-512 BF16 or AMX)."""
    if name == "fp16" and device.type != "cuda":
        raise GrueError(
            f"fp16 needs a CUDA GPU; this run is on {device.type}",
            key=key,
            fix="use bf16 (on a CPU with bfloat16 instructions) or fp32 (--precision fp32)",
        )
    if name == "bf16" and not bf16_supported(device):
        where = "this GPU" if device.type == "cuda" else "this CPU (no AVX-512 BF16 or AMX)"
        raise GrueError(
            f"bf16 is not supported by {where}",
            key=key,
            fix="use fp32 (--precision fp32)" + (" or fp16" if device.type == "cuda" else ""),
        )


def default_device() -> torch.device:
    """Where a run trains when nothing else says: the GPU if there is one."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def bf16_supported(device: torch.device) -> bool:
    """Whether ``device`` runs bfloat16 matrix products natively: on an x86 CPU, AVX-512 BF16 or
    AMX. oneDNN's own check also passes plain AVX-512 (Intel's Skylake to Ice Lake), where it
    emulates bfloat16 at a quarter of float32's speed or less (17.5 GFLOP/s against 60-86 on a
    Skylake at 2 threads)."""
    if device.type == "cuda":
        return torch.cuda.is_bf16_supported()
    if not torch.ops.mkldnn._is_mkldnn_bf16_supported():
        return False
    if platform.machine().lower() in _X86:
        return torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported()
    return True  # Arm: oneDNN's check is the CPU's bf16 extension


def scaled(loss: torch.Tensor, scaler: torch.amp.GradScaler | None) -> torch.Tensor:
    """``loss`` as its gradient is taken: scaled up by float16's ``scaler``, if any."""
    return scaler.scale(loss) if scaler is not None else loss


def optimizer_step(
    optimizer: torch.optim.Optimizer, scaler: torch.amp.GradScaler | None, clip: Callable[[], object]
) -> None:
    """Clip the gradient (``clip``) and step; with float16's ``scaler``, on the unscaled gradient,
    the step skipped if it overflowed, and the scale adapted."""
    if scaler is None:
        clip()
        optimizer.step()
        return
    scaler.unscale_(optimizer)
    clip()
    scaler.step(optimizer)
    scaler.update()
