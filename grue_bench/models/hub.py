"""Any Hugging Face model: a hub id (gpt2, t5-base, ...) or a local folder saved with save_pretrained.

Offline (``HF_HUB_OFFLINE=1``, or the hub host cannot be reached) a hub id is looked up only in
the local Hugging Face cache, so a missing model fails at once, rather than after the ~23 s of
retries transformers makes otherwise.
"""

from __future__ import annotations

import logging
import os
import socket
from pathlib import Path
from urllib.parse import urlparse

from grue_bench.errors import GrueError
from grue_bench.models import BaseLM

logger = logging.getLogger(__name__)

_TRUE = {"1", "true", "yes", "on"}


def hub_is_offline() -> bool:
    """True when HF_HUB_OFFLINE is set or the hub's host does not answer within 3 s."""
    if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in _TRUE:
        return True
    from huggingface_hub import constants

    if constants.HF_HUB_OFFLINE:
        return True
    host = urlparse(constants.ENDPOINT).hostname or "huggingface.co"
    try:
        socket.create_connection((host, 443), timeout=3).close()
    except OSError:
        return True
    return False


def _looks_like_path(name: str) -> bool:
    """Hub ids are 'name' or 'org/name'; anything else with a slash is meant as a folder."""
    return name.startswith(("/", ".", "~")) or name.count("/") > 1 or name.endswith("/")


def load_hub(model_name: str, model_type: str) -> BaseLM:
    """``model_name`` (hub id or local folder) as a ``model_type`` model with its tokenizer."""
    from transformers import AutoModelForCausalLM, AutoModelForSeq2SeqLM, AutoTokenizer

    local = Path(model_name).expanduser()
    if local.is_dir():
        source, offline = str(local), False
    elif _looks_like_path(model_name):
        raise GrueError(
            f"model folder '{model_name}' not found",
            key="model_name",
            fix="give an existing folder saved with save_pretrained, or a Hugging Face hub id",
        )
    else:
        source, offline = model_name, hub_is_offline()
    auto = AutoModelForCausalLM if model_type == "causal" else AutoModelForSeq2SeqLM
    try:
        tokenizer = AutoTokenizer.from_pretrained(source, local_files_only=offline)
        model = auto.from_pretrained(source, local_files_only=offline)
    except OSError as exc:
        if offline:
            raise GrueError(
                f"model '{model_name}' is not available offline: the Hugging Face hub cannot be reached "
                "(HF_HUB_OFFLINE is set or there is no network) and it is not in the local hub cache",
                key="model_name",
                fix="use an offline profile: 'tiny' (trained here) or 'small' (SmolLM2-135M, causal); "
                "or pass a local folder as model_name; or download the model once with network access",
            ) from exc
        raise GrueError(
            f"could not load model '{model_name}': {exc}", key="model_name", fix="check the id or path"
        ) from exc
    except ValueError as exc:  # e.g. a causal-only model asked for as seq2seq
        raise GrueError(
            f"model '{model_name}' cannot be loaded as a {model_type} LM: {exc}",
            key="model_name",
            fix="choose a model of the task's model type (causal: gpt2-style; seq2seq: t5-style)",
        ) from exc
    model.eval()
    if model_type == "causal":
        tokenizer.padding_side = "left"
    logger.info("loaded %s model %s", model_type, model_name)
    return BaseLM(model=model, tokenizer=tokenizer, model_type=model_type, name=model_name)  # type: ignore[arg-type]
