"""A tiny word-level GPT-2 / T5 for fast RL unit tests (independent of the model cache)."""

import random

import torch
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import (
    GPT2Config,
    GPT2LMHeadModel,
    LlamaConfig,
    LlamaForCausalLM,
    PreTrainedTokenizerFast,
    T5Config,
    T5ForConditionalGeneration,
)

WORDS = [str(i) for i in range(30)] + ["the", "a", "cat", "dog", "runs"]


def word_tokenizer() -> PreTrainedTokenizerFast:
    vocab = {"<pad>": 0, "<eos>": 1, "<bos>": 2, "<unk>": 3}
    for word in WORDS:
        vocab[word] = len(vocab)
    backend = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(
        tokenizer_object=backend, pad_token="<pad>", eos_token="<eos>", bos_token="<bos>", unk_token="<unk>"
    )


def tiny_causal(tokenizer, seed: int = 0) -> GPT2LMHeadModel:
    torch.manual_seed(seed)
    config = GPT2Config(
        vocab_size=len(tokenizer),
        n_layer=2,
        n_embd=32,
        n_head=2,
        n_positions=64,
        bos_token_id=2,
        eos_token_id=1,
        pad_token_id=0,
    )
    return GPT2LMHeadModel(config)


def tiny_seq2seq(tokenizer, seed: int = 0) -> T5ForConditionalGeneration:
    torch.manual_seed(seed)
    config = T5Config(
        vocab_size=len(tokenizer),
        d_model=32,
        d_ff=64,
        d_kv=16,
        num_layers=1,
        num_decoder_layers=1,
        num_heads=2,
        pad_token_id=0,
        eos_token_id=1,
        decoder_start_token_id=0,
    )
    return T5ForConditionalGeneration(config)


def number_texts(n: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(str(rng.randrange(30)) for _ in range(8)) for _ in range(n)]


def tiny_llama(tie: bool = True) -> LlamaForCausalLM:
    """A tiny Llama (SmolLM2's family: SwiGLU MLP, RMSNorm, tied or untied head), 40 ids."""
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=40,
        hidden_size=32,
        intermediate_size=88,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        tie_word_embeddings=tie,
    )
    return LlamaForCausalLM(config)
