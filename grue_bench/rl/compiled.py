"""The sampler's decode step compiled with ``torch.compile``, over a static KV cache (opt-in).

A small model's decode step costs little arithmetic and some 350 operator calls, so on CPU
its time goes to dispatching them; compiled, the step is fused into a few kernels (the
benchmark's GPT-2: about half the time per step). Compiling needs fixed shapes, so the keys
and values live in Hugging Face's ``StaticCache``, sized once for the longest prompt plus the
longest response (``capacity``) and reused by every batch of the same size: prompts of any
width then run the same compiled graph. The first batch of each size pays the compilation
(24 s on CPU here; ~5 s once Inductor's on-disk cache holds it). Causal LMs only.
"""

from __future__ import annotations

from typing import Any

import torch

from grue_bench.errors import GrueError


class CompiledDecoder:
    """``lm.forward`` compiled for one-token steps over a static cache of ``capacity`` positions."""

    def __init__(self, lm: Any, capacity: int) -> None:
        self.lm = lm
        self.capacity = capacity
        self.forward = torch.compile(lm.forward, dynamic=False)
        self._caches: dict[int, Any] = {}  # by batch size: a new cache object would recompile

    def start(self, prefix: Any, prompt_mask: torch.Tensor, new_tokens: int) -> tuple[Any, torch.Tensor]:
        """The static cache holding ``prefix`` (the prompts' keys and values, a ``DynamicCache``
        with a row per sequence) and the attention mask over the whole capacity: the prompt's,
        then ones (the causal mask hides the positions not yet written)."""
        from transformers import StaticCache

        batch, width = prompt_mask.shape
        if width + new_tokens > self.capacity:
            raise ValueError(
                f"{width} prompt + {new_tokens} new tokens do not fit a static cache of {self.capacity}"
            )
        cache = self._caches.get(batch)
        if cache is None:
            cache = self._caches[batch] = StaticCache(config=self.lm.config, max_cache_len=self.capacity)
        else:
            cache.reset()
        for index, layer in enumerate(prefix.layers):
            cache.update(layer.keys, layer.values, index)
        mask = torch.cat([prompt_mask, prompt_mask.new_ones(batch, self.capacity - width)], dim=1)
        return cache, mask

    def __call__(self, **kwargs: Any) -> Any:
        try:
            return self.forward(**kwargs)
        except torch._dynamo.exc.BackendCompilerFailed as error:
            reason = str(error).strip().splitlines()[0]
            raise GrueError(
                f"torch.compile could not compile the sampler's decode step: {reason}",
                key="alg.policy.args.compile_sampler",
                fix="install a C++ compiler (CPU) or Triton (GPU), or set compile_sampler: false",
            ) from error
