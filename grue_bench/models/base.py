"""What every source of base LMs gives: ``BaseLM``, and the model types and profiles there are."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    import transformers

ModelType = Literal["causal", "seq2seq"]
MODEL_TYPES: tuple[str, ...] = ("causal", "seq2seq")
PROFILES: tuple[str, ...] = ("tiny", "small", "paper")
PAPER_MODELS: dict[str, str] = {"causal": "gpt2", "seq2seq": "t5-base"}
"""The GRUE paper's base models per model type, used by profile ``paper`` without a model_name."""


@dataclass
class BaseLM:
    """A base language model with its tokenizer, ready for RL fine-tuning."""

    model: transformers.PreTrainedModel
    """An AutoModelForCausalLM- or AutoModelForSeq2SeqLM-compatible model."""
    tokenizer: transformers.PreTrainedTokenizerFast
    """Padding on the left for causal models; pad, eos (and bos where the model uses one) set."""
    model_type: ModelType
    name: str
    """What was loaded, e.g. 'tiny-causal/imdb@1a2b3c4d', 'SmolLM2-135M-Instruct', 't5-base'."""
