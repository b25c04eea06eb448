"""The one-pass policy evaluation lines up with generation; PPO's loss on a hand-built batch."""

import math

import pytest
import torch

from grue_bench.rl.batch import Rollout, TokenBatch
from grue_bench.rl.policy import ActorCritic
from grue_bench.rl.ppo import clipped_policy_loss, clipped_value_loss
from grue_bench.rl.rollout import GenerationSettings, encode_prompts, response_mask

from .tiny_lm import tiny_causal, tiny_seq2seq, word_tokenizer

SETTINGS = GenerationSettings(
    max_prompt_length=16,
    prompt_truncation_side="left",
    max_new_tokens=6,
    terminate_on_eos=True,
    generation_kwargs={"do_sample": False},
)


@pytest.mark.parametrize("model_type", ["causal", "seq2seq"])
def test_one_pass_logprobs_equal_the_generation_scores(model_type):
    tokenizer = word_tokenizer()
    lm = (tiny_causal if model_type == "causal" else tiny_seq2seq)(tokenizer)
    lm.eval()
    prompts = ["1 2 3 4 5", "the cat", "7"]  # different lengths: left padding must not shift positions
    ids, mask = encode_prompts(tokenizer, prompts, SETTINGS, model_type, "cpu")
    out = lm.generate(
        input_ids=ids,
        attention_mask=mask,
        max_new_tokens=6,
        min_new_tokens=6,
        do_sample=False,
        output_scores=True,
        return_dict_in_generate=True,
        pad_token_id=0,
        eos_token_id=None,
    )
    response = out.sequences[:, ids.size(1) :] if model_type == "causal" else out.sequences[:, 1:]
    batch = TokenBatch(ids, mask, response, torch.ones_like(response, dtype=torch.float))
    policy = ActorCritic(lm, model_type)
    with torch.no_grad():
        result = policy(batch)
    expected = torch.stack([torch.log_softmax(s.float(), -1) for s in out.scores], dim=1)
    expected = expected.gather(-1, response.unsqueeze(-1)).squeeze(-1)
    assert torch.allclose(result.logprobs, expected, atol=1e-4)
    assert result.values.shape == response.shape
    assert torch.all(result.entropy > 0)


@pytest.mark.parametrize("model_type", ["causal", "seq2seq"])
def test_repeated_prompts_run_once_and_give_each_row_its_own_pass_and_gradient(model_type):
    tokenizer = word_tokenizer()
    lm = (tiny_causal if model_type == "causal" else tiny_seq2seq)(tokenizer).eval()
    policy = ActorCritic(lm, model_type)
    torch.nn.init.normal_(policy.value_head.weight)
    ids, mask = encode_prompts(
        tokenizer, ["1 2 3", "the cat", "1 2 3", "the cat"], SETTINGS, model_type, "cpu"
    )
    response = torch.tensor([[5, 6, 7], [8, 1, 0], [9, 1, 0], [5, 6, 7]])
    batch = TokenBatch(ids, mask, response, response_mask(response, 1, True))

    def outputs_and_gradient(rows):
        policy.zero_grad()
        outs = [policy(batch.select(r)) for r in rows]
        logprobs, values = (torch.cat([getattr(o, k) for o in outs]) for k in ("logprobs", "values"))
        ((logprobs + values) * batch.response_mask).sum().backward()
        return logprobs, values, torch.cat([p.grad.flatten() for p in policy.parameters()])

    shared = outputs_and_gradient([torch.arange(4)])  # two prompts, each run once
    alone = outputs_and_gradient([torch.tensor([i]) for i in range(4)])
    for ours, theirs in zip(shared, alone, strict=True):
        assert torch.allclose(ours, theirs, atol=1e-5)


def test_separate_critic_owns_its_trunk():
    tokenizer = word_tokenizer()
    policy = ActorCritic(tiny_causal(tokenizer), "causal", critic="separate")
    actor = {id(p) for p in policy.policy_parameters()}
    assert not actor & {id(p) for p in policy.critic_parameters()}
    ids, mask = encode_prompts(tokenizer, ["1 2"], SETTINGS, "causal", "cpu")
    out = policy(TokenBatch(ids, mask, torch.tensor([[5, 6]]), torch.ones(1, 2)))
    out.values.sum().backward()
    assert all(p.grad is None for p in policy.policy_parameters())


def test_each_distinct_prompt_is_tokenized_once_and_cached_ids_are_the_tokenizers():
    tokenizer = word_tokenizer()
    texts = ["1 2 3 4 5", "the cat", "1 2 3 4 5", "", "the cat"]
    fresh_ids, fresh_mask = encode_prompts(tokenizer, texts, SETTINGS, "causal", "cpu")
    calls = []
    tokenize = type(tokenizer).__call__

    def counting(self, batch, *args, **kwargs):
        calls.append(list(batch))
        return tokenize(self, batch, *args, **kwargs)

    cache: dict[str, list[int]] = {}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(type(tokenizer), "__call__", counting)
        first = encode_prompts(tokenizer, texts, SETTINGS, "causal", "cpu", cache)
        again = encode_prompts(tokenizer, ["the cat", "7"], SETTINGS, "causal", "cpu", cache)
    assert calls == [["1 2 3 4 5", "the cat", ""], ["7"]]  # distinct, then only the new one
    assert torch.equal(first[0], fresh_ids) and torch.equal(first[1], fresh_mask)
    expected = encode_prompts(tokenizer, ["the cat", "7"], SETTINGS, "causal", "cpu")
    assert all(torch.equal(a, b) for a, b in zip(again, expected, strict=True))
    assert cache[""] == [tokenizer.bos_token_id]  # an empty prompt conditions on BOS


@pytest.mark.parametrize(("model_type", "side"), [("causal", "left"), ("seq2seq", "right")])
def test_prompts_are_padded_to_the_longest_one(model_type, side):
    tokenizer = word_tokenizer()
    texts = ["1 2 3 4 5", "the cat", "7"]
    ids, mask = encode_prompts(tokenizer, texts, SETTINGS, model_type, "cpu")
    tokenizer.padding_side = side
    expected = tokenizer(texts, padding="longest", return_tensors="pt")
    assert ids.size(1) == 5 < SETTINGS.max_prompt_length
    assert torch.equal(ids, expected["input_ids"]) and torch.equal(mask, expected["attention_mask"])


@pytest.mark.parametrize("model_type", ["causal", "seq2seq"])
def test_padding_to_max_prompt_length_as_rl4lms_does_changes_no_number(model_type):
    """RL4LMs pads every prompt to max_prompt_length; the extra columns are masked and positions
    follow the mask, so the policy's log-probs, entropies and values are those of the narrower
    batch (to float rounding)."""
    tokenizer = word_tokenizer()
    lm = tiny_causal(tokenizer) if model_type == "causal" else tiny_seq2seq(tokenizer)
    policy = ActorCritic(lm.eval(), model_type)
    torch.nn.init.normal_(policy.value_head.weight)
    ids, mask = encode_prompts(tokenizer, ["1 2 3 4 5", "the cat", "7"], SETTINGS, model_type, "cpu")
    response = torch.tensor([[4, 5, 6], [7, 8, 1], [9, 1, 0]])
    narrow = TokenBatch(ids, mask, response, (response != 0).float())
    extra = SETTINGS.max_prompt_length - ids.size(1)
    pad = (extra, 0) if model_type == "causal" else (0, extra)
    wide = TokenBatch(
        torch.nn.functional.pad(ids, pad, value=tokenizer.pad_token_id),
        torch.nn.functional.pad(mask, pad, value=0),
        narrow.response_ids,
        narrow.response_mask,
    )
    with torch.no_grad():
        a, b = policy(narrow), policy(wide)
    for name in ("logprobs", "entropy", "values"):
        assert torch.allclose(getattr(a, name), getattr(b, name), rtol=1e-5, atol=1e-6), name


def test_a_tokenizer_without_a_pad_token_is_named_with_the_key_that_gives_it_one():
    from grue_bench.errors import GrueError

    tokenizer = word_tokenizer()
    tokenizer.pad_token = None
    with pytest.raises(GrueError, match="no padding token") as error:
        encode_prompts(tokenizer, ["1 2", "3"], SETTINGS, "causal", "cpu")
    assert "tokenizer.pad_token_as_eos_token" in str(error.value)


def test_response_mask_stops_after_the_first_eos():
    ids = torch.tensor([[5, 1, 7, 1], [5, 6, 7, 8], [1, 0, 0, 0]])
    assert response_mask(ids, 1, True).tolist() == [[1, 1, 0, 0], [1, 1, 1, 1], [1, 0, 0, 0]]
    assert response_mask(ids, 1, False).tolist() == [[1, 1, 1, 1]] * 3


def _batch(new_values_old=(0.5, 0.5)):
    ones = torch.ones(1, 2)
    return Rollout(
        prompt_ids=torch.zeros(1, 1, dtype=torch.long),
        prompt_mask=ones[:, :1].long(),
        response_ids=torch.zeros(1, 2, dtype=torch.long),
        response_mask=ones,
        logprobs=torch.log(torch.tensor([[0.5, 0.5]])),
        ref_logprobs=torch.zeros(1, 2),
        values=torch.tensor([list(new_values_old)]),
        advantages=torch.tensor([[1.0, -1.0]]),
        returns=torch.tensor([[1.5, 0.0]]),
        loss_mask=ones,
    )


def test_ppo_loss_on_a_hand_built_batch():
    # ratio = [0.6/0.5, 0.3/0.5] = [1.2, 0.6]; A = [1, -1]; eps = 0.1
    # policy terms max(-A*r, -A*clip(r)) = [max(-1.2, -1.1), max(0.6, 0.9)] = [-1.1, 0.9] -> mean -0.1
    new_logprobs = torch.log(torch.tensor([[0.6, 0.3]]))
    values = torch.tensor([[1.0, 2.0]])
    batch = _batch()
    loss = clipped_policy_loss(new_logprobs, batch.logprobs, batch.advantages, batch.response_mask, 0.1)
    assert float(loss.loss) == pytest.approx(-0.1)
    value_loss = clipped_value_loss(values, batch, clip_range_vf=None)
    assert float(value_loss) == pytest.approx(((1 - 1.5) ** 2 + 2.0**2) / 2)  # 2.125: SB3's MSE, no 1/2
    expected_kl = ((0.2 - math.log(1.2)) + (-0.4 - math.log(0.6))) / 2
    assert float(loss.approx_kl) == pytest.approx(expected_kl)
    assert float(loss.clipfrac) == 1.0
    # value clipping at 0.2 around the old values [0.5, 0.5]: clipped [0.7, 0.7]
    clipped = clipped_value_loss(values, batch, clip_range_vf=0.2)
    assert float(clipped) == pytest.approx((max(0.25, 0.64) + max(4.0, 0.49)) / 2)  # 2.32


def test_ppo_loss_gradient_is_zero_where_the_ratio_is_clipped():
    new_logprobs = torch.log(torch.tensor([[0.6, 0.3]])).requires_grad_()
    batch = _batch()
    loss = clipped_policy_loss(new_logprobs, batch.logprobs, batch.advantages, batch.response_mask, 0.1)
    loss.loss.backward()
    # token 1 (A>0, r=1.2 > 1.1) and token 2 (A<0, r=0.6 < 0.9) are both clipped: no gradient
    assert new_logprobs.grad.abs().sum() == 0
