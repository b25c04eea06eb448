"""Perplexity under a tiny GPT-2: exp of the model's own loss in one window, and a by-hand sliding window."""

import math

import pytest

from grue_bench.errors import GrueError
from grue_bench.metrics.perplexity import Perplexity

LINES = [
    "the cat sat on the mat",
    "a dog barked at the moon",
    "it rained all day long",
    "the dog sat on the cat",
    "the moon rained on the mat",
]


@pytest.fixture(scope="module")
def tiny_lm():
    """A 2-layer GPT-2 (context 32, with dropout) and a WordLevel tokenizer trained on LINES."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.WordLevel(unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.train_from_iterator(LINES, trainers.WordLevelTrainer(special_tokens=["<unk>", "<eos>"]))
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, unk_token="<unk>", eos_token="<eos>")
    torch.manual_seed(0)
    config = GPT2Config(vocab_size=tokenizer.get_vocab_size(), n_positions=32, n_embd=32, n_layer=2, n_head=2)
    return GPT2LMHeadModel(config), fast


def perplexity(metric, references, model=None, split_name="validation"):
    return metric.compute([""] * len(references), [""] * len(references), references, None, model, split_name)


def test_one_window_equals_exp_of_the_models_own_loss(tiny_lm):
    import torch

    lm, tokenizer = tiny_lm
    references = [[LINES[0]], [LINES[1], LINES[2]]]
    result = perplexity(Perplexity(), references, model=_with_tokenizer(lm, tokenizer))
    ids = tokenizer("\n\n".join([LINES[0], LINES[1], LINES[2]]), return_tensors="pt").input_ids
    assert ids.size(1) < 32
    lm.eval()
    with torch.no_grad():
        expected = math.exp(float(lm(ids, labels=ids).loss))
    scores, corpus = result["fluency_metrics/perplexity"]
    assert scores is None
    assert corpus == pytest.approx(expected, rel=1e-5)


def test_a_sliding_window_matches_scoring_each_token_by_hand(tiny_lm):
    import torch

    lm, tokenizer = tiny_lm
    references = [[line] for line in LINES * 2]  # about 55 tokens, more than the window
    metric = Perplexity(stride=1, max_length=8)
    corpus = perplexity(metric, references, model=_with_tokenizer(lm, tokenizer))[
        "fluency_metrics/perplexity"
    ][1]

    ids = tokenizer("\n\n".join(LINES * 2), return_tensors="pt").input_ids[0]
    lm.eval()
    nll = []
    with torch.no_grad():
        for t in range(1, len(ids)):  # token t, predicted from at most 7 tokens before it
            context = ids[max(0, t - 7) : t].unsqueeze(0)
            log_probs = torch.log_softmax(lm(context).logits[0, -1], dim=-1)
            nll.append(-float(log_probs[ids[t]]))
    assert corpus == pytest.approx(math.exp(sum(nll) / len(nll)), rel=1e-4)


def test_a_model_folder_gives_the_same_perplexity_as_the_model(tiny_lm, tmp_path):
    lm, tokenizer = tiny_lm
    lm.save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    references = [[LINES[3]], [LINES[4]]]
    from_folder = perplexity(Perplexity(model_name=str(tmp_path)), references)
    from_model = perplexity(Perplexity(tokenizer_name=str(tmp_path)), references, model=lm)
    assert from_folder["fluency_metrics/perplexity"][1] == pytest.approx(
        from_model["fluency_metrics/perplexity"][1], rel=1e-5
    )


def test_the_policy_keeps_its_training_mode_and_dropout_does_not_leak_in(tiny_lm):
    lm, tokenizer = tiny_lm
    model = _with_tokenizer(lm, tokenizer)
    references = [[LINES[0]], [LINES[1]]]
    lm.eval()
    in_eval = perplexity(Perplexity(), references, model=model)
    lm.train()
    in_train = perplexity(Perplexity(), references, model=model)
    assert lm.training
    assert in_train == in_eval
    lm.eval()


def test_train_split_is_skipped_by_default(tiny_lm):
    lm, tokenizer = tiny_lm
    assert (
        perplexity(Perplexity(), [[LINES[0]]], model=_with_tokenizer(lm, tokenizer), split_name="train") == {}
    )


def test_without_a_model_it_says_what_to_pass():
    with pytest.raises(GrueError, match="needs a causal LM") as error:
        perplexity(Perplexity(), [[LINES[0]]])
    assert "set model_name" in str(error.value)


def test_without_a_tokenizer_it_says_how_to_give_one(tiny_lm):
    lm, _ = tiny_lm
    bare = type(lm)(lm.config)  # a fresh LM with no tokenizer attached
    with pytest.raises(GrueError, match="no tokenizer"):
        perplexity(Perplexity(), [[LINES[0]]], model=bare)


def test_a_stride_longer_than_the_window_is_cut_to_the_window_minus_one(tiny_lm, caplog):
    """RL4LMs configs use ``stride: 512``; the tiny LM's context is 32 tokens."""
    lm, tokenizer = tiny_lm
    model = _with_tokenizer(lm, tokenizer)
    references = [[line] for line in LINES * 2]  # about 55 tokens, more than the window
    with caplog.at_level("INFO", logger="grue_bench.metrics.perplexity"):
        cut = perplexity(Perplexity(stride=512), references, model=model)
    assert cut == perplexity(Perplexity(stride=31), references, model=model)
    assert "stride 512" in caplog.text and "using 31" in caplog.text
    assert perplexity(Perplexity(stride=8, max_length=8), references, model=model) == perplexity(
        Perplexity(stride=7, max_length=8), references, model=model
    )


def test_a_window_of_one_token_is_refused(tiny_lm):
    lm, tokenizer = tiny_lm
    with pytest.raises(GrueError, match="window of 1 token"):
        perplexity(Perplexity(max_length=1), [[LINES[0]]], model=_with_tokenizer(lm, tokenizer))


def test_use_text_from_meta_data_scores_each_samples_meta_info_reference(tiny_lm):
    """RL4LMs's ``use_text_from_meta_data``: the texts are ``meta_info["reference"]``, not the references."""
    lm, tokenizer = tiny_lm
    model = _with_tokenizer(lm, tokenizer)
    metric = Perplexity(use_text_from_meta_data=True)
    meta_infos = [{"reference": LINES[3]}, {"reference": LINES[4]}]
    from_meta = metric.compute(["", ""], ["", ""], [[LINES[0]], [LINES[1]]], meta_infos, model, "validation")
    assert from_meta == perplexity(Perplexity(), [[LINES[3]], [LINES[4]]], model=model)
    with pytest.raises(GrueError, match="no meta_info 'reference'"):
        metric.compute([""], [""], [[LINES[0]]], [{"other": 1}], model, "validation")


def _with_tokenizer(lm, tokenizer):
    """The LM with its tokenizer attached, as the policy passes it to metrics."""
    lm.tokenizer = tokenizer
    return lm
