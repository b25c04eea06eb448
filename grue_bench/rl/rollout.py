"""Collecting rollouts: batched sampling with the KV cache, the reference scored once, rewards once.

Per batch of prompts: sample responses with our sampler, which keeps the policy's log-probs
and hidden states (the values' input) from its own forward passes; call the reward function
once on the decoded texts; then one forward pass of the frozen reference over the whole
sequences for its log-probs. Responses from ``generate()`` (beam search, penalties) and a
separate critic LM take one more forward pass of the policy. Nothing is replayed token by token.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import torch

from grue_bench.data import Sample
from grue_bench.errors import GrueError
from grue_bench.rl.adapters import without_adapters
from grue_bench.rl.batch import TokenBatch
from grue_bench.rl.compiled import CompiledDecoder
from grue_bench.rl.episodes import Episodes
from grue_bench.rl.kv_cache import cache_keyword
from grue_bench.rl.logprobs import token_logprobs
from grue_bench.rl.masking import ActionMasker
from grue_bench.rl.packed import packed_linears
from grue_bench.rl.policy import ActorCritic, causal_prompt_pass, response_logits_and_hidden
from grue_bench.rl.preallocated_cache import preallocate
from grue_bench.rl.precision import FP32, Precision
from grue_bench.rl.sampler import can_sample, sample
from grue_bench.rl.truncation import truncating_on

MAX_CACHED_PROMPTS = 100_000
"""Prompts whose token ids a collector keeps (a few MB); the cache starts anew beyond that."""


@dataclass(frozen=True)
class GenerationSettings:
    """How prompts are cut and responses sampled (from ``env.args`` and ``generation_kwargs``)."""

    max_prompt_length: int
    prompt_truncation_side: str
    max_new_tokens: int
    terminate_on_eos: bool
    generation_kwargs: dict[str, Any]
    compile_sampler: bool = False
    """Compile the sampler's decode steps (``compiled``; causal LMs)."""
    context_start_token: int | None = None
    """RL4LMs's ``env.args.context_start_token``, the token the response's context opens with: a
    causal LM's prompts end with it (a seq2seq decoder starts from it: see ``trainer.load_base``)."""

    @property
    def causal_prompt_width(self) -> int:
        """The most columns a causal LM's encoded prompts take: the longest prompt and the context's
        token (the compiled sampler's static cache holds that many, plus the new tokens)."""
        return self.max_prompt_length + (self.context_start_token is not None)


@dataclass(frozen=True)
class Generated:
    """Sampled responses and their texts."""

    tokens: TokenBatch
    texts: list[str]
    action_mask: torch.Tensor | None = None  # [B, T, V] the allowed tokens NLPO sampled from
    logprobs: torch.Tensor | None = None  # [B, T] the policy's, kept by the sampler (not generate())
    raw_logprobs: torch.Tensor | None = None  # [B, T] the same without NLPO's mask
    hidden: torch.Tensor | None = None  # [B, T, H] the sampler's last hidden states, when asked


def encode_prompts(
    tokenizer,
    texts: Sequence[str],
    settings: GenerationSettings,
    model_type: str,
    device,
    cache: dict[str, list[int]] | None = None,
):
    """Token ids and mask of ``texts``, cut to ``max_prompt_length`` on ``prompt_truncation_side``
    and padded to the longest of them (causal prompts on the left, for generation). RL4LMs pads
    every prompt to ``max_prompt_length``; positions follow the mask (``causal_position_ids``) and
    a causal ``min_length`` adds the width padded to, so only the cost differs: padding columns
    the attention skips cost as much as tokens (a third more time and a gigabyte more memory in
    the update of a 135M model on 15-token prompts padded to 64). Each distinct text is tokenized
    once (GRPO and RLOO repeat every prompt); ``cache`` keeps the ids of texts seen in earlier
    calls (a run draws from the same pool again and again), so long prompts, tokenized in full
    before they are cut, are not tokenized anew."""
    if tokenizer.pad_token_id is None:
        raise GrueError(
            "the tokenizer has no padding token, needed to batch prompts",
            key="tokenizer.pad_token_as_eos_token",
            fix="set tokenizer.pad_token_as_eos_token: true (or give the tokenizer a pad token)",
        )
    known = {} if cache is None else cache
    new = list(dict.fromkeys(t for t in texts if t not in known))
    if new:
        if len(known) + len(new) > MAX_CACHED_PROMPTS:
            known.clear()
        encoded = _truncated(tokenizer, new, settings)
        start = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id
        # an empty prompt still needs one token to condition on
        known.update((text, ids or [start]) for text, ids in zip(new, encoded, strict=True))
    rows = [known[t] for t in texts]
    ids, mask = _padded(rows, tokenizer.pad_token_id, model_type == "causal", max(map(len, rows)))
    if model_type == "causal" and settings.context_start_token is not None:
        opener = torch.full_like(ids[:, :1], settings.context_start_token)
        ids, mask = torch.cat([ids, opener], dim=1), torch.cat([mask, torch.ones_like(opener)], dim=1)
    return ids.to(device), mask.to(device)


def _truncated(tokenizer, texts: list[str], settings: GenerationSettings) -> list[list[int]]:
    """Token ids of ``texts`` cut to ``max_prompt_length`` on the prompt's truncation side (the
    tokenizer's own side kept: ``truncating_on``)."""
    with truncating_on(tokenizer, settings.prompt_truncation_side):
        return tokenizer(texts, truncation=True, max_length=settings.max_prompt_length)["input_ids"]


def _padded(rows: list[list[int]], pad_id: int, left: bool, width: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Rows of token ids (none longer than ``width``) padded to ``width`` (on the left: a causal
    LM generates after the last column), and their attention mask."""
    ids, mask = [], []
    for row in rows:
        gap = width - len(row)
        ids.append([pad_id] * gap + row if left else row + [pad_id] * gap)
        mask.append([0] * gap + [1] * len(row) if left else [1] * len(row) + [0] * gap)
    return torch.tensor(ids), torch.tensor(mask)


def response_mask(response_ids: torch.Tensor, eos_id: int | None, terminate_on_eos: bool) -> torch.Tensor:
    """1 up to and including the first EOS (everything when EOS does not end an episode)."""
    if not terminate_on_eos or eos_id is None:
        return torch.ones_like(response_ids, dtype=torch.float)
    is_eos = (response_ids == eos_id).long()
    eos_before = is_eos.cumsum(1) - is_eos
    return (eos_before == 0).float()


@torch.no_grad()
def generate(
    lm,
    tokenizer,
    model_type: str,
    prompts: Sequence[str],
    settings: GenerationSettings,
    device,
    masker: ActionMasker | None = None,
    generation_kwargs: dict[str, Any] | None = None,
    with_hidden: bool = False,
    prompt_cache: dict[str, list[int]] | None = None,
    compiled: CompiledDecoder | None = None,
) -> Generated:
    """Sample (or decode) responses for ``prompts`` in one batch: plain sampling by our own
    cached loop (``sampler``, which also keeps log-probs, and hidden states ``with_hidden``),
    everything else by ``generate()``. ``prompt_cache``: see ``encode_prompts``; ``compiled``:
    the sampler's compiled decode step (``compiled``)."""
    prompt_ids, prompt_mask = encode_prompts(tokenizer, prompts, settings, model_type, device, prompt_cache)
    kwargs = {"max_new_tokens": settings.max_new_tokens, **(generation_kwargs or settings.generation_kwargs)}
    kwargs["max_new_tokens"] = min(kwargs["max_new_tokens"], settings.max_new_tokens)
    if model_type == "causal" and "min_length" in kwargs:
        # RL4LMs's policy adds the padded prompt's width: a causal min_length counts new tokens
        kwargs["min_length"] += prompt_ids.size(1)
    # [] (not None, which falls back to the model's default) makes EOS an ordinary token
    eos_ids = (
        [tokenizer.eos_token_id] if settings.terminate_on_eos and tokenizer.eos_token_id is not None else []
    )
    mask_processor = masker.processor(prompt_ids, prompt_mask) if masker else None
    processors = [mask_processor] if mask_processor else []
    was_training = lm.training
    lm.eval()
    sampled = None
    # each weight cast and laid out once for the call (a compiled step has its own products)
    with packed_linears(lm, prompt_ids.size(0)) if compiled is None else contextlib.nullcontext():
        if can_sample(lm, kwargs):
            sampled = sample(
                lm,
                model_type,
                prompt_ids,
                prompt_mask,
                kwargs,
                kwargs["max_new_tokens"],
                eos_ids,
                tokenizer.pad_token_id,
                processors,
                with_hidden,
                compiled,
            )
            response = sampled.tokens
        else:
            response = _hf_generate(
                lm, tokenizer, model_type, prompt_ids, prompt_mask, kwargs, eos_ids, processors
            )
            if response.size(1) == 0:  # nothing generated at all: one EOS action per sequence
                response = torch.full_like(prompt_ids[:, :1], tokenizer.eos_token_id)
    lm.train(was_training)
    mask = response_mask(response, tokenizer.eos_token_id, settings.terminate_on_eos)
    response = torch.where(mask.bool(), response, torch.full_like(response, tokenizer.pad_token_id))
    texts = tokenizer.batch_decode(response, skip_special_tokens=True)
    action_mask = mask_processor.masks()[:, : response.size(1)] if mask_processor else None
    return Generated(
        TokenBatch(prompt_ids, prompt_mask, response, mask),
        texts,
        action_mask,
        logprobs=sampled.logprobs if sampled else None,
        raw_logprobs=sampled.raw_logprobs if sampled else None,
        hidden=sampled.hidden if sampled else None,
    )


def _hf_generate(
    lm, tokenizer, model_type, prompt_ids, prompt_mask, kwargs, eos_ids, processors
) -> torch.Tensor:
    """The response tokens from Hugging Face ``generate()`` (beam search, penalties, ...)."""
    from transformers import GenerationConfig, LogitsProcessorList

    config = GenerationConfig(
        **kwargs,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=eos_ids,
        decoder_start_token_id=getattr(lm.config, "decoder_start_token_id", None),
    )
    copies = max(config.num_beams or 1, config.num_return_sequences or 1)
    prefilled = {}
    if model_type == "causal" and copies > 1 and prompt_ids.size(1) > 1:
        cache = _prompt_cache_for(lm, prompt_ids, prompt_mask, copies, config.max_new_tokens)
        prefilled[cache_keyword(lm)] = cache
    out = lm.generate(
        input_ids=prompt_ids,
        attention_mask=prompt_mask,
        generation_config=config,
        logits_processor=LogitsProcessorList(processors),
        **prefilled,
    )
    return out[:, prompt_ids.size(1) :] if model_type == "causal" else out[:, 1:]


def _prompt_cache_for(lm, prompt_ids: torch.Tensor, prompt_mask: torch.Tensor, copies: int, new_tokens: int):
    """A causal LM's key/value cache of every prompt column but the last, computed once per prompt
    and repeated for each of its ``copies`` (beams, returned sequences); generate() goes on from
    the last column. Left to itself, generate() repeats each prompt for its copies before the
    first forward and so runs every prompt once per beam: the evaluation's prefill, most of
    its time on long prompts, 4 to 5 times over (NarrativeQA, ToTTo, CommonGen)."""
    with torch.no_grad():
        cache, _, _ = causal_prompt_pass(lm, (prompt_ids[:, :-1], prompt_mask[:, :-1]), None, False)
    cache.batch_repeat_interleave(copies)
    preallocate(cache, room=new_tokens + 1)  # the last prompt column, then the new tokens
    return cache


@dataclass
class RolloutCollector:
    """Samples episodes from the current policy and scores them."""

    policy: ActorCritic
    ref_lm: torch.nn.Module | None
    """The frozen reference (an adapted policy's own LM, run with its adapters disabled); None
    when the KL coefficient is 0 (the KL terms then vanish)."""
    tokenizer: Any
    reward_fn: Any
    settings: GenerationSettings
    device: torch.device
    chunk_size: int = 64
    masker: ActionMasker | None = None
    prompt_cache: dict[str, list[int]] = field(default_factory=dict)
    """The token ids of prompts already seen (``encode_prompts``)."""
    precision: Precision = FP32
    """The forward passes' precision (sampling, values, reference); rewards are scored outside it."""
    generation_s: float = 0.0
    """Seconds spent inside generate() in the last collect (the rest is scoring and rewards)."""
    compiled: CompiledDecoder | None = field(init=False, default=None)
    """The policy's compiled decode step, when the settings ask for it."""

    def __post_init__(self) -> None:
        if not self.settings.compile_sampler:
            return
        if self.policy.model_type != "causal":
            raise GrueError(
                "compile_sampler serves causal LMs; this policy is seq2seq",
                key="alg.policy.args.compile_sampler",
                fix="remove compile_sampler (or set it to false) for a seq2seq policy",
            )
        if not can_sample(self.policy.lm, self.settings.generation_kwargs):
            raise GrueError(
                "compile_sampler compiles the sampling loop, but these generation settings go to "
                "generate() (greedy or beam search, penalties, ...)",
                key="alg.policy.args.compile_sampler",
                fix="sample (do_sample: true, with temperature/top_k/top_p/min lengths only) or "
                "set compile_sampler: false",
            )
        capacity = self.settings.causal_prompt_width + self.settings.max_new_tokens
        self.compiled = CompiledDecoder(self.policy.lm, capacity)

    @torch.no_grad()
    def collect(self, samples: Sequence[Sample], with_values: bool = True) -> Episodes:
        """Responses to ``samples``, their rewards, log-probs, reference log-probs (and values)."""
        model_type = self.policy.model_type
        parts: list[Episodes] = []
        self.generation_s = 0.0
        for start in range(0, len(samples), self.chunk_size):
            part = samples[start : start + self.chunk_size]
            started = time.perf_counter()
            with self.precision.autocast():
                gen = generate(
                    self.policy.lm,
                    self.tokenizer,
                    model_type,
                    [s.prompt_or_input_text for s in part],
                    self.settings,
                    self.device,
                    self.masker,
                    with_hidden=with_values and self.policy.critic_lm is None,
                    prompt_cache=self.prompt_cache,
                    compiled=self.compiled,
                )
                self.generation_s += time.perf_counter() - started
                logprobs, raw_logprobs, values = self._logprobs_and_values(gen, with_values)
                ref_logprobs = self._reference_logprobs(gen.tokens, raw_logprobs)
            parts.append(
                Episodes(
                    tokens=gen.tokens,
                    texts=gen.texts,
                    task_rewards=torch.zeros(len(part), device=self.device),  # scored below, at once
                    logprobs=logprobs,
                    raw_logprobs=raw_logprobs,
                    ref_logprobs=ref_logprobs,
                    values=values,
                    action_mask=gen.action_mask,
                )
            )
        episodes = Episodes.concat(parts, model_type == "causal", self.tokenizer.pad_token_id)
        scores = self.reward_fn.batch(
            [s.prompt_or_input_text for s in samples],
            episodes.texts,
            [s.references for s in samples],
            [s.meta_data for s in samples],
        )
        if len(scores) != len(samples) or not all(math.isfinite(float(x)) for x in scores):
            bad = next((x for x in scores if not math.isfinite(float(x))), len(scores))
            raise GrueError(
                f"the reward function returned an invalid reward ({bad!r})",
                key="reward_fn",
                fix="make the reward return one finite float per generation",
            )
        return replace(episodes, task_rewards=torch.tensor([float(x) for x in scores], device=self.device))

    def _logprobs_and_values(
        self, gen: Generated, with_values: bool
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """The policy's log-probs, masked and unmasked (NLPO), and values of the sampled
        responses: from the sampler's own forward passes, else from one scoring pass."""
        if gen.logprobs is not None and (gen.hidden is not None or not with_values):
            values = self.policy.values(gen.hidden) if with_values else None
            return gen.logprobs, gen.raw_logprobs, values
        out = self.policy(
            gen.tokens, action_mask=gen.action_mask, with_values=with_values, with_raw_logprobs=True
        )
        return out.logprobs, out.raw_logprobs, out.values

    def _reference_logprobs(self, tokens: TokenBatch, logprobs: torch.Tensor) -> torch.Tensor:
        """The reference's log-probs of the responses (the policy's own when there is none),
        computed under inference mode (cheaper than no_grad) and copied out of it for the loss."""
        if self.ref_lm is None:
            return logprobs
        with torch.inference_mode(), without_adapters(self.ref_lm):
            logits, _ = response_logits_and_hidden(self.ref_lm, tokens, self.policy.model_type, False)
            ref_logprobs = token_logprobs(logits, tokens.response_ids)
        return ref_logprobs.clone()
