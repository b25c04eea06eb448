"""The rollout sampler: the same tokens as generate() where both are deterministic, the same
distribution as generate()'s warpers, minimum lengths and EOS handled like generate()."""

import contextlib

import pytest
import torch
from transformers import GenerationConfig, LogitsProcessorList, TemperatureLogitsWarper, TopKLogitsWarper

from grue_bench.rl.masking import ActionMasker
from grue_bench.rl.policy import ActorCritic, causal_position_ids, frozen_copy
from grue_bench.rl.rollout import GenerationSettings, encode_prompts, generate
from grue_bench.rl.sampler import can_sample, draw, sample

from .tiny_lm import tiny_causal, tiny_seq2seq, word_tokenizer

PROMPTS = ["1 2", "the dog runs 4 5", "7"]  # different lengths: left padding for the causal model


class EndRowZeroAtStep:
    """Forces EOS in row 0 once it has ``step`` generated tokens (so rows end at different times)."""

    def __init__(self, prompt_length: int, step: int):
        self.prompt_length, self.step = prompt_length, step

    def __call__(self, input_ids, scores):
        if input_ids.size(1) - self.prompt_length == self.step:
            scores = scores.clone()
            scores[0, 1] = 1e4
        return scores


def _models(model_type):
    tokenizer = word_tokenizer()
    build = tiny_causal if model_type == "causal" else tiny_seq2seq
    return tokenizer, build(tokenizer, seed=5).eval()


def _settings(**kwargs):
    return GenerationSettings(8, "left", 6, True, kwargs)


@pytest.mark.parametrize(
    ("model_type", "prompts"),
    [
        ("causal", PROMPTS),
        ("causal", ["1 2 3", "4 5 6", "the dog runs"]),
        ("causal", PROMPTS * 2),  # repeated prompts: run through the model once
        ("seq2seq", PROMPTS),
        ("seq2seq", PROMPTS * 2),
    ],
    ids=["causal-padded", "causal-unpadded", "causal-repeated", "seq2seq", "seq2seq-repeated"],
)
def test_top_1_sampling_equals_generate_greedy_with_rows_ending_at_different_steps(model_type, prompts):
    tokenizer, lm = _models(model_type)
    ids, mask = encode_prompts(tokenizer, prompts, _settings(), model_type, "cpu")
    start = ids.size(1) if model_type == "causal" else 1
    ours = sample(
        lm, model_type, ids, mask, {"do_sample": True, "top_k": 1}, 6, [1], 0, [EndRowZeroAtStep(start, 2)]
    ).tokens
    config = GenerationConfig(
        do_sample=False, max_new_tokens=6, pad_token_id=0, eos_token_id=[1], decoder_start_token_id=0
    )
    theirs = lm.generate(
        input_ids=ids,
        attention_mask=mask,
        generation_config=config,
        logits_processor=LogitsProcessorList([EndRowZeroAtStep(start, 2)]),
    )
    theirs = theirs[:, ids.size(1) :] if model_type == "causal" else theirs[:, 1:]
    assert ours[0, 2] == 1 and (ours[0, 3:] == 0).all()  # row 0 ended at step 2, then padding
    assert torch.equal(ours, theirs)


def test_sampled_tokens_follow_generates_warped_distribution():
    tokenizer, lm = _models("causal")
    n = 6000
    ids, mask = encode_prompts(tokenizer, ["the cat"] * n, _settings(), "causal", "cpu")
    kwargs = {"do_sample": True, "temperature": 0.7, "top_k": 5}
    torch.manual_seed(0)
    first = sample(lm, "causal", ids, mask, kwargs, 1, [], 0).tokens[:, 0]
    with torch.no_grad():
        # positions skip the left padding, as generate() and the sampler place them
        logits = lm(input_ids=ids[:1], attention_mask=mask[:1], position_ids=causal_position_ids(mask[:1]))
        logits = logits.logits[:, -1]
    warped = TopKLogitsWarper(5)(ids[:1], TemperatureLogitsWarper(0.7)(ids[:1], logits))
    expected = torch.softmax(warped, -1)[0]
    observed = torch.bincount(first, minlength=expected.numel()).float() / n
    assert (observed[expected == 0] == 0).all()  # never outside the top 5
    assert torch.allclose(observed, expected, atol=0.025)  # ~4 standard errors at n = 6000


def test_min_new_tokens_holds_eos_back_then_eos_ends_every_row():
    tokenizer, lm = _models("causal")
    ids, mask = encode_prompts(tokenizer, PROMPTS, _settings(), "causal", "cpu")

    def push_eos(input_ids, scores):
        return scores + 100 * (torch.arange(scores.size(-1)) == 1)

    out = sample(
        lm, "causal", ids, mask, {"do_sample": True, "min_new_tokens": 3}, 6, [1], 0, [push_eos]
    ).tokens
    assert out.size(1) == 4  # the loop stops once every row has ended
    assert (out[:, :3] != 1).all() and (out[:, 3] == 1).all()


def test_generate_takes_the_sampler_only_for_plain_sampling():
    _, lm = _models("causal")
    assert can_sample(lm, {"do_sample": True, "top_k": 50, "top_p": 0.9, "min_length": 3})
    assert not can_sample(lm, {"do_sample": False})
    assert not can_sample(lm, {"do_sample": True, "repetition_penalty": 1.2})
    assert not can_sample(lm, {"do_sample": True, "num_beams": 2})
    lm.generation_config.no_repeat_ngram_size = 2  # a model whose own generation config asks for more
    assert not can_sample(lm, {"do_sample": True})


@pytest.mark.parametrize("model_type", ["causal", "seq2seq"])
def test_generate_samples_and_decodes_with_beams_through_the_same_interface(model_type):
    tokenizer, lm = _models(model_type)
    sampled = generate(lm, tokenizer, model_type, PROMPTS, _settings(do_sample=True, top_k=0), "cpu")
    beams = generate(lm, tokenizer, model_type, PROMPTS, _settings(do_sample=False, num_beams=2), "cpu")
    for out in (sampled, beams):
        assert out.tokens.response_ids.size(0) == 3 and len(out.texts) == 3
        assert out.tokens.response_ids.size(1) <= 6


def test_draw_never_picks_a_token_of_probability_zero_at_either_end_of_the_uniform_range(monkeypatch):
    scores = torch.tensor(
        [[float("-inf"), 0.0, 1.0, float("-inf")], [0.0, float("-inf"), float("-inf"), 2.0]]
    )
    monkeypatch.setattr(torch, "rand_like", lambda t, **kw: torch.zeros_like(t))  # u = the whole mass
    assert draw(scores).tolist() == [2, 3]
    monkeypatch.setattr(torch, "rand_like", lambda t, **kw: torch.full_like(t, 1 - 2**-24))  # u ~ 0
    assert draw(scores).tolist() == [1, 0]


def test_draw_replaces_a_zero_probability_pick_of_an_unordered_cumulative_sum(monkeypatch):
    scores = torch.tensor([[float("-inf"), 0.0, 1.0], [0.0, 1.0, float("-inf")]])
    # a cumulative sum computed out of order (GPU) may put u at a zero-probability token
    monkeypatch.setattr(torch, "searchsorted", lambda cdf, u: torch.tensor([[0], [2]]))
    assert draw(scores).tolist() == [2, 1]  # the most likely token instead


@pytest.mark.parametrize(
    ("model_type", "prompts", "nlpo"),
    [
        ("causal", PROMPTS * 2, False),
        ("causal", ["1 2 3", "4 5 6", "the dog runs", "7 8 9"], True),
        ("seq2seq", PROMPTS * 2, True),
    ],
    ids=["causal-padded-repeated", "causal-unpadded-masked", "seq2seq-repeated-masked"],
)
def test_sampler_log_probs_and_values_equal_a_scoring_pass_over_the_sampled_sequences(
    model_type, prompts, nlpo
):
    """What the sampler keeps from its cached steps is what a forward pass of the policy over
    the whole sequences gives: log-probs (under NLPO's mask when masked) and values."""
    tokenizer, lm = _models(model_type)
    policy = ActorCritic(lm, model_type)
    torch.nn.init.normal_(policy.value_head.weight)
    masker = ActionMasker(frozen_copy(lm), model_type, "learned_top_p", 0.6, 2) if nlpo else None
    settings = GenerationSettings(8, "left", 6, True, {"do_sample": True, "top_k": 0, "temperature": 1.5})
    torch.manual_seed(1)
    gen = generate(lm, tokenizer, model_type, prompts, settings, "cpu", masker, with_hidden=True)
    with torch.no_grad():
        scored = policy(gen.tokens, action_mask=gen.action_mask)
    mask = gen.tokens.response_mask
    assert mask.sum() > len(prompts)  # more than one token each
    assert torch.allclose(gen.logprobs * mask, scored.logprobs * mask, atol=1e-5)
    assert torch.allclose(policy.values(gen.hidden) * mask, scored.values * mask, atol=1e-5)
    assert (gen.logprobs[mask == 0] == 0).all()


@pytest.fixture
def compiles():
    """For a test that compiles: it starts with no compiled graph, and after it every graph it left
    is dropped, which is then checked (a first compilation of another input shape, recompilations
    refused), on whichever worker it ran.

    Compiled graphs stay on the code object compiled, and transformers' forward wrapper is one code
    object for every model: a graph left behind makes a later test's first compilation a
    recompilation (an error under ``error_on_recompile``) and counts against the recompile limit,
    past which torch silently runs the code uncompiled."""
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()
    _, lm = _models("causal")
    forward = torch.compile(lm.forward, backend="eager", dynamic=False)
    with torch._dynamo.config.patch(error_on_recompile=True), torch.no_grad():
        assert forward(input_ids=torch.tensor([[4, 5, 6]])).logits.shape == (1, 3, lm.config.vocab_size)
    torch._dynamo.reset()


@pytest.mark.usefixtures("compiles")
def test_compiled_decoding_samples_what_the_eager_loop_samples_for_any_prompt_width():
    """One compiled graph (a static cache sized for the longest prompt) serves batches of any
    prompt width, and sees the weights as they are after an update: the same tokens, log-probs
    and hidden states as the uncompiled loop."""
    from grue_bench.rl.compiled import CompiledDecoder

    tokenizer, lm = _models("causal")
    compiled = CompiledDecoder(lm, capacity=8 + 6)
    kwargs = {"do_sample": True, "top_k": 0, "temperature": 1.5}
    # torch's own patch, not monkeypatch: pytest 9.2's undo deletes a config entry of torch
    with contextlib.ExitStack() as patches:
        for round_, prompts in enumerate([PROMPTS * 2, ["1 2 3 4 5 6 7 8", "the cat", "9", "4 5", "a", "7"]]):
            ids, mask = encode_prompts(tokenizer, prompts, _settings(), "causal", "cpu")
            outs = []
            for decoder in (None, compiled):
                torch.manual_seed(3)
                outs.append(
                    sample(lm, "causal", ids, mask, kwargs, 6, [1], 0, with_hidden=True, compiled=decoder)
                )
            eager, ours = outs
            assert torch.equal(ours.tokens, eager.tokens)
            assert torch.allclose(ours.logprobs, eager.logprobs, atol=1e-5)
            assert torch.allclose(ours.hidden, eager.hidden, atol=1e-5)
            if round_ == 0:  # compiled once, on the first batch: the second must not recompile
                patches.enter_context(torch._dynamo.config.patch(error_on_recompile=True))
                with torch.no_grad():  # an update changes the weights in place
                    for parameter in lm.parameters():
                        parameter.add_(0.05 * torch.randn_like(parameter))


@pytest.mark.parametrize(
    ("model_type", "kwargs", "reason"),
    [
        ("seq2seq", {"do_sample": True}, "compile_sampler serves causal LMs"),
        ("causal", {"do_sample": False, "num_beams": 2}, "these generation settings go to generate"),
    ],
    ids=["seq2seq", "beam-search"],
)
def test_compile_sampler_refuses_what_it_would_not_compile_by_its_key(model_type, kwargs, reason):
    from grue_bench.errors import GrueError
    from grue_bench.rl.rollout import RolloutCollector

    tokenizer, lm = _models(model_type)
    settings = GenerationSettings(8, "left", 6, True, kwargs, compile_sampler=True)
    with pytest.raises(GrueError, match=reason) as error:
        RolloutCollector(ActorCritic(lm, model_type), None, tokenizer, None, settings, torch.device("cpu"))
    assert "alg.policy.args.compile_sampler" in str(error.value)


@pytest.mark.usefixtures("compiles")
def test_a_failed_compilation_names_the_setting_and_what_to_install():
    import torch._inductor.config as inductor

    from grue_bench.errors import GrueError
    from grue_bench.rl.compiled import CompiledDecoder

    tokenizer, lm = _models("causal")
    ids, mask = encode_prompts(tokenizer, PROMPTS, _settings(), "causal", "cpu")
    # torch's own patches, not monkeypatch: pytest 9.2's undo deletes a config entry of torch.
    # No C++ compiler; compile, don't reuse an earlier test's graph.
    no_compiler = inductor.patch({"cpp.cxx": ("/nonexistent/g++",), "fx_graph_cache": False})
    no_cache = torch._functorch.config.patch(enable_autograd_cache=False)
    with (
        no_compiler,
        no_cache,
        pytest.raises(GrueError, match="could not compile the sampler's decode step") as error,
    ):
        sample(lm, "causal", ids, mask, {"do_sample": True}, 4, [1], 0, compiled=CompiledDecoder(lm, 14))
    message = str(error.value)
    assert "alg.policy.args.compile_sampler" in message and "C++ compiler" in message


def test_a_static_cache_too_small_for_prompt_and_response_is_refused_before_sampling():
    from grue_bench.rl.compiled import CompiledDecoder

    tokenizer, lm = _models("causal")
    ids, mask = encode_prompts(tokenizer, ["1 2 3 4 5"], _settings(), "causal", "cpu")
    with pytest.raises(ValueError, match="5 prompt \\+ 6 new tokens do not fit a static cache of 10"):
        sample(lm, "causal", ids, mask, {"do_sample": True}, 6, [1], 0, compiled=CompiledDecoder(lm, 10))


def test_sampling_in_bf16_casts_each_trained_weight_once_not_at_every_step():
    """Under inference mode autocast keeps no cast of a trained weight: the sampler runs under
    no_grad, so a bf16 rollout casts the policy's weights once per autocast region."""
    from torch.utils._python_dispatch import TorchDispatchMode

    tokenizer, lm = _models("causal")
    weights = {p.data_ptr() for p in lm.parameters() if p.dim() == 2}

    class WeightCasts(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.casts = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            cast = func.overloadpacket in (torch.ops.aten._to_copy, torch.ops.aten.to)
            if cast and args[0].data_ptr() in weights:  # inference mode dispatches to(), not _to_copy
                self.casts += 1
            return func(*args, **(kwargs or {}))

    ids, mask = encode_prompts(tokenizer, PROMPTS, _settings(), "causal", "cpu")
    steps = 6
    with torch.autocast("cpu", dtype=torch.bfloat16), WeightCasts() as counted:
        kwargs = {"do_sample": True, "min_new_tokens": steps}
        tokens = sample(lm, "causal", ids, mask, kwargs, steps, [1], 0).tokens
    assert tokens.size(1) == steps  # every step ran
    assert 0 < counted.casts <= len(weights)  # at most once each (tied weights share one), not per step
