"""Profile ``tiny``: a small GPT-2- or T5-style LM with its own BPE tokenizer, pretrained here on a corpus.

The model stands in for a pretrained LM, so RL never starts from random weights. It is built
from a config and pretrained briefly as a plain language model on the corpus (next-token
prediction for causal models; continuation of a text's first part for seq2seq models, see
``pretrain.py``). The result is cached under ``cache_dir()/models/tiny-<model_type>/`` keyed
by the corpus, the hyperparameters and the seed, so later runs load it without training.

Tokenizer: byte-level BPE trained on the corpus, with ``<pad>``, ``</s>`` (eos), ``<s>`` (bos)
and ``<unk>``. Causal: ``<s> text`` (bos first, so an empty prompt still gives the model one
token to start from), padding on the left. Seq2seq: ``text </s>`` as T5 does (an empty prompt
is just ``</s>``), padding on the right, and the decoder starts from ``<pad>``.
"""

from __future__ import annotations

import logging
import math
import random
import re
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import (
    AutoModelForCausalLM,
    AutoModelForSeq2SeqLM,
    GPT2Config,
    GPT2LMHeadModel,
    PreTrainedModel,
    PreTrainedTokenizerFast,
    T5Config,
    T5ForConditionalGeneration,
)

from grue_bench.errors import GrueError
from grue_bench.models import pretrain
from grue_bench.models.base import BaseLM
from grue_bench.models.cache import content_hash, read_entry, write_entry
from grue_bench.paths import cache_dir

logger = logging.getLogger(__name__)

FORMAT_VERSION = 2
"""Bump when a code change alters what a given config trains, so old cache entries are not reused."""
PAD, EOS, BOS, UNK = "<pad>", "</s>", "<s>", "<unk>"


@dataclass(frozen=True)
class TinyLMConfig:
    """Sizes and pretraining settings of a tiny base LM (the defaults take about a minute on 2 cores)."""

    vocab_size: int = 2000
    """BPE vocabulary size, special tokens included (smaller when the corpus has fewer merges)."""
    width: int = 128
    """n_embd (GPT-2) / d_model (T5)."""
    layers: int = 2
    """Transformer layers (T5: in the encoder and in the decoder each)."""
    heads: int = 4
    d_ff: int = 256
    """T5 feed-forward width."""
    n_positions: int = 512
    """Longest sequence (GPT-2: prompt plus generation); also the tokenizer's model_max_length."""
    steps: int = 250
    batch_size: int = 16
    learning_rate: float = 2e-3
    warmup_steps: int = 25
    block_size: int = 128
    """Causal: tokens per training block."""
    max_source_tokens: int = 128
    """Seq2seq: encoder tokens kept during pretraining."""
    max_target_tokens: int = 64
    """Seq2seq: decoder tokens kept during pretraining."""
    empty_input_fraction: float = 0.1
    """Seq2seq: share of pretraining examples with an empty encoder input."""
    validation_fraction: float = 0.05
    """Share of the corpus held out to report the validation loss."""


DEFAULT_CONFIGS: dict[str, TinyLMConfig] = {
    "causal": TinyLMConfig(),
    # T5 learns more slowly at a given learning rate; its steps cost more, so fewer of them.
    "seq2seq": TinyLMConfig(learning_rate=5e-3, steps=200, max_target_tokens=48),
}
"""The configs ``load_base_lm(profile='tiny')`` uses, per model type."""


def cache_path(model_type: str, texts: list[str], corpus_id: str, seed: int, config: TinyLMConfig) -> Path:
    """Where the tiny LM trained on ``texts`` with ``config`` and ``seed`` is cached."""
    key = content_hash(
        {
            "format": FORMAT_VERSION,
            "model_type": model_type,
            "config": asdict(config),
            "seed": seed,
            "texts": texts,
        }
    )
    label = re.sub(r"[^A-Za-z0-9_.-]+", "_", corpus_id) or "corpus"
    return cache_dir() / "models" / f"tiny-{model_type}" / f"{label}-{key}"


def load_tiny(
    model_type: str,
    texts: list[str],
    *,
    corpus_id: str = "",
    seed: int = 0,
    config: TinyLMConfig | None = None,
) -> BaseLM:
    """The tiny LM for ``texts``: loaded from the cache, or trained now and cached."""
    config = config or DEFAULT_CONFIGS[model_type]
    texts = [text for text in texts if text.strip()]
    if len(texts) < 2:
        raise GrueError(
            f"corpus '{corpus_id or '(unnamed)'}' has {len(texts)} non-empty text(s), too few for a tiny LM",
            key="corpus",
            fix="pass a corpus with at least a few hundred lines of text",
        )
    path = cache_path(model_type, texts, corpus_id, seed, config)
    if read_entry(path) is None:
        logger.info("training a tiny %s LM on %d texts (cache: %s)", model_type, len(texts), path)
        write_entry(path, lambda staging: train_tiny(model_type, texts, seed, config, staging))
    else:
        logger.info("loading cached tiny %s LM %s", model_type, path)
    label, key = path.name.rsplit("-", 1)
    return load_cached(path, model_type, name=f"tiny-{model_type}/{label}@{key[:8]}")


def load_cached(path: Path, model_type: str, name: str) -> BaseLM:
    """A tiny LM saved by ``train_tiny`` in ``path``."""
    auto = AutoModelForCausalLM if model_type == "causal" else AutoModelForSeq2SeqLM
    model = auto.from_pretrained(path)
    model.eval()
    tokenizer = PreTrainedTokenizerFast.from_pretrained(path)
    return BaseLM(model=model, tokenizer=tokenizer, model_type=model_type, name=name)  # type: ignore[arg-type]


def train_tiny(
    model_type: str, texts: list[str], seed: int, config: TinyLMConfig, out_dir: Path
) -> dict[str, Any]:
    """Train tokenizer and model on ``texts``, save both into ``out_dir``; returns a record of the run."""
    start = time.perf_counter()
    shuffled = list(texts)
    random.Random(seed).shuffle(shuffled)
    n_valid = max(1, round(len(shuffled) * config.validation_fraction))
    valid, train = shuffled[:n_valid], shuffled[n_valid:]
    tokenizer = train_tokenizer(train, model_type, config)
    with torch.random.fork_rng():  # seed the initialisation without touching the caller's RNG
        torch.manual_seed(seed)
        model = build_model(model_type, tokenizer, config)
    settings = pretrain_settings(config)
    batches = pretrain.validation_batches(valid, tokenizer, model_type, settings, seed)
    before = pretrain.mean_loss(model, model_type, batches)
    losses = pretrain.pretrain(model, tokenizer, model_type, train, settings, seed)
    after = pretrain.mean_loss(model, model_type, batches)
    seconds = time.perf_counter() - start
    logger.info(
        "tiny %s LM: validation loss %.3f -> %.3f (uniform would be %.3f) after %d steps in %.0f s",
        model_type,
        before,
        after,
        math.log(len(tokenizer)),
        settings.steps,
        seconds,
    )
    model.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    return {
        "kind": "tiny",
        "format": FORMAT_VERSION,
        "model_type": model_type,
        "config": asdict(config),
        "seed": seed,
        "n_train_texts": len(train),
        "n_validation_texts": len(valid),
        "vocab_size": len(tokenizer),
        "validation_loss_before": before,
        "validation_loss_after": after,
        "final_train_loss": sum(losses[-20:]) / len(losses[-20:]),
        "train_seconds": seconds,
    }


def pretrain_settings(config: TinyLMConfig) -> pretrain.PretrainSettings:
    """The pretraining part of ``config``."""
    return pretrain.PretrainSettings(
        steps=config.steps,
        batch_size=config.batch_size,
        learning_rate=config.learning_rate,
        warmup_steps=min(config.warmup_steps, max(1, config.steps // 5)),
        block_size=min(config.block_size, config.n_positions),
        max_source_tokens=config.max_source_tokens,
        max_target_tokens=config.max_target_tokens,
        empty_input_fraction=config.empty_input_fraction,
    )


def train_tokenizer(texts: list[str], model_type: str, config: TinyLMConfig) -> PreTrainedTokenizerFast:
    """A byte-level BPE tokenizer trained on ``texts``, wrapped as a PreTrainedTokenizerFast."""
    raw = Tokenizer(models.BPE(unk_token=UNK))
    raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    raw.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=config.vocab_size,
        special_tokens=[PAD, EOS, BOS, UNK],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    raw.train_from_iterator(texts, trainer)
    specials = [(BOS, raw.token_to_id(BOS)), (EOS, raw.token_to_id(EOS))]
    if model_type == "causal":
        raw.post_processor = processors.TemplateProcessing(
            single=f"{BOS} $A", pair=f"{BOS} $A $B", special_tokens=specials
        )
    else:
        raw.post_processor = processors.TemplateProcessing(
            single=f"$A {EOS}", pair=f"$A {EOS} $B {EOS}", special_tokens=specials
        )
    return PreTrainedTokenizerFast(
        tokenizer_object=raw,
        pad_token=PAD,
        eos_token=EOS,
        bos_token=BOS,
        unk_token=UNK,
        padding_side="left" if model_type == "causal" else "right",
        model_max_length=config.n_positions,
    )


def build_model(model_type: str, tokenizer: PreTrainedTokenizerFast, config: TinyLMConfig) -> PreTrainedModel:
    """A randomly initialised GPT-2- or T5-style model sized by ``config`` for ``tokenizer``."""
    special = {
        "pad_token_id": tokenizer.pad_token_id,
        "eos_token_id": tokenizer.eos_token_id,
        "bos_token_id": tokenizer.bos_token_id,
    }
    if model_type == "causal":
        # No dropout: pretraining is short, and RL needs the same log-probs in rollout and update.
        model_config = GPT2Config(
            vocab_size=len(tokenizer),
            n_positions=config.n_positions,
            n_embd=config.width,
            n_layer=config.layers,
            n_head=config.heads,
            resid_pdrop=0.0,
            embd_pdrop=0.0,
            attn_pdrop=0.0,
            **special,
        )
        model = GPT2LMHeadModel(model_config)
    else:
        model_config = T5Config(
            vocab_size=len(tokenizer),
            d_model=config.width,
            d_kv=config.width // config.heads,
            d_ff=config.d_ff,
            num_layers=config.layers,
            num_decoder_layers=config.layers,
            num_heads=config.heads,
            dropout_rate=0.0,
            decoder_start_token_id=tokenizer.pad_token_id,
            **special,
        )
        model = T5ForConditionalGeneration(model_config)
    for key, value in special.items():
        setattr(model.generation_config, key, value)
    if model_type == "seq2seq":
        model.generation_config.decoder_start_token_id = tokenizer.pad_token_id
    return model
