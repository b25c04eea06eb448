"""A classifier on disk: ``weights.safetensors`` (its arrays; no pickle anywhere) and
``classifier.json`` (everything else, with the format it was written in)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np


def write_classifier(
    directory: Path, arrays: dict[str, np.ndarray], meta: dict[str, Any], format_version: int
) -> None:
    """Write ``arrays`` and ``meta`` (plus ``format_version``) into ``directory``."""
    from safetensors.numpy import save_file

    directory.mkdir(parents=True, exist_ok=True)
    save_file(
        {name: np.ascontiguousarray(array) for name, array in arrays.items()},
        str(directory / "weights.safetensors"),
    )
    (directory / "classifier.json").write_text(
        json.dumps({"format_version": format_version, **meta}), encoding="utf-8"
    )


def read_classifier(directory: Path, format_version: int) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """The arrays and meta of a classifier written by ``write_classifier`` in ``format_version``;
    ValueError for another format."""
    from safetensors.numpy import load_file

    meta = json.loads((directory / "classifier.json").read_text(encoding="utf-8"))
    if meta.get("format_version") != format_version:
        raise ValueError(f"{directory}: classifier format {meta.get('format_version')} != {format_version}")
    return load_file(str(directory / "weights.safetensors")), meta
