"""Evaluation generates as RL4LMs does: ``train_evaluation.generation_kwargs`` when written, else
the training kwargs; a named ``post_processing_fn`` rewrites the texts before they are scored."""

from types import SimpleNamespace

import pytest
import torch
from conftest import RL4LMS_CONFIGS, RL4LMS_TASK_CONFIGS

from grue_bench import plugins
from grue_bench.data import Sample
from grue_bench.errors import GrueError
from grue_bench.postprocessing import three_sentence_summary
from grue_bench.registry import Registry
from grue_bench.resolve import build_config
from grue_bench.rl import rollout
from grue_bench.rl.precision import FP32, Precision
from grue_bench.runner import evaluator
from grue_bench.runner.evaluator import evaluate, score_texts
from grue_bench.runner.generation import generation_settings
from grue_bench.yamlio import read_yaml_mapping

POLICY_KWARGS = {"do_sample": True, "top_k": 5, "max_new_tokens": 7}


def _rl_data(**evaluation_kwargs) -> dict:
    """RL4LMs's IMDB PPO config with only the policy's generation kwargs (unless given)."""
    data = read_yaml_mapping(RL4LMS_TASK_CONFIGS / "imdb_text_continuation" / "gpt2_ppo.yml")
    data["alg"]["policy"]["args"]["generation_kwargs"] = dict(POLICY_KWARGS)
    data["train_evaluation"].pop("generation_kwargs", None)
    data["train_evaluation"].update(evaluation_kwargs)
    return data


def _supervised_data(**generation_kwargs) -> dict:
    data = read_yaml_mapping(RL4LMS_CONFIGS / "commongen_t5_supervised.yml")
    data["alg"]["generation_kwargs"].update(generation_kwargs)
    return data


def test_without_evaluation_kwargs_evaluation_uses_the_policys():
    config = build_config(_rl_data(), "test")
    assert generation_settings(config, evaluation=True).generation_kwargs == POLICY_KWARGS


def test_evaluation_kwargs_written_are_kept():
    config = build_config(_rl_data(generation_kwargs={"max_new_tokens": 3}), "test")
    assert generation_settings(config, evaluation=True).generation_kwargs == {"max_new_tokens": 3}


def test_a_supervised_config_evaluates_with_alg_generation_kwargs():
    config = build_config(_supervised_data(), "test")
    assert generation_settings(config, evaluation=True).generation_kwargs == {
        "do_sample": True,
        "top_k": 0,
        "temperature": 0.7,
        "min_length": 5,
        "max_new_tokens": 20,
    }


def test_three_sentence_summary_keeps_the_first_three_sentences_one_per_line():
    text = "The cat sat. It was warm! Was it? The dog came. It left."
    assert three_sentence_summary(text) == "The cat sat.\nIt was warm!\nWas it?"
    assert three_sentence_summary("  One sentence only  ") == "One sentence only"


def test_rl4lms_null_post_processing_fn_is_accepted():
    config = build_config(_supervised_data(post_processing_fn=None), "test")
    assert config.alg.generation_kwargs.post_processing_fn is None


def test_an_unknown_post_processor_is_an_error_naming_the_key():
    with pytest.raises(GrueError) as caught:
        build_config(_supervised_data(post_processing_fn={"id": "three_sentences"}), "test")
    message = str(caught.value)
    assert "alg.generation_kwargs.post_processing_fn.id" in message
    assert "three_sentence_summary" in message


def test_a_post_processor_in_the_policy_kwargs_is_refused():
    data = _rl_data()
    policy_kwargs = data["alg"]["policy"]["args"]["generation_kwargs"]
    policy_kwargs["post_processing_fn"] = {"id": "three_sentence_summary"}
    with pytest.raises(GrueError) as caught:
        build_config(data, "test")
    assert "evaluation texts only" in str(caught.value)
    assert "alg.policy.args.generation_kwargs" in str(caught.value)


@pytest.fixture
def tiny_causal_lm():
    from rl.tiny_lm import tiny_causal, word_tokenizer

    tokenizer = word_tokenizer()
    tokenizer.padding_side = "left"
    return tiny_causal(tokenizer), tokenizer


def _evaluate_tiny(lm, tokenizer, data: dict, precision=FP32):
    data["env"]["args"].update(max_prompt_length=8, max_episode_length=24)
    data["train_evaluation"]["metrics"] = [{"id": "diversity"}]
    config = build_config(data, "test")
    samples = [Sample(str(i), "the cat runs 1 2", ["3 4"]) for i in range(6)]
    return evaluate(lm, tokenizer, "causal", config, samples, "val", torch.device("cpu"), precision)


def test_evaluation_generates_in_the_runs_precision(tiny_causal_lm):
    lm, tokenizer = tiny_causal_lm
    seen = []
    lm.lm_head.register_forward_hook(lambda module, inputs, output: seen.append(output.dtype))
    _evaluate_tiny(lm, tokenizer, _rl_data())
    assert set(seen) == {torch.float32}
    seen.clear()
    _evaluate_tiny(lm, tokenizer, _rl_data(), Precision("bf16", "cpu"))
    assert set(seen) == {torch.bfloat16}


def test_perplexity_under_the_policy_scores_in_the_runs_precision_other_metrics_in_float32(tiny_causal_lm):
    lm, tokenizer = tiny_causal_lm
    seen = []
    lm.lm_head.register_forward_hook(lambda module, inputs, output: seen.append(output.dtype))
    data = _rl_data()
    data["train_evaluation"]["metrics"] = [{"id": "causal_perplexity"}, {"id": "diversity"}]
    config = build_config(data, "test")
    samples = [Sample(str(i), "the cat", [f"{i} {i + 1} the dog runs"]) for i in range(6)]
    texts = ["1 2"] * 6
    fp32, _ = score_texts(lm, tokenizer, "causal", config, samples, "val", texts)
    assert set(seen) == {torch.float32}
    seen.clear()
    half, _ = score_texts(lm, tokenizer, "causal", config, samples, "val", texts, Precision("bf16", "cpu"))
    assert set(seen) == {torch.bfloat16} and not torch.is_autocast_enabled("cpu")
    perplexity = "fluency_metrics/perplexity"
    assert half.corpus()[perplexity] == pytest.approx(fp32.corpus()[perplexity], rel=0.02)
    assert half.corpus()["diversity_metrics/vocab_size"] == fp32.corpus()["diversity_metrics/vocab_size"]


def test_evaluation_samples_at_most_the_policys_max_new_tokens(tiny_causal_lm):
    lm, tokenizer = tiny_causal_lm
    torch.manual_seed(0)
    _, rows = _evaluate_tiny(lm, tokenizer, _rl_data())
    lengths = [len(tokenizer(row["text"], add_special_tokens=False).input_ids) for row in rows]
    assert max(lengths) == 7


def test_evaluation_scores_the_post_processed_texts(tiny_causal_lm, monkeypatch):
    lm, tokenizer = tiny_causal_lm
    registry = Registry("post_processors")
    registry.register("first_word", lambda text: text.split()[0] if text.split() else "")
    monkeypatch.setattr(plugins, "POST_PROCESSORS", registry)
    data = _rl_data(generation_kwargs={**POLICY_KWARGS, "post_processing_fn": {"id": "first_word"}})
    torch.manual_seed(0)
    scores, rows = _evaluate_tiny(lm, tokenizer, data)
    assert all(len(row["text"].split()) <= 1 for row in rows)
    assert scores.results["diversity"]


def test_evaluation_batches_prompts_of_like_length_and_returns_texts_in_the_samples_order(
    tiny_causal_lm, monkeypatch
):
    lm, tokenizer = tiny_causal_lm
    batches = []

    def echo(lm, tokenizer, model_type, prompts, settings, device):
        batches.append([len(prompt.split()) for prompt in prompts])
        return SimpleNamespace(texts=[f"answer to {prompt}" for prompt in prompts])

    monkeypatch.setattr(evaluator, "generate", echo)
    handed_back_before = []  # the batches generated when the heap's free pages were offered back
    monkeypatch.setattr(evaluator, "hand_back_when_short", lambda: handed_back_before.append(len(batches)))
    data = _rl_data()
    data["env"]["args"].update(max_prompt_length=4)
    data["train_evaluation"]["eval_batch_size"] = 2
    config = build_config(data, "test")
    prompts = ["1 2 3", "1", "1 2 3 4 5 6", "1 2", "1 2 3 4 5", "2"]
    samples = [Sample(str(i), prompt, []) for i, prompt in enumerate(prompts)]
    texts = evaluator.generate_texts(lm, tokenizer, "causal", config, samples, "val", torch.device("cpu"))
    assert texts == [f"answer to {prompt}" for prompt in prompts]
    # cut to 4 tokens, the two longest prompts are as wide as each other: they keep their order
    assert batches == [[1, 1], [2, 3], [6, 5]]
    assert handed_back_before == [0, 1, 2]
    assert evaluator.generate_texts(lm, tokenizer, "causal", config, [], "val", torch.device("cpu")) == []


DIALOG_SUPERVISED = RL4LMS_TASK_CONFIGS / "dialog" / "gpt2_supervised.yml"
"""RL4LMs's DailyDialog supervised config: tokenizer.max_length 128, max_new_tokens 20."""


class _Tokenizer:
    def __init__(self, model_max_length: int) -> None:
        self.model_max_length = model_max_length


@pytest.mark.parametrize(
    ("model_max_length", "model_type", "width"),
    [(1024, "causal", 128), (140, "causal", 108), (140, "seq2seq", 128)],
)
def test_a_supervised_model_generates_with_tokenizer_max_length_less_new_tokens_if_they_overflow(
    model_max_length, model_type, width
):
    """RL4LMs's supervised trainer: max_prompt_length = tokenizer.max_length, minus max_new_tokens
    for a causal LM when both exceed the tokenizer's model_max_length (GPT-2's 1024: no cut)."""
    config = build_config(read_yaml_mapping(DIALOG_SUPERVISED), "test")
    settings = generation_settings(config, True, _Tokenizer(model_max_length), model_type)
    assert settings.max_prompt_length == width


def test_without_tokenizer_max_length_a_supervised_model_takes_max_prompt_length():
    data = read_yaml_mapping(DIALOG_SUPERVISED)
    del data["tokenizer"]["max_length"]
    config = build_config({**data, "env": {"args": {"max_prompt_length": 40}}}, "test")
    assert generation_settings(config, True, _Tokenizer(1024), "causal").max_prompt_length == 40


def test_tokenizer_max_length_is_refused_for_rl_algorithms_which_rl4lms_lets_ignore_it():
    data = _rl_data()
    data["tokenizer"]["max_length"] = 64
    with pytest.raises(GrueError) as error:
        build_config(data, "c.yml")
    assert "c.yml: tokenizer.max_length: tokenizer.max_length is read by the supervised trainer only" in str(
        error.value
    )
    assert "env.args.max_prompt_length sets the prompt width" in str(error.value)


def test_beam_search_runs_each_prompt_once_and_decodes_as_generate_does(tiny_causal_lm):
    """generate() would run each prompt once per beam; the prompt's columns but the last go
    through the model once per prompt, its cache is repeated for the beams, and the beams are
    the same (float32)."""
    from transformers import GenerationConfig

    lm, tokenizer = tiny_causal_lm
    lm.eval()  # as generate() puts it: no dropout
    batch = tokenizer(["the cat runs 1 2", "1", "the dog"], return_tensors="pt", padding=True)
    width, eos = batch.input_ids.size(1), [tokenizer.eos_token_id]
    kwargs = {"num_beams": 3, "do_sample": False, "max_new_tokens": 6, "min_length": width + 6}
    shapes = []
    hook = lm.transformer.register_forward_pre_hook(
        lambda module, args, kw: shapes.append(tuple(args[0].shape)), with_kwargs=True
    )
    ids, mask = batch.input_ids, batch.attention_mask  # no token type ids: generate() takes none
    ours = rollout._hf_generate(lm, tokenizer, "causal", ids, mask, kwargs, eos, [])
    hook.remove()
    config = GenerationConfig(**kwargs, pad_token_id=tokenizer.pad_token_id, eos_token_id=eos)
    theirs = lm.generate(input_ids=ids, attention_mask=mask, generation_config=config)[:, width:]
    assert torch.equal(ours, theirs) and ours.shape == (3, 6)
    assert shapes[0] == (3, width - 1) and shapes[1:] == [(9, 1)] * 6
