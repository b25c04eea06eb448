"""CNN/DailyMail: article -> highlights; the crowd form's view of a sample."""

import re


def from_hub(row: dict, index: int) -> dict:
    return {"id": f"cnn_dailymail-{row['id']}", "prompt": row["article"], "references": [row["highlights"]]}


def crowd_blocks(prompt: str, meta: dict) -> list[dict]:
    """What a crowd worker reads: the article."""
    return [{"name": "article", "label": "News article", "text": prompt}]


def copy_floor(row: dict) -> str:
    """The floor:copy output: the article's first three sentences (lead-3)."""
    sentences = [s for s in re.split(r"(?<=[.!?])\s+", row["prompt"].strip()) if s]
    return " ".join(sentences[:3])
