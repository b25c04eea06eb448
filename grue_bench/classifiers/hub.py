"""Sequence classifiers named by a Hugging Face hub id or a local folder (resolved by ``models.hub``)."""

from __future__ import annotations

from grue_bench.errors import GrueError, MissingAssetError
from grue_bench.models.hub import resolve_model


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
