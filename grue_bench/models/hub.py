"""The one way to the Hugging Face hub: a model named by a hub id (gpt2, t5-base, ...) or a local folder.

Offline (``HF_HUB_OFFLINE`` / ``TRANSFORMERS_OFFLINE``, or the hub's host cannot be reached) a hub id is
looked up only in the local Hugging Face cache, so a missing model fails at once with a
MissingAssetError, rather than after the ~25 s of retries transformers makes otherwise. Metrics,
rewards and classifiers resolve their models here too.
"""

from __future__ import annotations

import logging
import os
import socket
from pathlib import Path
from urllib.parse import urlparse

from grue_bench.errors import GrueError, MissingAssetError
from grue_bench.models.base import BaseLM

logger = logging.getLogger(__name__)

_TRUE = {"1", "true", "yes", "on"}
_OFFLINE_SWITCHES = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
_BASE_LM_OFFLINE_FIX = "or use an offline profile: 'tiny' (trained here) or 'small' (SmolLM2-135M, causal)"


def hub_offline(timeout: float = 3.0) -> bool:
    """True when HF_HUB_OFFLINE / TRANSFORMERS_OFFLINE ask for no network, or the hub's host does not
    answer one TCP connection within ``timeout`` seconds."""
    if any(os.environ.get(name, "").strip().lower() in _TRUE for name in _OFFLINE_SWITCHES):
        return True
    endpoint = urlparse(os.environ.get("HF_ENDPOINT", "https://huggingface.co"))
    port = endpoint.port or (443 if endpoint.scheme == "https" else 80)
    try:
        with socket.create_connection((endpoint.hostname or "", port), timeout=timeout):
            return False
    except OSError:
        return True


def _looks_like_path(name: str) -> bool:
    """Hub ids are 'name' or 'org/name'; anything else with a slash, or starting like a path, is a folder."""
    return name.startswith(("/", ".", "~")) or name.count("/") > 1 or name.endswith("/")


def resolve_model(model_id: str, *, what: str, offline_fix: str, key: str = "") -> str:
    """What ``from_pretrained`` should load for ``model_id``: a local folder as is; a hub id as is when
    the hub is reachable (transformers downloads what the cache lacks), else its copy in the local cache.

    Raises MissingAssetError for a folder that does not exist, and offline for a hub id not cached.
    """
    local = Path(model_id).expanduser()
    if local.is_dir():
        return str(local)
    if _looks_like_path(model_id):
        raise MissingAssetError(
            f"{what} folder {model_id!r} does not exist",
            key=key,
            fix=f"pass an existing folder (save_pretrained), or a Hugging Face hub id; {offline_fix}",
        )
    if not hub_offline():
        return model_id
    from huggingface_hub import snapshot_download

    try:
        return snapshot_download(model_id, local_files_only=True)
    except Exception as exc:  # not in the local hub cache (the exception type differs across versions)
        raise MissingAssetError(
            f"{what} {model_id!r} is not available offline: the Hugging Face hub cannot be reached "
            "(HF_HUB_OFFLINE is set or there is no network) and it is not in the local hub cache",
            key=key,
            fix=f"run once with network access to cache {model_id!r} (or copy its folder here and pass "
            f"the folder path); {offline_fix}",
        ) from exc


def load_hub(model_name: str, model_type: str) -> BaseLM:
    """``model_name`` (hub id or local folder) as a ``model_type`` model with its tokenizer."""
    from transformers import AutoModelForCausalLM, AutoModelForSeq2SeqLM, AutoTokenizer

    source = resolve_model(model_name, what="model", offline_fix=_BASE_LM_OFFLINE_FIX, key="model_name")
    auto = AutoModelForCausalLM if model_type == "causal" else AutoModelForSeq2SeqLM
    try:
        tokenizer = AutoTokenizer.from_pretrained(source)
        model = auto.from_pretrained(source)
    except OSError as exc:
        raise GrueError(
            f"could not load model '{model_name}': {exc}",
            key="model_name",
            fix="check the id or path; offline, a hub model must be in the local hub cache in full",
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
