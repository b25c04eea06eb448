"""Expanding ``--task``, ``--alg`` and ``--seeds`` into run specs with resolved configs."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grue_bench.config import RunConfig, apply_override, build_config, deep_merge
from grue_bench.errors import GrueError
from grue_bench.yamlio import read_yaml_mapping

GRUE_TASKS = (
    "imdb",
    "commongen",
    "cnn_dailymail",
    "totto",
    "narrative_qa",
    "iwslt2017_en_de",
    "daily_dialog",
)
"""What ``--task all`` means: the seven GRUE tasks (the synthetic checks are run by name)."""


@dataclass(frozen=True)
class RunSpec:
    """One run of the grid: a task, an algorithm (stages joined by '+'), a seed and its config."""

    task: str
    alg: str
    seed: int
    config: RunConfig

    @property
    def rl_alg(self) -> str:
        """The algorithm trained last (``ppo`` in ``supervised+ppo``)."""
        return self.alg.split("+")[-1]

    @property
    def warm_start(self) -> bool:
        """Whether a supervised stage comes first."""
        return self.alg.startswith("supervised+")

    @property
    def config_hash(self) -> str:
        """The config's hash, with the stage chain (it changes results too)."""
        return hashlib.sha256(f"{self.alg}|{self.config.hash()}".encode()).hexdigest()[:16]

    @property
    def label(self) -> str:
        return f"{self.task}/{self.alg}/seed{self.seed}"


def parse_list(text: str, what: str) -> list[str]:
    """Split a comma-separated option, refusing empty items."""
    items = [item.strip() for item in text.split(",")]
    if not items or any(not item for item in items):
        raise GrueError(
            f"'{text}' is not a comma-separated list of {what}",
            source=f"--{what}",
            fix=f"write e.g. --{what} a,b",
        )
    return items


def resolve_tasks(text: str) -> list[str]:
    """Task ids from ``--task`` (``all`` = the seven GRUE tasks); unknown ids are errors."""
    from grue_bench import plugins

    tasks = list(GRUE_TASKS) if text == "all" else parse_list(text, "task")
    for task in tasks:
        if task not in plugins.TASKS:
            raise plugins.TASKS.unknown(task, source="--task")
    return tasks


def resolve_algs(text: str) -> list[str]:
    """Algorithm chains from ``--alg``: ids, or ``supervised+<rl id>``."""
    from grue_bench import plugins

    algs = parse_list(text, "alg")
    for alg in algs:
        stages = alg.split("+")
        if len(stages) > 2 or (len(stages) == 2 and stages[0] != "supervised"):
            raise GrueError(
                f"'{alg}' is not an algorithm chain",
                source="--alg",
                fix="use an id (ppo) or supervised+<id> (supervised+ppo)",
            )
        for stage in stages:
            if stage not in plugins.ALGORITHMS:
                raise plugins.ALGORITHMS.unknown(stage, source="--alg")
    return algs


def resolve_seeds(seeds: int | None, seed_list: str | None) -> list[int]:
    """``--seeds N`` means 0..N-1; ``--seed-list 3,7`` names them."""
    if seed_list is not None:
        try:
            return [int(s) for s in parse_list(seed_list, "seed-list")]
        except ValueError as exc:
            raise GrueError(
                f"'{seed_list}' is not a list of integers",
                source="--seed-list",
                fix="write e.g. --seed-list 0,1,2",
            ) from exc
    if seeds is None or seeds < 1:
        raise GrueError(f"--seeds must be at least 1, got {seeds}", source="--seeds", fix="e.g. --seeds 3")
    return list(range(seeds))


def build_specs(
    tasks: list[str],
    algs: list[str],
    seeds: list[int],
    profile: str,
    config_file: Path | None = None,
    overrides: list[str] = (),
    extra: dict[str, Any] | None = None,
) -> list[RunSpec]:
    """Every (task, alg, seed) with its config: task defaults < config file < --set overrides."""
    from grue_bench import plugins

    user = read_yaml_mapping(config_file) if config_file else {}
    specs = []
    for task in tasks:
        spec = plugins.TASKS.get(task)
        for alg in algs:
            data = deep_merge(spec.run_config_data(alg.split("+")[-1], profile), user)
            data = deep_merge(data, extra or {})
            for assignment in overrides:
                apply_override(data, assignment)
            source = f"{config_file or 'defaults'} for task {task}, alg {alg}"
            config = build_config({**data, "task": task, "profile": profile}, source)
            specs.extend(RunSpec(task, alg, seed, config) for seed in seeds)
    return specs
