"""IMDB: turn a hub review into a continuation sample (first half of the words -> the rest); the
crowd form's view of a sample."""

import hashlib
import re


def from_hub(row: dict, index: int) -> dict:
    words = row["text"].split()
    half = len(words) // 2
    return {
        "id": "imdb-" + hashlib.sha1(row["text"].encode()).hexdigest()[:16],
        "prompt": " ".join(words[:half]),
        "references": [" ".join(words[half:])],
        "label": row["label"],
        "meta": {"n_words": len(words), "prefix_fraction": 0.5},
    }


def crowd_blocks(prompt: str, meta: dict) -> list[dict]:
    """What a crowd worker reads: the beginning of the review."""
    return [{"name": "review_start", "label": "Beginning of the review", "text": prompt}]


def copy_floor(row: dict) -> str:
    """The floor:copy output: the prompt's last sentence."""
    sentences = [s for s in re.split(r"(?<=[.!?])\s+", row["prompt"].strip()) if s]
    return sentences[-1] if sentences else ""
