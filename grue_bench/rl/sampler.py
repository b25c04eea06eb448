"""Ancestral sampling with the KV cache, in one loop of our own: the rollouts' sampler.

``generate()`` spends more time on its per-step bookkeeping than a small model spends on the
forward pass, and draws with ``torch.multinomial``, slow on CPU. This loop does only what
sampling needs: one cached forward per step, Hugging Face's own logits processors, and a draw
by inverting the CDF with one uniform number per row (``draw``).

The loop also keeps what the update needs from those same forward passes, so no scoring pass
of the policy follows: the log-probability of each sampled token under the policy's own
distribution, and (when asked) the last hidden state at each step, the value head's input.
The policy's distribution is the model's logits with the caller's processors applied (NLPO's
mask); sampling then applies, in ``generate()``'s order, minimum lengths, temperature, top-k and
top-p. (``generate()`` runs the minimum-length processors before the caller's; the two commute
for processors that, like NLPO's mask, do not read the scores.)

It serves sampling with the settings in ``SUPPORTED``; anything else (beam search, repetition
penalties, ...) goes to ``generate()`` (see ``rollout.generate``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from grue_bench.rl.compiled import CompiledDecoder
from grue_bench.rl.hparams import SAMPLED_SETTINGS
from grue_bench.rl.kv_cache import cache_keyword, returned_cache
from grue_bench.rl.logprobs import token_logprobs
from grue_bench.rl.policy import (
    causal_position_ids,
    causal_prompt_pass,
    distinct_prompts,
    encoded_prompts,
)
from grue_bench.rl.preallocated_cache import preallocate

SUPPORTED = SAMPLED_SETTINGS
"""Generation settings this sampler implements (with ``do_sample`` true)."""

_NEUTRAL = frozenset(
    {
        "pad_token_id",
        "eos_token_id",
        "bos_token_id",
        "decoder_start_token_id",
        "transformers_version",
        "_from_model_config",
        "use_cache",
        "output_attentions",
        "output_hidden_states",
        "max_length",  # generate() ignores it when max_new_tokens is given, as it always is here
    }
)
"""Settings of a model's generation config that do not change what is sampled."""
HF_DEFAULTS = {"temperature": 1.0, "top_k": 50, "top_p": 1.0, "min_length": 0, "min_new_tokens": None}
"""What ``generate()`` uses for a setting neither the call nor the model's generation config sets."""


def can_sample(lm: Any, kwargs: dict[str, Any]) -> bool:
    """Whether these generation kwargs, with the model's own generation config, are plain sampling."""
    model_settings = set(lm.generation_config.to_diff_dict()) - _NEUTRAL
    return bool(kwargs.get("do_sample")) and set(kwargs) <= SUPPORTED and model_settings <= SUPPORTED


def _setting(lm: Any, kwargs: dict[str, Any], name: str) -> Any:
    """The call's value, else the model generation config's, else generate()'s default."""
    if kwargs.get(name) is not None:
        return kwargs[name]
    model_value = getattr(lm.generation_config, name, None)
    return model_value if model_value is not None else HF_DEFAULTS[name]


def _sampling_processors(lm, kwargs, prompt_length: int, eos_ids: list[int]) -> list:
    """Minimum lengths, temperature, top-k, top-p: what turns the policy's distribution into
    the one sampled from."""
    from transformers import (
        MinLengthLogitsProcessor,
        MinNewTokensLengthLogitsProcessor,
        TemperatureLogitsWarper,
        TopKLogitsWarper,
        TopPLogitsWarper,
    )

    processors: list = []
    if eos_ids and _setting(lm, kwargs, "min_length") > 0:
        processors.append(MinLengthLogitsProcessor(_setting(lm, kwargs, "min_length"), eos_ids))
    if eos_ids and _setting(lm, kwargs, "min_new_tokens"):
        processors.append(
            MinNewTokensLengthLogitsProcessor(prompt_length, _setting(lm, kwargs, "min_new_tokens"), eos_ids)
        )
    temperature, top_k, top_p = (_setting(lm, kwargs, k) for k in ("temperature", "top_k", "top_p"))
    if temperature != 1.0:
        processors.append(TemperatureLogitsWarper(temperature))
    if top_k:
        processors.append(TopKLogitsWarper(top_k))
    if top_p < 1.0:
        processors.append(TopPLogitsWarper(top_p))
    return processors


def draw(scores: torch.Tensor) -> torch.Tensor:
    """One token per row, drawn from softmax(scores) [B]: the first token whose cumulative
    probability reaches u * total, u uniform in (0, 1]. One random number per row (a Gumbel-max
    or ``torch.multinomial`` draw makes one per vocabulary entry, 3-7x slower on CPU). As u > 0, a
    token of probability 0 (whose cumulative sum equals its predecessor's) is never the first to
    reach it; the guard below keeps that true for a cumulative sum computed out of order (GPU)."""
    probs = torch.softmax(scores.float(), dim=-1)
    cdf = probs.cumsum(-1)
    u = (1 - torch.rand_like(cdf[:, -1:])) * cdf[:, -1:]
    token = torch.searchsorted(cdf, u).clamp_(max=cdf.size(-1) - 1)
    drawable = probs.gather(-1, token) > 0
    if not drawable.all():
        token = torch.where(drawable, token, probs.argmax(-1, keepdim=True))
    return token.squeeze(-1)


@dataclass(frozen=True)
class Sampled:
    """Sampled continuations: like ``generate()``'s output without the prompt (causal) or the
    start token (seq2seq), a row padded after its EOS."""

    tokens: torch.Tensor  # [B, T]
    logprobs: torch.Tensor  # [B, T] log pi(a_t | s_t) under the policy's distribution, 0 after the end
    hidden: torch.Tensor | None  # [B, T, H] the last layer's state at each step (the value head's input)
    raw_logprobs: torch.Tensor  # [B, T] log pi(a_t | s_t) of the model's own, unmasked distribution
    """(NLPO's KL penalty, as RL4LMs's; the same tensor as ``logprobs`` without a mask)"""


# no_grad, not inference_mode: under inference mode autocast keeps no cast of a trained weight, so
# a bf16 run cast every weight of the policy again at every decoding step (on this CPU, a quarter of
# a full-weight GRPO iteration on SmolLM2-135M); under no_grad it casts each once per autocast region
@torch.no_grad()
def sample(
    lm: Any,
    model_type: str,
    prompt_ids: torch.Tensor,
    prompt_mask: torch.Tensor,
    kwargs: dict[str, Any],
    max_new_tokens: int,
    eos_ids: list[int],
    pad_id: int,
    logits_processors: list | None = None,
    with_hidden: bool = False,
    compiled: CompiledDecoder | None = None,
) -> Sampled:
    """Sample continuations of the prompts; the loop stops once every row has ended. Processors
    see ``generate()``'s ``input_ids``; ``logits_processors`` define the policy's distribution.
    ``compiled`` (causal LMs) runs the decode steps compiled, over a static cache."""
    policy_processors = logits_processors or []
    batch = prompt_ids.size(0)
    eos = torch.tensor(eos_ids, device=prompt_ids.device, dtype=torch.long)
    prompts, inverse = distinct_prompts(prompt_ids, prompt_mask)  # repeated prompts run once
    keyword = cache_keyword(lm)
    if model_type == "causal":
        ids = torch.cat([prompt_ids, prompt_ids.new_full((batch, max_new_tokens), pad_id)], dim=1)
        mask = torch.cat([prompt_mask, prompt_mask.new_ones(batch, max_new_tokens)], dim=1)
        start = prompt_ids.size(1)
        cache, logits, states = causal_prompt_pass(lm, prompts, inverse, with_hidden)
        if compiled is None:
            preallocate(cache, room=max_new_tokens)
        logits, states = logits[:, -1], (None if states is None else states[:, -1])
        position = causal_position_ids(prompt_mask)[:, -1:]
        step_forward = lm
        if compiled is not None:
            step_forward = compiled
            cache, mask = compiled.start(cache, prompt_mask, max_new_tokens)  # mask over the capacity
    else:
        first = lm.generation_config.decoder_start_token_id
        ids = prompt_ids.new_full((batch, 1 + max_new_tokens), pad_id)
        ids[:, 0] = lm.config.decoder_start_token_id if first is None else first
        start = 1
        encoded = encoded_prompts(lm, prompts, inverse)
        out = lm(
            encoder_outputs=encoded,
            attention_mask=prompt_mask,
            decoder_input_ids=ids[:, :1],
            use_cache=True,
            output_hidden_states=with_hidden,
        )
        cache = returned_cache(out)
        logits, states = _last_step(out, model_type, with_hidden)
    sampling_processors = _sampling_processors(lm, kwargs, start, eos_ids)
    running = torch.ones(batch, dtype=torch.bool, device=prompt_ids.device)
    logprobs, raw_logprobs, hidden = [], [], []
    for step in range(max_new_tokens):
        seen = ids[:, : start + step]
        policy_scores = logits.float()
        for processor in policy_processors:
            policy_scores = processor(seen, policy_scores)
        scores = policy_scores
        for processor in sampling_processors:
            scores = processor(seen, scores)
        token = torch.where(running, draw(scores), pad_id)
        ids[:, start + step] = token
        logprobs.append(torch.where(running, token_logprobs(policy_scores, token), 0.0))
        if policy_processors:
            raw_logprobs.append(torch.where(running, token_logprobs(logits.float(), token), 0.0))
        if with_hidden:
            hidden.append(states)
        running &= ~torch.isin(token, eos)
        if not running.any() or step + 1 == max_new_tokens:
            break
        if model_type == "causal":
            position = position + 1
            out = step_forward(
                input_ids=token[:, None],
                attention_mask=mask[:, : start + step + 1] if compiled is None else mask,
                position_ids=position,
                **{keyword: cache},
                use_cache=True,
                output_hidden_states=with_hidden,
            )
        else:
            out = lm(
                encoder_outputs=encoded,
                attention_mask=prompt_mask,
                decoder_input_ids=token[:, None],
                **{keyword: cache},
                use_cache=True,
                output_hidden_states=with_hidden,
            )
        logits, states = _last_step(out, model_type, with_hidden)
        cache = returned_cache(out)
    steps = len(logprobs)
    logprobs = torch.stack(logprobs, dim=1)
    return Sampled(
        ids[:, start : start + steps],
        logprobs,
        torch.stack(hidden, dim=1) if with_hidden else None,
        torch.stack(raw_logprobs, dim=1) if policy_processors else logprobs,
    )


def _last_step(out, model_type: str, with_hidden: bool) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The next-token logits [B, V] and, when asked, the last layer's state there [B, H]."""
    if not with_hidden:
        return out.logits[:, -1], None
    states = out.hidden_states if model_type == "causal" else out.decoder_hidden_states
    return out.logits[:, -1], states[-1][:, -1]
