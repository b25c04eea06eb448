"""What a shared result is a function of, hashed: a model's weights, torch's random states and a
tokenizer's definition (the keys of a shared supervised fit and of a shared zero-shot test)."""

from __future__ import annotations

import json
from typing import Any

import torch

from grue_bench.random_states import torch_rng_state


def tensor_bytes(tensor: torch.Tensor) -> bytes:
    """A tensor's raw bytes (on the CPU, row-major)."""
    return tensor.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()


def add_weights(digest: Any, lm) -> None:
    """Hash every entry of ``lm``'s state dict (names and bytes) into ``digest``."""
    for name, tensor in sorted(lm.state_dict().items()):
        digest.update(name.encode())
        digest.update(tensor_bytes(tensor))


def add_torch_random_states(digest: Any) -> None:
    """Hash torch's global random states (CPU, then each CUDA device) into ``digest``."""
    rng = torch_rng_state()
    for tensor in [rng["torch_rng"], *rng["cuda_rng"]]:
        digest.update(tensor_bytes(tensor))


def tokenizer_definition(tokenizer) -> str:
    """A fast tokenizer's definition (vocabulary, model, normalizer, pre- and post-processing) as
    JSON, without the truncation and padding the last call left on it (each call sets its own)."""
    definition = json.loads(tokenizer.backend_tokenizer.to_str())
    definition.pop("truncation", None)
    definition.pop("padding", None)
    return json.dumps(definition, sort_keys=True)
