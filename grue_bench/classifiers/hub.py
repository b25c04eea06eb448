"""Models named by a Hugging Face hub id or a local folder, failing fast with a MissingAssetError offline."""

from __future__ import annotations

import logging
import os
import socket
from pathlib import Path
from urllib.parse import urlparse

from grue_bench.errors import GrueError, MissingAssetError

logger = logging.getLogger(__name__)

_TRUE = {"1", "true", "yes", "on"}


def hub_offline() -> bool:
    """True when ``HF_HUB_OFFLINE`` / ``TRANSFORMERS_OFFLINE`` ask for no network."""
    return any(
        os.environ.get(name, "").lower() in _TRUE for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
    )


def hub_reachable(timeout: float = 3.0) -> bool:
    """One TCP connection to the hub endpoint: without it transformers retries for ~25 s before failing."""
    endpoint = urlparse(os.environ.get("HF_ENDPOINT", "https://huggingface.co"))
    port = endpoint.port or (443 if endpoint.scheme == "https" else 80)
    try:
        with socket.create_connection((endpoint.hostname or "", port), timeout=timeout):
            return True
    except OSError:
        return False


def resolve_model(model_id: str, *, what: str, offline_fix: str) -> str:
    """A local folder for ``model_id`` (a folder itself, or its copy in the hub cache), else the hub id.

    Raises MissingAssetError at once when the id is neither local nor cached and the hub cannot be reached.
    """
    local = Path(model_id).expanduser()
    if local.is_dir():
        return str(local)
    if local.is_absolute() or model_id.startswith((".", "~")):
        raise MissingAssetError(
            f"{what}: folder {model_id!r} does not exist", fix=f"pass an existing folder; {offline_fix}"
        )
    from huggingface_hub import snapshot_download

    try:
        return snapshot_download(model_id, local_files_only=True)
    except Exception:  # not in the local hub cache (the exception type differs across versions)
        pass
    if hub_offline() or not hub_reachable():
        raise MissingAssetError(
            f"{what}: hub model {model_id!r} is not in the local Hugging Face cache and the hub "
            "cannot be reached (offline)",
            fix=f"run once on a networked machine to cache {model_id!r} (or copy its folder here and pass "
            f"the folder path); {offline_fix}",
        )
    logger.info("%s: downloading %s from the Hugging Face hub", what, model_id)
    return model_id


def load_sequence_classifier(model_id: str, *, what: str, offline_fix: str):  # -> (model, tokenizer)
    """A transformers sequence classifier and its tokenizer, in eval mode."""
    source = resolve_model(model_id, what=what, offline_fix=offline_fix)
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(source)
        model = AutoModelForSequenceClassification.from_pretrained(source)
    except OSError as exc:
        raise MissingAssetError(f"{what}: could not load {model_id!r}: {exc}", fix=offline_fix) from exc
    model.eval()
    return model, tokenizer


class HubClassifier:
    """A transformers sequence classifier behind the same ``predict_proba`` as the offline ones."""

    def __init__(
        self,
        model_id: str,
        *,
        what: str,
        offline_fix: str,
        labels: list[int] | None = None,
        batch_size: int = 32,
        truncation_side: str | None = None,
    ) -> None:
        self.model_id = model_id
        self.model, self.tokenizer = load_sequence_classifier(model_id, what=what, offline_fix=offline_fix)
        if truncation_side is not None:  # else the tokenizer's own
            self.tokenizer.truncation_side = truncation_side
        self.labels = labels if labels is not None else list(range(self.model.config.num_labels))
        if len(self.labels) != self.model.config.num_labels:
            raise GrueError(
                f"{what}: {model_id!r} has {self.model.config.num_labels} labels, "
                f"expected {len(self.labels)}",
                fix="pass a classifier trained for this task",
            )
        self.batch_size = batch_size

    def predict_proba(self, texts: list[str]) -> list[list[float]]:
        """Softmax over the model's labels for each text (truncated to the model's length)."""
        import torch

        probabilities: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            encoded = self.tokenizer(
                texts[start : start + self.batch_size], return_tensors="pt", truncation=True, padding=True
            ).to(self.model.device)
            with torch.no_grad():
                logits = self.model(**encoded).logits
            probabilities.extend(torch.softmax(logits, dim=-1).tolist())
        return probabilities

    def predict(self, texts: list[str]) -> list[int]:
        """The most probable class of each text."""
        return [self.labels[max(range(len(p)), key=p.__getitem__)] for p in self.predict_proba(texts)]
