"""Any Hugging Face ``evaluate`` module, loaded from a local path only (no hub downloads)."""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from grue_bench.errors import GrueError
from grue_bench.metrics.base import Metric, MetricScores
from grue_bench.metrics.lexical import mean, require_aligned
from grue_bench.schema import ExistingPath


class EvaluateMetric(Metric):
    """Scores with a local ``evaluate`` module; keys are ``evaluate/<module>_<result key>``.

    A result that is a list with one number per sample gives per-sample scores (corpus: mean).
    A single number is the corpus score; per-sample scores then come from scoring each sample
    alone (``per_sample: false`` skips that, for costly modules).
    """

    def __init__(
        self,
        path: ExistingPath,
        key: str | None = None,
        compute_args: dict[str, Any] | None = None,
        single_reference: bool = False,
        per_sample: bool = True,
    ):
        """``path``: a folder holding ``<folder name>.py`` or a module script; ``key``: the one result
        to keep (default: every numeric one); ``compute_args``: extra ``compute`` arguments;
        ``single_reference``: pass each sample's first reference as a string, for modules that want one.
        """
        module_path = Path(path).expanduser().resolve()
        import evaluate

        self._module = evaluate.load(str(module_path))
        self._name = module_path.stem if module_path.is_file() else module_path.name
        self._key = key
        self._compute_args = dict(compute_args or {})
        self._single_reference = single_reference
        self._per_sample = per_sample

    def _score(self, predictions: list[str], references: list[list[str]]) -> Mapping[str, Any]:
        refs: list[Any] = [r[0] for r in references] if self._single_reference else references
        return self._module.compute(predictions=predictions, references=refs, **self._compute_args) or {}

    def _selected(self, results: Mapping[str, Any], count: int) -> dict[str, Any]:
        if self._key is None:
            chosen = {k: v for k, v in results.items() if _is_number(v)}
            if not chosen:
                raise GrueError(
                    f"evaluate module {self._name!r} returned no single numbers: {sorted(results)}",
                    key="args.key",
                    fix="set `key` to the result to keep",
                )
            return chosen
        if self._key not in results:
            raise GrueError(
                f"evaluate module {self._name!r} has no result {self._key!r}",
                key="args.key",
                fix=f"use one of: {', '.join(sorted(results))}",
            )
        value = results[self._key]
        per_sample = isinstance(value, list) and len(value) == count and all(map(_is_number, value))
        if not (_is_number(value) or per_sample):
            raise GrueError(
                f"result {self._key!r} of {self._name!r} is neither a number nor one number per sample",
                key="args.key",
                fix=f"pick a numeric result among: {', '.join(sorted(results))}",
            )
        return {self._key: value}

    def compute(
        self,
        prompt_texts: list[str],
        generated_texts: list[str],
        reference_texts: list[list[str]],
        meta_infos: list[dict[str, Any]] | None = None,
        model: Any = None,
        split_name: str | None = None,
    ) -> MetricScores:
        """The module's numeric results under ``evaluate/<module>_<key>``."""
        require_aligned(generated_texts, reference_texts)
        selected = self._selected(self._score(generated_texts, reference_texts), len(generated_texts))
        alone = None
        if self._per_sample and not all(isinstance(v, list) for v in selected.values()):
            alone = [self._score([p], [r]) for p, r in zip(generated_texts, reference_texts, strict=True)]
        scores: MetricScores = {}
        for name, value in selected.items():
            if isinstance(value, list):
                per_sample = [float(v) for v in value]
                scores[f"evaluate/{self._name}_{name}"] = (per_sample, mean(per_sample))
            else:
                per_alone = [float(r[name]) for r in alone] if alone is not None else None
                scores[f"evaluate/{self._name}_{name}"] = (per_alone, float(value))
        return scores


def _is_number(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)
