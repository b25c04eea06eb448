"""The key/value cache reaches the model by the keyword its forward takes (``cache`` from
transformers 5.24, ``past_key_values`` before): the deprecated name would be dropped unread by a
``**kwargs`` wrapper once transformers removes it, and every cached step would decode blind."""

import warnings
from dataclasses import dataclass

import pytest
import torch
from torch import nn

from grue_bench.rl.adapters import add_adapter
from grue_bench.rl.hparams import PeftSettings
from grue_bench.rl.kv_cache import cache_keyword, returned_cache
from grue_bench.rl.masking import ActionMasker
from grue_bench.rl.policy import ActorCritic, frozen_copy
from grue_bench.rl.rollout import GenerationSettings, generate

from .tiny_lm import tiny_causal, tiny_seq2seq, word_tokenizer


class OldModel(nn.Module):
    def forward(self, input_ids=None, past_key_values=None):
        return input_ids


class NewModel(nn.Module):
    def forward(self, input_ids=None, cache=None):
        return input_ids


class PassThrough(nn.Module):
    """A wrapper whose forward names neither keyword (as PEFT's and DDP's)."""

    def __init__(self, inner: nn.Module):
        super().__init__()
        self.inner = inner

    def forward(self, **kwargs):
        return self.inner(**kwargs)


def test_the_keyword_is_the_one_the_forward_names_looking_through_wrappers():
    assert cache_keyword(OldModel()) == "past_key_values"
    assert cache_keyword(NewModel()) == "cache"
    assert cache_keyword(PassThrough(OldModel())) == "past_key_values"
    assert cache_keyword(PassThrough(PassThrough(NewModel()))) == "cache"


def test_a_model_that_takes_no_cache_is_named_in_the_error():
    with pytest.raises(TypeError, match="Linear takes no key/value cache"):
        cache_keyword(nn.Linear(2, 2))


@dataclass
class OldOutput:
    logits: object = None
    past_key_values: object = None


@dataclass
class NewOutput:
    logits: object = None
    cache: object = None


def test_the_returned_cache_is_read_from_the_field_the_output_has():
    assert returned_cache(OldOutput(past_key_values="old")) == "old"
    assert returned_cache(NewOutput(cache="new")) == "new"


@pytest.mark.parametrize("adapted", [False, True], ids=["full", "lora"])
@pytest.mark.parametrize("model_type", ["causal", "seq2seq"])
def test_sampling_masking_and_scoring_pass_no_deprecated_cache_keyword(model_type, adapted):
    tokenizer = word_tokenizer()
    lm = (tiny_causal if model_type == "causal" else tiny_seq2seq)(tokenizer, seed=5).eval()
    masker = ActionMasker(frozen_copy(lm), model_type, "learned_top_p", 0.6, 2)  # NLPO's mask model
    if adapted:
        lm = add_adapter(lm, model_type, PeftSettings(r=2, lora_alpha=4), key="alg.policy.args.peft").eval()
    policy = ActorCritic(lm, model_type)
    settings = GenerationSettings(8, "left", 6, True, {"do_sample": True, "top_k": 0})
    prompts = ["1 2", "the dog runs 4 5", "7"] * 2  # repeated prompts: the scoring shares their cache
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*past_key_values", category=FutureWarning)
        torch.manual_seed(0)
        gen = generate(lm, tokenizer, model_type, prompts, settings, "cpu", masker, with_hidden=True)
        with torch.no_grad():
            scored = policy(gen.tokens, action_mask=gen.action_mask)
    mask = gen.tokens.response_mask
    assert mask.sum() > len(prompts)
    assert torch.allclose(gen.logprobs * mask, scored.logprobs * mask, atol=1e-5)  # the cache was used
