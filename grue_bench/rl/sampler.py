"""Ancestral sampling with the KV cache, in one loop of our own: the rollouts' sampler.

``generate()`` spends more time on its per-step bookkeeping than a small model spends on the
forward pass, and draws with ``torch.multinomial``, slow on CPU. This loop does only what
sampling needs: one cached forward per step, Hugging Face's own logits processors (the same
classes and order as ``generate()``: minimum length, the caller's processors such as NLPO's
mask, then temperature, top-k, top-p) and a Gumbel-max draw, argmax(logits + Gumbel noise),
which picks token i with probability softmax(logits)_i exactly as multinomial sampling does.

It serves sampling with the settings in ``SUPPORTED``; anything else (beam search, repetition
penalties, ...) goes to ``generate()`` (see ``rollout.generate``).
"""

from __future__ import annotations

from typing import Any

import torch

from grue_bench.rl.policy import causal_position_ids

SUPPORTED = frozenset(
    {"do_sample", "temperature", "top_k", "top_p", "min_length", "min_new_tokens", "max_new_tokens"}
)
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


def _processors(lm, kwargs, prompt_length: int, eos_ids: list[int], extra: list) -> list:
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
    processors += extra
    temperature, top_k, top_p = (_setting(lm, kwargs, k) for k in ("temperature", "top_k", "top_p"))
    if temperature != 1.0:
        processors.append(TemperatureLogitsWarper(temperature))
    if top_k:
        processors.append(TopKLogitsWarper(top_k))
    if top_p < 1.0:
        processors.append(TopPLogitsWarper(top_p))
    return processors


def gumbel_max(logits: torch.Tensor) -> torch.Tensor:
    """One token per row, drawn from softmax(logits) [B] (-inf logits are never drawn)."""
    noise = -torch.log(-torch.log(torch.rand_like(logits, dtype=torch.float)))
    return (logits.float() + noise).argmax(-1)


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
) -> torch.Tensor:
    """Sampled continuations [B, <= max_new_tokens]: like ``generate()``'s output without the
    prompt (causal) or the start token (seq2seq); a row is padded after its EOS, and the loop
    stops once every row has ended. Processors see ``generate()``'s ``input_ids``."""
    batch = prompt_ids.size(0)
    eos = torch.tensor(eos_ids, device=prompt_ids.device, dtype=torch.long)
    if model_type == "causal":
        ids = torch.cat([prompt_ids, prompt_ids.new_full((batch, max_new_tokens), pad_id)], dim=1)
        mask = torch.cat([prompt_mask, prompt_mask.new_ones(batch, max_new_tokens)], dim=1)
        start = prompt_ids.size(1)
        positions = causal_position_ids(prompt_mask)
        out = lm(
            input_ids=prompt_ids,
            attention_mask=prompt_mask,
            position_ids=positions,
            use_cache=True,
            logits_to_keep=1,  # only the next token's distribution is needed
        )
        position = positions[:, -1:]
        padded = not bool(prompt_mask.all())  # without padding the cached step needs no mask at all
    else:
        first = lm.generation_config.decoder_start_token_id
        ids = prompt_ids.new_full((batch, 1 + max_new_tokens), pad_id)
        ids[:, 0] = lm.config.decoder_start_token_id if first is None else first
        start = 1
        encoded = lm.get_encoder()(input_ids=prompt_ids, attention_mask=prompt_mask)
        out = lm(
            encoder_outputs=encoded, attention_mask=prompt_mask, decoder_input_ids=ids[:, :1], use_cache=True
        )
    processors = _processors(lm, kwargs, start, eos_ids, logits_processors or [])
    running = torch.ones(batch, dtype=torch.bool, device=prompt_ids.device)
    steps = 0
    for step in range(max_new_tokens):
        scores = out.logits[:, -1].float()
        for processor in processors:
            scores = processor(ids[:, : start + step], scores)
        token = torch.where(running, gumbel_max(scores), pad_id)
        ids[:, start + step] = token
        steps = step + 1
        running &= ~torch.isin(token, eos)
        if not running.any() or steps == max_new_tokens:
            break
        if model_type == "causal":
            position = position + 1
            out = lm(
                input_ids=token[:, None],
                attention_mask=mask[:, : start + steps] if padded else None,
                position_ids=position,
                past_key_values=out.past_key_values,
                use_cache=True,
            )
        else:
            out = lm(
                encoder_outputs=encoded,
                attention_mask=prompt_mask,
                decoder_input_ids=token[:, None],
                past_key_values=out.past_key_values,
                use_cache=True,
            )
    return ids[:, start : start + steps]
