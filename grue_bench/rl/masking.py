"""NLPO's action masking: a masking model's top-p tokens restrict what the policy may sample.

The same mask is used while sampling (a logits processor of the sampler or ``generate()``) and
in the probability ratio of the update: the processor records the mask of every step, so the update
uses exactly the sets that were sampled from (recomputing them could flip near-ties). The
processor holds the masking *module*; refreshing it copies the policy's weights into that same
module in place, so the sampler always sees the refreshed weights (RL4LMs's sampler did not).
"""

from __future__ import annotations

import torch
from torch import nn

from grue_bench.rl.kv_cache import cache_keyword, returned_cache
from grue_bench.rl.policy import causal_position_ids


def top_p_mask(logits: torch.Tensor, top_p: float, min_tokens_to_keep: int = 1) -> torch.Tensor:
    """True for the smallest set of most likely tokens whose probability reaches ``top_p``."""
    probs = torch.softmax(logits.float(), dim=-1)
    sorted_probs, order = probs.sort(dim=-1, descending=True)
    before = sorted_probs.cumsum(-1) - sorted_probs  # probability mass ranked above each token
    keep_sorted = before < top_p
    keep_sorted[..., : max(1, min_tokens_to_keep)] = True
    return torch.zeros_like(keep_sorted).scatter(-1, order, keep_sorted)


def top_k_mask(logits: torch.Tensor, k: int) -> torch.Tensor:
    """True for the ``k`` most likely tokens."""
    k = min(k, logits.size(-1))
    return torch.zeros_like(logits, dtype=torch.bool).scatter(-1, logits.topk(k, dim=-1).indices, True)


class ActionMasker:
    """Computes allowed-token masks from a masking model (``learned_top_p`` or ``learned_top_k``)."""

    def __init__(
        self, mask_model: nn.Module, model_type: str, mask_type: str, top_mask: float, min_keep: int
    ):
        self.model = mask_model
        self.model_type = model_type
        self.mask_type = mask_type
        self.top_mask = top_mask
        self.min_keep = min_keep

    def mask_from_logits(self, logits: torch.Tensor) -> torch.Tensor:
        if self.mask_type == "learned_top_k":
            return top_k_mask(logits, max(int(self.top_mask), self.min_keep))
        return top_p_mask(logits, self.top_mask, self.min_keep)

    def processor(self, prompt_ids: torch.Tensor, prompt_mask: torch.Tensor) -> MaskLogitsProcessor:
        """A logits processor (Hugging Face signature) over these prompts."""
        return MaskLogitsProcessor(self, prompt_ids, prompt_mask)


class MaskLogitsProcessor:
    """Sets the scores of tokens outside the masking model's top set to -inf during sampling.

    The masking model keeps its own KV cache across steps, so each step costs one token's forward
    pass; when the sequences seen are not the last ones plus one token (beam reordering), it
    recomputes from scratch.
    """

    def __init__(self, masker: ActionMasker, prompt_ids: torch.Tensor, prompt_mask: torch.Tensor):
        self.masker = masker
        self.prompt_ids = prompt_ids
        self.prompt_mask = prompt_mask
        self.step_masks: list[torch.Tensor] = []
        self.encoder_outputs = None  # seq2seq: the prompts are encoded once, not at every step
        self.seen: torch.Tensor | None = None  # the sequences the cache holds
        self.cache = None
        self.cache_keyword = cache_keyword(masker.model)

    def masks(self) -> torch.Tensor:
        """The allowed tokens of every generated step [B, T, V]."""
        return torch.stack(self.step_masks, dim=1)

    def _cache_extends(self, input_ids: torch.Tensor) -> bool:
        seen = self.seen
        return (
            seen is not None
            and input_ids.size(1) == seen.size(1) + 1
            and torch.equal(input_ids[:, :-1], seen)
        )

    def _next_logits(self, input_ids: torch.Tensor) -> torch.Tensor:
        model = self.masker.model
        cached = self._cache_extends(input_ids)
        new_ids = input_ids[:, -1:] if cached else input_ids
        past = self.cache if cached else None
        if self.masker.model_type == "causal":
            new = input_ids.size(1) - self.prompt_ids.size(1)
            attention = torch.cat(
                [self.prompt_mask, self.prompt_mask.new_ones(input_ids.size(0), new)], dim=1
            )
            positions = causal_position_ids(attention)[:, -new_ids.size(1) :]
            out = model(
                input_ids=new_ids,
                attention_mask=attention,
                position_ids=positions,
                **{self.cache_keyword: past},
                use_cache=True,
            )
        else:
            if self.encoder_outputs is None:
                self.encoder_outputs = model.get_encoder()(
                    input_ids=self.prompt_ids, attention_mask=self.prompt_mask
                )
            out = model(
                encoder_outputs=self.encoder_outputs,
                attention_mask=self.prompt_mask,
                decoder_input_ids=new_ids,
                **{self.cache_keyword: past},
                use_cache=True,
            )
        self.seen, self.cache = input_ids, returned_cache(out)
        return out.logits[:, -1]

    @torch.no_grad()
    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        logits = self._next_logits(input_ids)
        allowed = self.masker.mask_from_logits(logits[:, : scores.size(-1)])
        self.step_masks.append(allowed)
        return scores.masked_fill(~allowed, float("-inf"))
