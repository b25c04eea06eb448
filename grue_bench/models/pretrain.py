"""Language-model pretraining of a tiny base LM: the objectives, the batches and a short training loop.

- causal: next-token prediction. Every text is encoded as ``<s> text </s>``; the texts are
  packed into blocks (GPT-2 style, little padding), a text that fits a block never split
  across two, and each step trains on randomly drawn blocks.
- seq2seq: continuation of single texts (prefix LM). A text is split at a random word: the
  encoder reads the first part (``... </s>``), the decoder writes the rest. A fraction of the
  examples has an empty first part (the encoder sees only ``</s>``), so the model can also
  write text from an empty prompt, as the synthetic tasks ask.

Both objectives use only one text at a time, never a task's prompt→reference pairs: the base
LM must stand in for a generally pretrained LM, not for a model already trained on the task.
"""

from __future__ import annotations

import logging
import math
import random
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
from tqdm.auto import tqdm

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerFast

logger = logging.getLogger(__name__)

IGNORE_INDEX = -100


@dataclass(frozen=True)
class PretrainSettings:
    """How long and how hard to pretrain."""

    steps: int
    batch_size: int
    learning_rate: float
    warmup_steps: int
    block_size: int
    """Causal: tokens per training block."""
    max_source_tokens: int
    """Seq2seq: encoder tokens kept (the end of the first part, which the target continues)."""
    max_target_tokens: int
    """Seq2seq: decoder tokens kept (the start of the rest)."""
    empty_input_fraction: float
    """Seq2seq: share of examples whose encoder input is empty."""


@dataclass(frozen=True)
class Seq2SeqBatch:
    """Encoder inputs and decoder labels (pad positions of labels are IGNORE_INDEX)."""

    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    labels: torch.Tensor


def causal_blocks(texts: list[str], tokenizer: PreTrainedTokenizerFast, block_size: int) -> torch.Tensor:
    """Texts as ``<s> text </s>`` packed into rows of ``block_size`` tokens (padded on the right).

    A text that fits in a row is never split, so an empty prompt (``<s>`` at position 0) is
    followed by text starts, as in training. A longer text fills the rest of a row and goes on
    in the next rows, each restarting with ``<s>``, which is what a left-truncated prompt looks like.
    """
    bos, eos, pad = tokenizer.bos_token_id, tokenizer.eos_token_id, tokenizer.pad_token_id
    rows: list[list[int]] = []
    row: list[int] = []
    for ids in tokenizer(texts, add_special_tokens=False, verbose=False)["input_ids"]:
        pending = [bos, *ids, eos]
        if len(pending) <= block_size < len(row) + len(pending):
            rows.append(row + [pad] * (block_size - len(row)))
            row = []
        while pending:
            room = block_size - len(row)
            row.extend(pending[:room])
            pending = pending[room:]
            if len(row) == block_size:
                rows.append(row)
                row = []
                pending = [bos, *pending] if pending[1:] else []  # drop a lone trailing </s>
    if row:
        rows.append(row + [pad] * (block_size - len(row)))
    return torch.tensor(rows, dtype=torch.long)


def seq2seq_batch(
    texts: list[str], tokenizer: PreTrainedTokenizerFast, settings: PretrainSettings, rng: random.Random
) -> Seq2SeqBatch:
    """Split each text at a random word: encoder gets the first part, decoder the rest."""
    sources, targets = [], []
    for text in texts:
        words = text.split()
        empty = len(words) < 2 or rng.random() < settings.empty_input_fraction
        cut = 0 if empty else rng.randint(1, len(words) - 1)
        sources.append(" ".join(words[:cut]))
        targets.append(" ".join(words[cut:]))
    eos, pad = tokenizer.eos_token_id, tokenizer.pad_token_id
    # The source keeps its end (which the target continues); a cut target gets no eos, since the
    # text does not end there.
    source_ids = [
        [*ids[-(settings.max_source_tokens - 1) :], eos]
        for ids in tokenizer(sources, add_special_tokens=False, verbose=False)["input_ids"]
    ]
    target_ids = [
        ids[: settings.max_target_tokens] if len(ids) >= settings.max_target_tokens else [*ids, eos]
        for ids in tokenizer(targets, add_special_tokens=False, verbose=False)["input_ids"]
    ]
    return Seq2SeqBatch(
        input_ids=_pad(source_ids, pad),
        attention_mask=_pad([[1] * len(ids) for ids in source_ids], 0),
        labels=_pad(target_ids, IGNORE_INDEX),
    )


def _pad(rows: list[list[int]], value: int) -> torch.Tensor:
    width = max(len(row) for row in rows)
    return torch.tensor([row + [value] * (width - len(row)) for row in rows], dtype=torch.long)


def _loss(model: PreTrainedModel, model_type: str, batch: torch.Tensor | Seq2SeqBatch) -> torch.Tensor:
    if model_type == "causal":
        assert isinstance(batch, torch.Tensor)
        labels = batch.masked_fill(batch == model.config.pad_token_id, IGNORE_INDEX)
        return model(input_ids=batch, labels=labels).loss
    assert isinstance(batch, Seq2SeqBatch)
    return model(input_ids=batch.input_ids, attention_mask=batch.attention_mask, labels=batch.labels).loss


def validation_batches(
    texts: list[str],
    tokenizer: PreTrainedTokenizerFast,
    model_type: str,
    settings: PretrainSettings,
    seed: int,
    max_batches: int = 8,
) -> list[torch.Tensor | Seq2SeqBatch]:
    """Fixed held-out batches (the same for a given seed), for comparing losses."""
    if model_type == "causal":
        blocks = causal_blocks(texts, tokenizer, settings.block_size)
        return list(blocks[: max_batches * settings.batch_size].split(settings.batch_size))
    rng = random.Random(seed + 1)
    chunks = [texts[i : i + settings.batch_size] for i in range(0, len(texts), settings.batch_size)]
    return [seq2seq_batch(chunk, tokenizer, settings, rng) for chunk in chunks[:max_batches]]


@torch.no_grad()
def mean_loss(model: PreTrainedModel, model_type: str, batches: list[torch.Tensor | Seq2SeqBatch]) -> float:
    """Mean per-batch token cross-entropy (nats) of ``model`` on ``batches``."""
    was_training = model.training
    model.eval()
    losses = [_loss(model, model_type, batch).item() for batch in batches]
    model.train(was_training)
    return sum(losses) / len(losses)


def pretrain(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerFast,
    model_type: str,
    texts: list[str],
    settings: PretrainSettings,
    seed: int,
) -> list[float]:
    """Train ``model`` in place as a language model on ``texts``; returns the per-step losses."""
    generator = torch.Generator().manual_seed(seed)
    rng = random.Random(seed)
    blocks = causal_blocks(texts, tokenizer, settings.block_size) if model_type == "causal" else None
    optimizer = torch.optim.AdamW(model.parameters(), lr=settings.learning_rate, weight_decay=0.01)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, _warmup_cosine(settings))
    model.train()
    losses: list[float] = []
    progress = tqdm(
        range(settings.steps), desc=f"pretraining tiny {model_type} LM", leave=False, mininterval=2
    )
    for step in progress:
        if blocks is not None:
            batch: torch.Tensor | Seq2SeqBatch = blocks[
                torch.randint(len(blocks), (settings.batch_size,), generator=generator)
            ]
        else:
            batch = seq2seq_batch(rng.choices(texts, k=settings.batch_size), tokenizer, settings, rng)
        loss = _loss(model, model_type, batch)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(loss.item())
        if step % 50 == 0 or step == settings.steps - 1:
            progress.set_postfix(loss=f"{loss.item():.3f}")
            logger.debug("step %d/%d: loss %.3f", step + 1, settings.steps, loss.item())
    model.eval()
    return losses


def _warmup_cosine(settings: PretrainSettings):
    """Linear warm-up, then cosine decay to a tenth of the learning rate."""

    def factor(step: int) -> float:
        if step < settings.warmup_steps:
            return (step + 1) / settings.warmup_steps
        progress = (step - settings.warmup_steps) / max(1, settings.steps - settings.warmup_steps)
        return 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, progress)))

    return factor
