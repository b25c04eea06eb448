"""Fixtures for the submission tests: a valid submission folder built from the shipped ToTTo test split,
and a results store (written through the Store API) whose bytes a rejected submission must not change.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from grue_bench import plugins
from grue_bench.store import Store

TASK = "totto"
TASK_VERSION = plugins.TASKS.get(TASK).version
SEEDS = (0, 1, 2)
CONFIG = {"alg": {"id": "ppo", "args": {"learning_rate": 1.0e-6}}, "profile": "paper"}


def split_samples(task: str = TASK) -> list[Any]:
    """The shipped test split of a task."""
    from grue_bench.datapools import TaskPool

    return list(TaskPool.prepare("test", task=task))


def seed_texts(seed: int, task: str = TASK) -> list[str]:
    """A different, deterministic 'generation' per seed: a reference, cut by the seed."""
    return [" ".join(s.references[0].split()[: 12 - 3 * seed]) for s in split_samples(task)]


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")


def metadata(name: str, task: str = TASK, seeds: tuple[int, ...] = SEEDS) -> dict[str, Any]:
    """A valid submission.yaml as data."""
    return {
        "format": 1,
        "name": name,
        "algorithm": "ppo (team-a)",
        "authors": [{"name": "Ada Lovelace", "affiliation": "Engines Ltd", "contact": "ada@example.org"}],
        "contact": "ada@example.org",
        "link": "https://example.org/team-a/code",
        "model": "t5-base",
        "profile": "paper",
        "description": "PPO on ToTTo.\nThree seeds.",
        "config": CONFIG,
        "tasks": {task: {"task_version": plugins.TASKS.get(task).version, "seeds": list(seeds)}},
    }


def write_submission(root: Path, meta: dict[str, Any], task: str = TASK) -> Path:
    """Write ``root/<name>/`` with ``meta`` as submission.yaml and one generations file per seed."""
    folder = root / meta["name"]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "submission.yaml").write_text(yaml.safe_dump(meta, sort_keys=False), encoding="utf-8")
    samples = split_samples(task)
    for seed in meta["tasks"][task]["seeds"]:
        rows = [{"id": s.id, "text": t} for s, t in zip(samples, seed_texts(seed, task), strict=True)]
        write_jsonl(folder / task / f"seed{seed}.jsonl", rows)
    return folder


@pytest.fixture
def make_submission(tmp_path: Path) -> Callable[..., Path]:
    """Build a valid submission folder in tmp; ``edit(meta)`` may change its metadata first."""

    def make(name: str = "team-a", edit: Callable[[dict[str, Any]], None] | None = None) -> Path:
        meta = metadata(name)
        if edit is not None:
            edit(meta)
        return write_submission(tmp_path / "baselines", meta)

    return make


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    """A store holding one finished own run (totto, alg 'ppo', seed 0)."""
    path = tmp_path / "store" / "grue.db"
    with Store(path) as store:
        run = store.start_run(
            task=TASK,
            task_version=TASK_VERSION,
            alg="ppo",
            seed=0,
            profile="tiny",
            model="tiny-seq2seq",
            config=CONFIG,
            config_hash="own",
        )
        store.finish_run(run.id, iteration=10, final_metrics={"test": {"lexical/bleu": 0.1}})
    return path


def fingerprint(store: Path) -> tuple[str, list[str]]:
    """The store file's sha256 and the names of the files beside it (no journal left behind)."""
    digest = hashlib.sha256(store.read_bytes()).hexdigest() if store.exists() else "absent"
    return digest, sorted(p.name for p in store.parent.iterdir()) if store.parent.exists() else []


@pytest.fixture(scope="session")
def act_judge_differs(act_judge) -> str:
    """Empty where this machine's act judge decides as the one that wrote the shipped files, else what
    differs (``judge_rounding.act_judge_differs``)."""
    from tests.submit.judge_rounding import act_judge_differs as differs

    return differs()
