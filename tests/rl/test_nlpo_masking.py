"""NLPO's mask keeps exactly the top-p set, and a refreshed masking model changes what is sampled."""

import random

import pytest
import torch

from grue_bench.data import Sample
from grue_bench.rl.hparams import MaskablePolicyArgs, NLPOArgs
from grue_bench.rl.masking import top_k_mask, top_p_mask
from grue_bench.rl.nlpo import NLPO
from grue_bench.rl.policy import ActorCritic
from grue_bench.rl.rollout import GenerationSettings, generate

from .tiny_lm import tiny_causal, word_tokenizer


def test_top_p_mask_keeps_exactly_the_smallest_set_reaching_p():
    logits = torch.log(torch.tensor([[0.05, 0.5, 0.15, 0.3]]))
    assert top_p_mask(logits, 0.7).tolist() == [[False, True, False, True]]  # 0.5 + 0.3 >= 0.7
    assert top_p_mask(logits, 0.5).tolist() == [[False, True, False, False]]
    assert top_p_mask(logits, 0.81).tolist() == [[False, True, True, True]]
    assert top_p_mask(logits, 1.0).tolist() == [[True, True, True, True]]
    assert top_p_mask(logits, 0.5, min_tokens_to_keep=3).tolist() == [[False, True, True, True]]
    assert top_k_mask(logits, 2).tolist() == [[False, True, False, True]]


SETTINGS = GenerationSettings(
    max_prompt_length=8,
    prompt_truncation_side="left",
    max_new_tokens=6,
    terminate_on_eos=False,
    generation_kwargs={"do_sample": True, "top_k": 0},
)


class ZeroReward:
    def batch(self, prompts, generations, references, meta_infos):
        return [0.0] * len(generations)


def _nlpo(tokenizer, lm):
    mask_args = MaskablePolicyArgs(top_mask=0.01, min_tokens_to_keep=1, target_update_iterations=1)
    return NLPO(
        ActorCritic(lm, "causal"),
        tokenizer,
        ZeroReward(),
        NLPOArgs(n_steps=4, batch_size=4, n_epochs=1),
        SETTINGS,
        mask_args=mask_args,
    )


def _greedy(lm, tokenizer, prompts):
    settings = GenerationSettings(**{**SETTINGS.__dict__, "generation_kwargs": {"do_sample": False}})
    return generate(lm, tokenizer, "causal", prompts, settings, "cpu").tokens.response_ids


def test_refreshed_mask_model_reaches_the_sampler():
    tokenizer = word_tokenizer()
    nlpo = _nlpo(tokenizer, tiny_causal(tokenizer, seed=0))
    prompts = ["1 2", "the dog", "5"]
    # top_mask is tiny, so only the masking model's best token is allowed: sampling = its greedy decode
    torch.manual_seed(1)
    sampled = generate(nlpo.unwrapped.lm, tokenizer, "causal", prompts, SETTINGS, "cpu", nlpo.masker)
    assert torch.equal(sampled.tokens.response_ids, _greedy(nlpo.masker.model, tokenizer, prompts))

    other = tiny_causal(tokenizer, seed=7)
    nlpo.unwrapped.lm.load_state_dict(other.state_dict())  # the policy moves...
    torch.manual_seed(1)
    before_refresh = generate(nlpo.unwrapped.lm, tokenizer, "causal", prompts, SETTINGS, "cpu", nlpo.masker)
    assert torch.equal(
        before_refresh.tokens.response_ids, sampled.tokens.response_ids
    )  # old mask still rules

    nlpo.iteration = 1
    nlpo.before_rollout()  # target_update_iterations = 1: refresh now
    torch.manual_seed(1)
    after = generate(nlpo.unwrapped.lm, tokenizer, "causal", prompts, SETTINGS, "cpu", nlpo.masker)
    assert torch.equal(after.tokens.response_ids, _greedy(other, tokenizer, prompts))
    assert not torch.equal(after.tokens.response_ids, sampled.tokens.response_ids)


def test_rollout_masks_contain_every_sampled_token_and_enter_the_ratio():
    tokenizer = word_tokenizer()
    nlpo = _nlpo(tokenizer, tiny_causal(tokenizer))
    nlpo.masker.top_mask = 0.5
    samples = [Sample(id=str(i), prompt_or_input_text="1 2 3", references=[]) for i in range(4)]
    rollout = nlpo.credit(nlpo.collector.collect(samples))
    assert rollout.action_mask is not None
    taken = rollout.action_mask.gather(-1, rollout.response_ids.unsqueeze(-1)).squeeze(-1)
    assert bool(taken[rollout.response_mask.bool()].all())
    # the stored log-probs are under the masked (renormalised) distribution: higher than unmasked ones
    unmasked = nlpo.unwrapped(rollout).logprobs
    assert bool((rollout.logprobs >= unmasked - 1e-5).all())
    assert bool((rollout.logprobs > unmasked + 1e-3).any())


@pytest.mark.parametrize("every", [2, 3])
def test_refresh_happens_every_target_update_iterations(every):
    tokenizer = word_tokenizer()
    nlpo = _nlpo(tokenizer, tiny_causal(tokenizer))
    nlpo.target_update_iterations = every
    refreshed = []
    nlpo.refresh_mask_model = lambda: refreshed.append(nlpo.iteration)
    pool = [Sample(id="0", prompt_or_input_text="1", references=[])]
    for _ in range(7):
        nlpo.step(pool, random.Random(0))
    assert refreshed == [i for i in range(1, 7) if i % every == 0]


def test_seq2seq_processor_encodes_the_prompts_once_and_masks_like_a_full_pass():
    from grue_bench.rl.masking import ActionMasker
    from grue_bench.rl.rollout import encode_prompts

    from .tiny_lm import tiny_seq2seq

    tokenizer = word_tokenizer()
    lm = tiny_seq2seq(tokenizer).eval()
    ids, mask = encode_prompts(tokenizer, ["1 2 3", "the cat runs"], SETTINGS, "seq2seq", "cpu")
    processor = ActionMasker(lm, "seq2seq", "learned_top_p", 0.5, 1).processor(ids, mask)
    for decoded in ([[0, 5]], [[0, 5, 6]]):  # two generation steps
        step = torch.tensor(decoded * 2)
        processor(step, torch.zeros(2, len(tokenizer)))
        full = lm(input_ids=ids, attention_mask=mask, decoder_input_ids=step).logits[:, -1]
        assert torch.equal(processor.step_masks[-1], top_p_mask(full, 0.5))
    assert processor.encoder_outputs is not None


@pytest.mark.parametrize("model_type", ["causal", "seq2seq"])
def test_cached_masking_model_gives_the_masks_of_a_full_recomputation(model_type):
    from grue_bench.rl.masking import ActionMasker
    from grue_bench.rl.policy import frozen_copy, response_logits_and_hidden

    from .tiny_lm import tiny_seq2seq

    tokenizer = word_tokenizer()
    build = tiny_causal if model_type == "causal" else tiny_seq2seq
    masker = ActionMasker(frozen_copy(build(tokenizer, seed=3)), model_type, "learned_top_p", 0.6, 2)
    prompts = ["1 2", "the dog runs", "5"]  # different lengths: left padding in the causal prompts
    torch.manual_seed(0)
    sampled = generate(build(tokenizer, seed=4), tokenizer, model_type, prompts, SETTINGS, "cpu", masker)
    # the masking model over the whole sampled sequences at once, no cache
    logits, _ = response_logits_and_hidden(masker.model, sampled.tokens, model_type, want_hidden=False)
    expected = top_p_mask(logits, 0.6, 2)
    assert torch.equal(sampled.action_mask, expected)
