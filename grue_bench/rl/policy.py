"""Actor-critic LM policies for causal and seq2seq models.

The value head sits on the policy's own trunk by default (one LM copy less than RL4LMs); a
separate critic LM is an option. One forward pass over whole sequences gives the log-probs of
the taken tokens, the entropy and the values: nothing is replayed token by token.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Literal

import torch
from torch import nn

from grue_bench.rl.adapters import is_adapted
from grue_bench.rl.batch import TokenBatch
from grue_bench.rl.frozen_casts import cast_frozen_weights_once
from grue_bench.rl.kv_cache import cache_keyword, returned_cache
from grue_bench.rl.lean_backward import keep_less_for_backward
from grue_bench.rl.logprobs import logprobs_and_entropy, token_logprobs


@dataclass(frozen=True)
class PolicyOutput:
    """Per response token: log pi(a_t|s_t), entropy of pi(.|s_t), V(s_t)."""

    logprobs: torch.Tensor  # [B, T]
    entropy: torch.Tensor  # [B, T]
    values: torch.Tensor | None  # [B, T]
    raw_logprobs: torch.Tensor | None = None  # [B, T] unmasked log pi(a_t|s_t), when asked


def causal_position_ids(attention_mask: torch.Tensor) -> torch.Tensor:
    """Positions that skip left padding, as generate() uses them."""
    return (attention_mask.long().cumsum(-1) - 1).clamp(min=0)


def distinct_prompts(
    prompt_ids: torch.Tensor, prompt_mask: torch.Tensor
) -> tuple[tuple[torch.Tensor, torch.Tensor], torch.Tensor | None]:
    """The distinct prompts (ids, mask) and, when some repeat (GRPO and RLOO answer each prompt
    several times), each row's index among them, so each prompt goes through the model once."""
    rows = torch.cat([prompt_ids, prompt_mask.to(prompt_ids.dtype)], dim=1)
    distinct, inverse = torch.unique(rows, dim=0, return_inverse=True)
    if distinct.size(0) == rows.size(0):
        return (prompt_ids, prompt_mask), None
    ids, mask = distinct.split(prompt_ids.size(1), dim=1)
    return (ids, mask.to(prompt_mask.dtype)), inverse


def causal_prompt_pass(
    lm: nn.Module,
    prompts: tuple[torch.Tensor, torch.Tensor],
    inverse: torch.Tensor | None,
    want_hidden: bool,
) -> tuple[object, torch.Tensor, torch.Tensor | None]:
    """One pass of a causal LM over ``distinct_prompts``' prompts (ids, mask), with the KV cache:
    the cache, the last position's logits [B, 1, V] (predicting the first response token) and,
    when wanted, its last-layer state [B, 1, H], all expanded to every row by ``inverse``."""
    ids, mask = prompts
    out = lm(
        input_ids=ids,
        attention_mask=mask,
        position_ids=causal_position_ids(mask),
        output_hidden_states=want_hidden,
        use_cache=True,
        logits_to_keep=1,
    )
    cache, logits = returned_cache(out), out.logits
    hidden = out.hidden_states[-1][:, -1:] if want_hidden else None
    if inverse is not None:
        cache.reorder_cache(inverse)
        logits, hidden = logits[inverse], (None if hidden is None else hidden[inverse])
    return cache, logits, hidden


def encoded_prompts(
    lm: nn.Module, prompts: tuple[torch.Tensor, torch.Tensor], inverse: torch.Tensor | None
) -> object:
    """A seq2seq LM's encoder outputs for ``distinct_prompts``' prompts, expanded to every row."""
    encoded = lm.get_encoder()(input_ids=prompts[0], attention_mask=prompts[1])
    if inverse is not None:
        encoded.last_hidden_state = encoded.last_hidden_state[inverse]
    return encoded


def response_logits_and_hidden(
    lm: nn.Module, batch: TokenBatch, model_type: str, want_hidden: bool
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Logits predicting each response token [B, T, V] and the hidden states at those steps.
    Repeated prompts go through the model once (their keys and values, or encoder states, are
    shared by the rows that repeat them)."""
    prompts, inverse = distinct_prompts(batch.prompt_ids, batch.prompt_mask)
    if model_type == "causal":
        # the last response token predicts nothing: the input stops before it, so every
        # position that is projected onto the vocabulary is one the update uses
        inputs = torch.cat([batch.prompt_ids, batch.response_ids[:, :-1]], dim=1)
        attention = torch.cat(
            [batch.prompt_mask, batch.response_mask[:, :-1].to(batch.prompt_mask.dtype)], dim=1
        )
        if inverse is not None and batch.prompt_ids.size(1) > 1:
            return _causal_with_shared_prompts(lm, inputs, attention, prompts, inverse, want_hidden)
        response_len = batch.response_ids.size(1)
        out = lm(
            input_ids=inputs,
            attention_mask=attention,
            position_ids=causal_position_ids(attention),
            output_hidden_states=want_hidden,
            use_cache=False,
            logits_to_keep=response_len,
        )
        return out.logits, (out.hidden_states[-1][:, -response_len:] if want_hidden else None)
    start = torch.full_like(batch.response_ids[:, :1], lm.config.decoder_start_token_id)
    decoder_input = torch.cat([start, batch.response_ids[:, :-1]], dim=1)
    decoder_mask = torch.cat(
        [torch.ones_like(batch.response_mask[:, :1]), batch.response_mask[:, :-1]], dim=1
    )
    out = lm(
        encoder_outputs=encoded_prompts(lm, prompts, inverse),
        attention_mask=batch.prompt_mask,
        decoder_input_ids=decoder_input,
        decoder_attention_mask=decoder_mask.long(),
        output_hidden_states=want_hidden,
        use_cache=False,
    )
    return out.logits, (out.decoder_hidden_states[-1] if want_hidden else None)


def _causal_with_shared_prompts(
    lm: nn.Module,
    inputs: torch.Tensor,
    attention: torch.Tensor,
    prompts: tuple[torch.Tensor, torch.Tensor],
    inverse: torch.Tensor,
    want_hidden: bool,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """``response_logits_and_hidden`` for a causal LM: the distinct prompts but their last token
    once, then each row's last prompt token and response over their cached keys and values
    (gradients flow through both)."""
    prefix_len = prompts[0].size(1) - 1
    prefix = (prompts[0][:, :prefix_len], prompts[1][:, :prefix_len])
    cache, _, _ = causal_prompt_pass(lm, prefix, inverse, want_hidden=False)
    out = lm(
        input_ids=inputs[:, prefix_len:],
        attention_mask=attention,
        position_ids=causal_position_ids(attention)[:, prefix_len:],
        **{cache_keyword(lm): cache},
        output_hidden_states=want_hidden,
        use_cache=True,
    )
    return out.logits, (out.hidden_states[-1] if want_hidden else None)


class ActorCritic(nn.Module):
    """A language model policy with a value head (shared trunk, or a separate critic LM)."""

    def __init__(
        self, lm: nn.Module, model_type: Literal["causal", "seq2seq"], critic: str = "shared"
    ) -> None:
        super().__init__()
        cast_frozen_weights_once(lm)
        keep_less_for_backward(lm)
        self.lm = lm
        self.model_type = model_type
        self.critic_lm = shared_base_copy(lm) if critic == "separate" else None
        hidden = lm.config.hidden_size if hasattr(lm.config, "hidden_size") else lm.config.d_model
        self.value_head = nn.Linear(hidden, 1)
        nn.init.zeros_(self.value_head.weight)
        nn.init.zeros_(self.value_head.bias)

    def forward(
        self,
        batch: TokenBatch,
        action_mask: torch.Tensor | None = None,
        with_values: bool = True,
        detach_value_trunk: bool = False,
        entropy_grad: bool = True,
        with_raw_logprobs: bool = False,
    ) -> PolicyOutput:
        """One pass over prompts + responses; ``detach_value_trunk`` trains only the value head;
        without ``entropy_grad`` the entropy is not differentiable (a statistic only);
        ``with_raw_logprobs`` also returns the log-probs without ``action_mask`` (NLPO's KL)."""
        shared = with_values and self.critic_lm is None
        logits, hidden = response_logits_and_hidden(self.lm, batch, self.model_type, want_hidden=shared)
        logprobs, entropy = logprobs_and_entropy(logits, batch.response_ids, action_mask, entropy_grad)
        raw_logprobs = None
        if with_raw_logprobs:
            masked = action_mask is not None
            raw_logprobs = token_logprobs(logits, batch.response_ids) if masked else logprobs
        values = None
        if with_values:
            if self.critic_lm is not None:
                _, hidden = response_logits_and_hidden(
                    self.critic_lm, batch, self.model_type, want_hidden=True
                )
            values = self.values(hidden.detach() if detach_value_trunk else hidden)
        return PolicyOutput(logprobs, entropy, values, raw_logprobs)

    def values(self, hidden: torch.Tensor) -> torch.Tensor:
        """V(s_t) [B, T] from the trunk's last hidden states [B, T, H], in float32 under any
        autocast (``precision.py``)."""
        with torch.autocast(hidden.device.type, enabled=False):
            return self.value_head(hidden.float()).squeeze(-1)

    def policy_parameters(self) -> list[nn.Parameter]:
        """The actor's parameters (the LM), without the critic's."""
        return list(self.lm.parameters())

    def critic_parameters(self) -> list[nn.Parameter]:
        """The critic's own parameters: the value head, plus the critic LM if separate."""
        params = list(self.value_head.parameters())
        if self.critic_lm is not None:
            params += list(self.critic_lm.parameters())
        return params


def shared_base_copy(lm: nn.Module) -> nn.Module:
    """A deep copy of ``lm`` whose frozen parameters (an adapter's base weights) are the
    original's own tensors: only what trains is duplicated."""
    frozen = {id(param): param for param in lm.parameters() if not param.requires_grad}
    return copy.deepcopy(lm, memo=frozen)


def frozen_copy(lm: nn.Module) -> nn.Module:
    """A frozen copy of ``lm`` in eval mode (NLPO's masking model; the reference model of an
    LM without adapter), sharing ``lm``'s frozen base weights if it has an adapter."""
    ref = shared_base_copy(lm)
    ref.eval()
    ref.requires_grad_(False)
    return ref


def reference_model(lm: nn.Module) -> nn.Module:
    """The KL's reference model: ``lm`` itself when it has an adapter (run it under
    ``adapters.without_adapters``: its base, with no second copy of the weights), else a
    frozen copy of ``lm``."""
    return lm if is_adapted(lm) else frozen_copy(lm)


def frozen_names(module: nn.Module) -> set[str]:
    """State-dict names of ``module``'s frozen parameters (an adapter's base weights, tied
    names included): training never changes them, so neither a checkpoint nor NLPO's refresh
    of its masking model copies them."""
    named = module.named_parameters(remove_duplicate=False)
    return {name for name, param in named if not param.requires_grad}


def trained_state(module: nn.Module, frozen: set[str]) -> dict[str, torch.Tensor]:
    """``module``'s state dict without the ``frozen`` names."""
    return {name: value for name, value in module.state_dict().items() if name not in frozen}


def load_trained_state(module: nn.Module, state: dict[str, torch.Tensor], frozen: set[str]) -> None:
    """Load a ``trained_state`` into ``module``: every name but the ``frozen`` ones is required."""
    missing, unexpected = module.load_state_dict(state, strict=False)
    if unexpected or set(missing) - frozen:
        raise RuntimeError(
            f"the state does not fit the model: missing {sorted(set(missing) - frozen)}, "
            f"unexpected {sorted(unexpected)}"
        )
