"""CSV and JSON copies of the leaderboard tables, written next to the HTML."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pandas as pd

DATA_DIR = "data"


def write_table(frame: pd.DataFrame, out_dir: Path, stem: str) -> list[tuple[str, str]]:
    """Write ``data/<stem>.csv`` and ``.json`` (records; NaN as null); returns (label, relative link)."""
    folder = out_dir / DATA_DIR
    folder.mkdir(parents=True, exist_ok=True)
    frame.to_csv(folder / f"{stem}.csv", index=False, lineterminator="\n")
    records = [{key: _plain(value) for key, value in row.items()} for row in frame.to_dict(orient="records")]
    text = json.dumps(records, indent=1, ensure_ascii=False, allow_nan=False)
    (folder / f"{stem}.json").write_text(text + "\n", encoding="utf-8")
    return [("CSV", f"{DATA_DIR}/{stem}.csv"), ("JSON", f"{DATA_DIR}/{stem}.json")]


def _plain(value: Any) -> Any:
    """A JSON-ready value: numpy scalars as Python ones, NaN as None."""
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
