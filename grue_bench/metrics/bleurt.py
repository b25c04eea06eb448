"""BLEURT from a checkpoint the user provides: no BLEURT weights ship in any package registry.

``checkpoint`` is a folder (or a hub id where the hub is reachable) in PyTorch form. Checkpoints whose
``config.json`` says ``model_type: bleurt`` (lucadiliello/BLEURT-20, BLEURT-20-D12, ...) need the
``bleurt-pytorch`` package's classes; BERT-architecture conversions (e.g. Elron/bleurt-base-512) load with
transformers' ``AutoModelForSequenceClassification``. Each is a regression head over (reference, candidate).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from pydantic import PositiveInt

from grue_bench.errors import GrueError, MissingAssetError
from grue_bench.metrics.base import Metric, MetricScores
from grue_bench.models.hub import resolve_model
from grue_bench.schema import Output

logger = logging.getLogger(__name__)

HOW_TO_GET = (
    "on a networked machine run "
    "`huggingface-cli download lucadiliello/BLEURT-20-D12 --local-dir BLEURT-20-D12` "
    "(or any PyTorch BLEURT checkpoint), copy the folder here and set the metric's `checkpoint: /path/to/it`"
)


def _load(source: str):  # -> (model, tokenizer)
    """The regression model and tokenizer in ``source`` (a folder or hub id)."""
    config_file = Path(source) / "config.json"
    model_type = json.loads(config_file.read_text()).get("model_type") if config_file.is_file() else None
    if model_type == "bleurt":
        try:
            from bleurt_pytorch import BleurtForSequenceClassification, BleurtTokenizer
        except ImportError as exc:
            raise MissingAssetError(
                f"BLEURT checkpoint {source} has model_type 'bleurt', whose classes come from the "
                f"bleurt-pytorch package, which could not be imported: {exc}",
                key="bleurt.checkpoint",
                fix="pip install bleurt-pytorch (its 0.0.1 release needs transformers<5), or use a "
                "BERT-architecture BLEURT conversion such as Elron/bleurt-base-512",
            ) from exc
        return BleurtForSequenceClassification.from_pretrained(source), BleurtTokenizer.from_pretrained(
            source
        )
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    try:
        return AutoModelForSequenceClassification.from_pretrained(source), AutoTokenizer.from_pretrained(
            source
        )
    except (OSError, ValueError) as exc:
        raise MissingAssetError(
            f"could not load BLEURT checkpoint {source}: {exc}", key="bleurt.checkpoint", fix=HOW_TO_GET
        ) from exc


class Bleurt(Metric):
    """Per-sample BLEURT (max over references) and its mean, under key ``semantic/bleurt``."""

    outputs: ClassVar[Mapping[str, Output]] = {"semantic/bleurt": Output(display="BLEURT")}

    def __init__(
        self, checkpoint: str | None = None, batch_size: PositiveInt = 32, max_length: PositiveInt = 512
    ) -> None:
        if checkpoint is None:
            raise MissingAssetError(
                "BLEURT needs a checkpoint, and none ships with GRUE Bench or any package registry",
                key="bleurt.checkpoint",
                fix=HOW_TO_GET,
            )

        source = resolve_model(checkpoint, what="BLEURT checkpoint", offline_fix=HOW_TO_GET)
        self.model, self.tokenizer = _load(source)
        if self.model.config.num_labels != 1:
            raise GrueError(
                f"BLEURT checkpoint {checkpoint} has {self.model.config.num_labels} outputs, not one score",
                key="bleurt.checkpoint",
                fix="use a BLEURT (regression) checkpoint",
            )
        self.model.eval()
        self.checkpoint = checkpoint
        self.batch_size = batch_size
        self.max_length = max_length
        logger.info("BLEURT checkpoint: %s", checkpoint)

    def score_pairs(self, references: list[str], candidates: list[str]) -> list[float]:
        """BLEURT of each candidate against the reference beside it."""
        import torch

        scores: list[float] = []
        for start in range(0, len(candidates), self.batch_size):
            encoded = self.tokenizer(
                references[start : start + self.batch_size],
                candidates[start : start + self.batch_size],
                padding="longest",
                truncation=True,
                max_length=self.max_length,
                return_tensors="pt",
            ).to(self.model.device)
            with torch.no_grad():
                scores.extend(self.model(**encoded).logits.flatten().tolist())
        return scores

    def compute(
        self,
        prompt_texts: list[str],
        generated_texts: list[str],
        reference_texts: list[list[str]],
        meta_infos: list[dict[str, Any]] | None = None,
        model: Any = None,
        split_name: str | None = None,
    ) -> MetricScores:
        """Score every (reference, generation) pair, keep each generation's best, and average."""
        empty = [i for i, refs in enumerate(reference_texts) if not refs]
        if empty:
            raise GrueError(f"BLEURT needs a reference for every sample; samples {empty[:5]} have none")
        pairs = [(i, ref) for i, refs in enumerate(reference_texts) for ref in refs]
        flat = self.score_pairs([ref for _, ref in pairs], [generated_texts[i] for i, _ in pairs])
        best = [float("-inf")] * len(generated_texts)
        for (i, _), score in zip(pairs, flat, strict=True):
            best[i] = max(best[i], score)
        scores = [float(s) for s in best]
        return {"semantic/bleurt": (scores, sum(scores) / len(scores) if scores else 0.0)}
