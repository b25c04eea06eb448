"""Labelled texts for the offline classifiers, read from the task data shipped with GRUE Bench."""

from __future__ import annotations

import json
import lzma
import random
from dataclasses import dataclass
from pathlib import Path

from grue_bench.data import read_jsonl
from grue_bench.errors import MissingAssetError
from grue_bench.paths import bundled_dir


@dataclass(frozen=True)
class LabelledTexts:
    """Parallel lists of texts and integer labels from one split of one task."""

    texts: list[str]
    labels: list[int]


@dataclass(frozen=True)
class DialogueTurns:
    """Replies with the utterance before each ("" for a dialogue's first) and their acts:
    1 inform, 2 question, 3 directive, 4 commissive."""

    previous: list[str]
    replies: list[str]
    acts: list[int]


def _rows(task: str, split: str) -> list[dict]:
    path: Path = bundled_dir("tasks") / task / "data" / f"{split}.jsonl"
    if not path.is_file():
        raise MissingAssetError(
            f"shipped {task} {split} data not found",
            source=str(path),
            fix="reinstall grue-bench or run from a full checkout (tasks/<task>/data/*.jsonl)",
        )
    return read_jsonl(path)


def judge_corpus_path(task: str, name: str) -> Path:
    """Where the corpus a task's offline judge is trained on ships (``tasks/<task>/judge/``)."""
    return bundled_dir("tasks") / task / "judge" / name


def _judge_rows(task: str, name: str, split: str) -> list[dict]:
    """The rows of ``split`` in the xz-compressed JSON lines of a judge's corpus."""
    path = judge_corpus_path(task, name)
    if not path.is_file():
        raise MissingAssetError(
            f"the {task} judge's training corpus is missing",
            source=str(path),
            fix=f"reinstall grue-bench or run from a full checkout (tasks/{task}/judge/{name}; its origin is "
            f"in tasks/{task}/data/SOURCE.md)",
        )
    with lzma.open(path, "rt", encoding="utf-8") as lines:
        rows = [json.loads(line) for line in lines]
    return [row for row in rows if row["split"] == split]


def join_words(left: str, right: str) -> str:
    """``left`` then ``right`` with one space between them unless either side already has one."""
    if not left or not right or left[-1:].isspace() or right[:1].isspace():
        return left + right
    return f"{left} {right}"


def imdb_sentiment(split: str) -> LabelledTexts:
    """Full IMDB reviews (split at a word boundary into prompt and reference) with ``label`` (1 positive)."""
    rows = _rows("imdb", split)
    return LabelledTexts(
        texts=[join_words(row["prompt"], row["references"][0]) for row in rows],
        labels=[int(row["label"]) for row in rows],
    )


def imdb_reviews(split: str) -> LabelledTexts:
    """The IMDB judge's reviews (Maas et al.'s whole reviews, 1 positive): ``train`` fits it, ``validation``
    chose its settings and fits its calibration, ``test`` (movies of neither) measures it."""
    rows = _judge_rows("imdb", "reviews.jsonl.xz", split)
    return LabelledTexts(texts=[row["text"] for row in rows], labels=[int(row["label"]) for row in rows])


def daily_dialog_turns(split: str) -> DialogueTurns:
    """Every act-labelled utterance of DailyDialog's official ``split`` (dialogues also in an earlier
    split left out), with the utterance before it."""
    turns = DialogueTurns(previous=[], replies=[], acts=[])
    for row in _judge_rows("daily_dialog", "dialogues.jsonl.xz", split):
        utterances = row["utterances"]
        turns.previous.extend(["", *utterances[:-1]])
        turns.replies.extend(utterances)
        turns.acts.extend(int(act) for act in row["acts"])
    return turns


def daily_dialog_acts(split: str) -> LabelledTexts:
    """DailyDialog replies (``references[0]``) and acts: 1 inform, 2 question, 3 directive, 4 commissive."""
    rows = _rows("daily_dialog", split)
    return LabelledTexts(
        texts=[row["references"][0] for row in rows],
        labels=[int(row["meta"]["response_act"]) for row in rows],
    )


def commongen_plausibility(split: str) -> LabelledTexts:
    """CommonGen's human-written references (1) and each with its words shuffled (0): plausible
    sentences against the same words in an implausible order."""
    rng = random.Random(f"commongen_plausibility/{split}")
    good = [reference for row in _rows("commongen", split) for reference in row["references"]]
    bad = []
    for sentence in good:
        words = sentence.split()
        shuffled = words[:]
        while len(set(words)) > 1 and shuffled == words:
            rng.shuffle(shuffled)
        bad.append(" ".join(shuffled))
    return LabelledTexts(texts=good + bad, labels=[1] * len(good) + [0] * len(bad))
