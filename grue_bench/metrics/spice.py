"""SPICE with pycocoevalcap (CommonGen); needs Java and Stanford CoreNLP 3.6.0 jars.

pycocoevalcap downloads the CoreNLP jars on first use; offline we check for them up front and
say where to put them instead of letting it try.
"""

from __future__ import annotations

import importlib.util
import logging
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from grue_bench.errors import MissingAssetError
from grue_bench.metrics.base import Metric, MetricScores
from grue_bench.metrics.lexical import require_aligned
from grue_bench.schema import Output

logger = logging.getLogger(__name__)

CORENLP_JARS = ("stanford-corenlp-3.6.0.jar", "stanford-corenlp-3.6.0-models.jar")
CORENLP_SOURCE = "stanford-corenlp-full-2015-12-09.zip from https://nlp.stanford.edu/software/"


def spice_dir() -> Path:
    """pycocoevalcap's ``spice`` folder (holding spice-1.0.jar and ``lib/``)."""
    spec = importlib.util.find_spec("pycocoevalcap")
    if spec is None or not spec.submodule_search_locations:
        raise MissingAssetError(
            "SPICE needs the pycocoevalcap package, which is not installed",
            key="pycocoevalcap",
            fix='pip install "pycocoevalcap>=1.2" (or `make install`, which installs the offline extra)',
        )
    return Path(next(iter(spec.submodule_search_locations))) / "spice"


def require_spice_assets(folder: Path) -> None:
    """Raise MissingAssetError naming what SPICE lacks in ``folder`` (a pycocoevalcap spice dir)."""
    missing = [name for name in ("spice-1.0.jar",) if not (folder / name).is_file()]
    missing += [f"lib/{name}" for name in CORENLP_JARS if not (folder / "lib" / name).is_file()]
    if missing:
        raise MissingAssetError(
            f"SPICE needs {', '.join(missing)} in {folder}",
            key="Stanford CoreNLP 3.6.0",
            fix=(
                f"copy {' and '.join(CORENLP_JARS)} (inside {CORENLP_SOURCE}) into {folder / 'lib'}; "
                "or leave `spice` out of the task's metrics"
            ),
        )
    if shutil.which("java") is None:
        raise MissingAssetError(
            "SPICE runs on Java, and no `java` is on PATH",
            key="Java",
            fix="install a Java 8+ runtime (e.g. `apt-get install default-jre-headless`)",
        )


class Spice(Metric):
    """SPICE F-score per sample (scene-graph tuples) and its mean."""

    outputs: ClassVar[Mapping[str, Output]] = {"lexical/spice": Output(display="SPICE")}

    def __init__(self) -> None:
        require_spice_assets(spice_dir())

    @classmethod
    def missing_asset(cls, **args: Any) -> MissingAssetError | None:
        try:
            require_spice_assets(spice_dir())
        except MissingAssetError as missing:
            return missing
        return None

    def compute(
        self,
        prompt_texts: list[str],
        generated_texts: list[str],
        reference_texts: list[list[str]],
        meta_infos: list[dict[str, Any]] | None = None,
        model: Any = None,
        split_name: str | None = None,
    ) -> MetricScores:
        """SPICE under ``lexical/spice``."""
        from pycocoevalcap.spice.spice import Spice as CocoSpice

        require_aligned(generated_texts, reference_texts)
        predictions = {i: [text] for i, text in enumerate(generated_texts)}
        references = {i: list(refs) for i, refs in enumerate(reference_texts)}
        corpus, details = CocoSpice().compute_score(references, predictions)
        # The per-sample entries come back in sorted-key order, which is sample order here.
        per_sample = [float(item["All"]["f"]) for item in details]
        return {"lexical/spice": (per_sample, float(corpus))}
