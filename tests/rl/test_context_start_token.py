"""RL4LMs's ``env.args.context_start_token``: the token the response's context opens with (its
observation.py puts it last in the context): a seq2seq decoder starts from it, a causal LM
continues from it after the prompt, in sampling, scoring and evaluation alike."""

import logging

import torch
from conftest import RL4LMS_TASK_CONFIGS

from grue_bench.resolve.grid import build_specs
from grue_bench.rl.policy import ActorCritic
from grue_bench.rl.rollout import GenerationSettings, encode_prompts, generate

from .tiny_lm import tiny_causal, tiny_seq2seq, word_tokenizer

OPENER = 8
"""The word tokenizer's id of '4'."""


def test_a_causal_lms_prompts_end_with_the_context_start_token():
    tokenizer = word_tokenizer()
    settings = GenerationSettings(3, "left", 4, True, {}, context_start_token=OPENER)
    ids, mask = encode_prompts(tokenizer, ["2 3", "7"], settings, "causal", "cpu")
    assert ids.tolist() == [[6, 7, OPENER], [0, 11, OPENER]]  # padded to the longest prompt
    assert mask.tolist() == [[1, 1, 1], [0, 1, 1]]
    assert settings.causal_prompt_width == 4  # the most a prompt can take: 3 tokens and the opener


def test_a_causal_lm_generates_after_the_context_start_token_and_is_scored_so():
    torch.manual_seed(0)
    tokenizer = word_tokenizer()
    lm = tiny_causal(tokenizer).eval()
    greedy = {"do_sample": False}
    opened = GenerationSettings(3, "left", 4, False, greedy, context_start_token=OPENER)
    out = generate(lm, tokenizer, "causal", ["2 3"], opened, "cpu")
    # the same as generating from the prompt with the opener written after it
    plain = GenerationSettings(4, "left", 4, False, greedy)
    written = generate(lm, tokenizer, "causal", ["2 3 4"], plain, "cpu")
    assert tokenizer.convert_tokens_to_ids("4") == OPENER
    assert out.tokens.prompt_ids.tolist() == written.tokens.prompt_ids.tolist() == [[6, 7, OPENER]]
    assert out.tokens.response_ids.tolist() == written.tokens.response_ids.tolist()
    # the scoring pass reads the rollout's prompt ids, opener included
    policy = ActorCritic(lm, "causal")
    scored = policy(out.tokens, with_values=False).logprobs
    assert torch.allclose(scored, policy(written.tokens, with_values=False).logprobs)


def test_a_seq2seq_decoder_starts_from_the_context_start_token(monkeypatch):
    from grue_bench.models import BaseLM
    from grue_bench.resolve import load_config
    from grue_bench.runner import assemble
    from grue_bench.runner.assemble import load_base

    tokenizer = word_tokenizer()
    lm = tiny_seq2seq(tokenizer).eval()
    assert lm.config.decoder_start_token_id != OPENER
    monkeypatch.setattr(assemble, "load_base_lm", lambda *a, **k: BaseLM(lm, tokenizer, "seq2seq", "t"))
    config = load_config(
        RL4LMS_TASK_CONFIGS / "summarization" / "t5_ppo.yml", [f"env.args.context_start_token={OPENER}"]
    )
    base = load_base(config)
    assert (
        base.model.config.decoder_start_token_id
        == base.model.generation_config.decoder_start_token_id
        == OPENER
    )
    greedy = GenerationSettings(4, "left", 3, False, {"do_sample": False})
    out = generate(base.model, tokenizer, "seq2seq", ["2 3"], greedy, "cpu")
    ids, mask = encode_prompts(tokenizer, ["2 3"], greedy, "seq2seq", "cpu")
    opened = torch.tensor([[OPENER]])
    expected = lm.generate(
        input_ids=ids, attention_mask=mask, decoder_input_ids=opened, do_sample=False, max_new_tokens=3
    )
    assert out.tokens.response_ids.tolist() == expected[:, 1:].tolist()
    # the scoring pass feeds the decoder the opener, then the response
    logits = lm(
        input_ids=ids, attention_mask=mask, decoder_input_ids=torch.cat([opened, expected[:, 1:-1]], 1)
    ).logits
    manual = torch.log_softmax(logits, -1).gather(-1, expected[:, 1:, None])[..., 0]
    scored = ActorCritic(base.model, "seq2seq")(out.tokens, with_values=False).logprobs
    assert torch.allclose(scored, manual, atol=1e-5)


def test_an_offline_profile_leaves_out_a_token_id_of_the_replaced_tokenizer(caplog):
    caplog.set_level(logging.INFO, logger="grue_bench.resolve.offline")
    config = RL4LMS_TASK_CONFIGS / "summarization" / "t5_ppo.yml"
    (written,) = build_specs(["cnn_dailymail"], ["ppo"], [0], None, config)
    assert written.config.env.args.context_start_token == 0
    (offline,) = build_specs(["cnn_dailymail"], ["ppo"], [0], "tiny", config, offline=True)
    assert offline.config.env.args.context_start_token is None
    assert (
        "tiny profile: env.args.context_start_token 0 -> left out: it is a token id of the replaced"
        in caplog.text
    )
