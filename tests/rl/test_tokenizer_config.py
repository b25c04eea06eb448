"""RL4LMs's tokenizer keys and prompt shapes: ``build_tokenizer`` (pad = eos, sides), prompts cut
to ``max_prompt_length`` (observation.py; padded here to the longest prompt only), a causal
``min_length`` counted in new tokens (causal_policy.py adds the padded prompt's width to it)."""

import pytest
import torch
from conftest import RL4LMS_TASK_CONFIGS

from grue_bench.models import configure_tokenizer
from grue_bench.rl.rollout import GenerationSettings, encode_prompts, generate

from .tiny_lm import tiny_causal, word_tokenizer

EOS = 1
IMDB_PPO = RL4LMS_TASK_CONFIGS / "imdb_text_continuation" / "gpt2_ppo.yml"


def test_pad_token_as_eos_token_gives_a_tokenizer_without_pad_its_eos_and_the_sides_are_set():
    tokenizer = word_tokenizer()
    tokenizer.pad_token = None
    configure_tokenizer(tokenizer, True, "right", "right")
    assert tokenizer.pad_token_id == tokenizer.eos_token_id == EOS
    assert (tokenizer.padding_side, tokenizer.truncation_side) == ("right", "right")


def test_without_pad_token_as_eos_token_the_tokenizer_keeps_no_pad_token():
    tokenizer = word_tokenizer()
    tokenizer.pad_token = None
    configure_tokenizer(tokenizer, False, None, None)
    assert tokenizer.pad_token is None


def test_a_run_loads_its_base_lm_with_the_configs_tokenizer_keys(monkeypatch):
    from grue_bench.resolve import load_config
    from grue_bench.runner import assemble
    from grue_bench.runner.assemble import load_base

    seen = {}
    monkeypatch.setattr(assemble, "load_base_lm", lambda *args, **kwargs: seen.update(kwargs))
    overrides = ["tokenizer.padding_side=right", "tokenizer.truncation_side=right"]
    load_base(load_config(IMDB_PPO, [*overrides, "tokenizer.pad_token_as_eos_token=false"]))
    assert (seen["pad_token_as_eos_token"], seen["padding_side"], seen["truncation_side"]) == (
        False,
        "right",
        "right",
    )


@pytest.mark.parametrize(("side", "kept"), [("left", [8, 9, 10]), ("right", [6, 7, 8])])
def test_causal_prompts_are_cut_on_the_prompt_side_and_left_padded(side, kept):
    tokenizer = word_tokenizer()
    tokenizer.truncation_side = "right"  # the config's side, restored after the prompts are cut
    settings = GenerationSettings(3, side, 4, True, {})
    ids, mask = encode_prompts(tokenizer, ["2 3 4 5 6", "7"], settings, "causal", "cpu")
    assert ids.tolist() == [kept, [0, 0, 11]]
    assert mask.tolist() == [[1, 1, 1], [0, 0, 1]]
    assert tokenizer.truncation_side == "right"


def _eos_loving_causal():
    """A tiny GPT-2 whose every next token is EOS unless EOS is forbidden."""
    tokenizer = word_tokenizer()
    lm = tiny_causal(tokenizer).eval()
    head = torch.nn.Linear(lm.config.n_embd, len(tokenizer))
    torch.nn.init.zeros_(head.weight)
    torch.nn.init.zeros_(head.bias)
    head.bias.data[EOS] = 10.0
    lm.lm_head = head
    return tokenizer, lm


@pytest.mark.parametrize("longest", ["the dog runs 4 5", "the dog runs 4 5 6 7 8 9 10 11"])
@pytest.mark.parametrize("do_sample", [True, False], ids=["sampler", "generate"])
def test_a_causal_min_length_holds_eos_back_for_that_many_new_tokens_whatever_the_padding(do_sample, longest):
    """RL4LMs generates with min_length + the padded prompt's width: min_length 3 forbids EOS
    for 3 new tokens, even though the padded prompt (5 or 11 columns) is already longer than 3."""
    tokenizer, lm = _eos_loving_causal()
    kwargs = {"do_sample": do_sample, "min_length": 3}
    settings = GenerationSettings(16, "left", 6, True, kwargs)
    out = generate(lm, tokenizer, "causal", ["1 2", longest], settings, "cpu")
    first_eos = (out.tokens.response_ids == EOS).int().argmax(1)
    assert first_eos.tolist() == [3, 3]
