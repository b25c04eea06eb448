"""Expanding ``--task``, ``--alg`` and ``--seeds`` into run specs with resolved configs.

A config file run alone (RL4LMs's configs name no GRUE task) says its task through its
datapool and its algorithm through ``alg.id``; ``--task`` and ``--alg`` then only have to agree.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grue_bench import plugins
from grue_bench.config import RunConfig, hashed_training_args
from grue_bench.errors import GrueError
from grue_bench.resolve import (
    apply_override,
    build_config,
    check_task,
    supervised_args,
    task_config,
    warm_start_training_args,
)
from grue_bench.resolve.offline import OFFLINE_PROFILES, offline_models
from grue_bench.schema import deep_merge
from grue_bench.yamlio import read_yaml_mapping

log = logging.getLogger(__name__)


WARM_START = "warm_start"
"""The key of a chain's stored config under which its warm start's settings are recorded."""


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
        """The config's hash, with the stage chain and a chain's supervised settings, which its
        config does not hold (both change results too)."""
        chain = self.alg
        if self.warm_start:
            chain += "|" + json.dumps(
                hashed_training_args(warm_start_training_args(self.config)), sort_keys=True
            )
        return hashlib.sha256(f"{chain}|{self.config.hash()}".encode()).hexdigest()[:16]

    @property
    def recorded_config(self) -> dict[str, Any]:
        """The config as the store keeps it: a chain's also under ``WARM_START`` its supervised
        stage's settings, all of them (``SupervisedArgs``), which its config does not hold."""
        config = self.config.to_dict()
        if self.warm_start:
            config[WARM_START] = {"training_args": supervised_args(self.config).model_dump(mode="json")}
        return config

    @property
    def label(self) -> str:
        return f"{self.task}/{self.alg}/seed{self.seed}"


def recorded_run_config(recorded: dict[str, Any]) -> RunConfig:
    """The run config of a store's record (``RunSpec.recorded_config``), a chain's warm start
    record left out."""
    return RunConfig.model_validate({key: value for key, value in recorded.items() if key != WARM_START})


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
    tasks = list(plugins.grue_tasks()) if text == "all" else parse_list(text, "task")
    for task in tasks:
        if task not in plugins.TASKS:
            raise plugins.TASKS.unknown(task, source="--task")
    return tasks


def resolve_algs(text: str) -> list[str]:
    """Algorithm chains from ``--alg``: ids, or ``supervised+<rl id>``."""
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


def config_data(config_file: Path | None, overrides: list[str] = ()) -> dict[str, Any]:
    """What the user asks of every run: the config file with the ``--set`` overrides applied."""
    data = read_yaml_mapping(config_file) if config_file else {}
    for assignment in overrides:
        apply_override(data, assignment)
    return data


def _component_id(data: dict[str, Any], key: str) -> str | None:
    """``data[key].id`` when the config gives that section as a mapping with an id."""
    section = data.get(key)
    return section.get("id") if isinstance(section, dict) else None


def infer_task(data: dict[str, Any]) -> str | None:
    """The task a config is for: its ``task`` key, else the task whose data its datapool reads;
    None when it names neither, or a datapool no single task reads."""
    if isinstance(data.get("task"), str):
        return data["task"]
    pool = _component_id(data, "datapool")
    if pool is None:
        return None
    task = plugins.task_reading(pool)
    if task is not None:
        return task
    # a generic pool (RL4LMs's dummy_pool): the task declaring it with the config's reward
    reward = _component_id(data, "reward_fn")
    readers = [
        spec.id
        for spec in map(plugins.TASKS.get, plugins.TASKS.ids())
        if spec.datapool is not None and spec.datapool.id == pool and spec.reward_fn.id == reward
    ]
    return readers[0] if len(readers) == 1 else None


def _config_task(task_text: str | None, data: dict[str, Any], source: str) -> list[str]:
    """The config's task, which ``--task`` (if given) must name alone."""
    task = infer_task(data)
    if task is None:
        if task_text is not None:
            return resolve_tasks(task_text)
        pool = _component_id(data, "datapool")
        said = f"its datapool '{pool}' is no task's data" if pool else "it names no datapool or task"
        raise GrueError(
            f"cannot tell which task the config is for: {said}",
            source=source,
            key="datapool.id" if pool else "task",
            fix="pass --task <id> (see `grue ls tasks`)",
        )
    if task_text is not None and resolve_tasks(task_text) != [task]:
        raise GrueError(
            f"--task {task_text} disagrees with the config, which is for task '{task}'",
            source=source,
            key="task" if "task" in data else "datapool.id",
            fix=f"leave --task out (or pass --task {task}), or give a config of task {task_text}",
        )
    return resolve_tasks(task)


def _config_algs(alg_text: str | None, data: dict[str, Any], source: str) -> list[str]:
    """The config's ``alg.id``, which every ``--alg`` chain (if given) must end with."""
    alg = _component_id(data, "alg")
    if alg is None:
        return resolve_algs(alg_text or "ppo")
    if alg_text is None:
        return resolve_algs(alg)
    algs = resolve_algs(alg_text)
    if any(chain.split("+")[-1] != alg for chain in algs):
        raise GrueError(
            f"--alg {alg_text} disagrees with the config, whose algorithm is '{alg}'",
            source=source,
            key="alg.id",
            fix=f"leave --alg out (or pass --alg {alg} or supervised+{alg}), or change alg.id",
        )
    return algs


def resolve_grid(
    task_text: str | None, alg_text: str | None, config_file: Path | None, overrides: list[str] = ()
) -> tuple[list[str], list[str]]:
    """Tasks and algorithm chains of ``grue run``: from ``--task`` and ``--alg`` (default: the
    seven GRUE tasks, ppo); with a config file, from the config, which they must agree with."""
    if config_file is None:
        return resolve_tasks(task_text or "all"), resolve_algs(alg_text or "ppo")
    data = config_data(config_file, overrides)
    source = f"{config_file} (with --set overrides)" if overrides else str(config_file)
    return _config_task(task_text, data, source), _config_algs(alg_text, data, source)


def _task_defaults(task: str, alg: str, profile: str) -> dict[str, Any]:
    """The task's run config for ``alg`` under ``profile``. The small profile changes only the
    base LM, so a task with no small defaults lends it its tiny ones (sizes, metrics)."""
    spec = plugins.TASKS.get(task)
    sizes = "tiny" if profile == "small" and "small" not in spec.profiles else profile
    return task_config(spec, alg.split("+")[-1], sizes)


def _check_profiles(task: str) -> None:
    """The task's profiles give valid run configs under every algorithm (checked once per task)."""
    spec = plugins.TASKS.get(task)
    problems = check_task(spec)
    if problems:
        raise GrueError.many(problems, str(spec.directory / "task.yaml"))


def build_specs(
    tasks: list[str],
    algs: list[str],
    seeds: list[int],
    profile: str | None,
    config_file: Path | None = None,
    overrides: list[str] = (),
    extra: dict[str, Any] | None = None,
    offline: bool = False,
) -> list[RunSpec]:
    """Every (task, alg, seed) with its config: task defaults < config file < --set overrides.

    ``profile`` None takes the config file's ``profile`` key, else tiny. ``offline`` (an offline
    profile given on the command line) replaces the hub models the config file names.
    """
    user = read_yaml_mapping(config_file) if config_file else {}
    profile = profile or user.get("profile") or "tiny"
    specs = []
    for task in tasks:
        _check_profiles(task)
        file_data = offline_models(user, profile, task) if offline and profile in OFFLINE_PROFILES else user
        for alg in algs:
            data = deep_merge(_task_defaults(task, alg, profile), file_data)
            data = deep_merge(data, extra or {})
            for assignment in overrides:
                apply_override(data, assignment)
            source = f"{config_file or 'defaults'} for task {task}, alg {alg}"
            config = build_config({**data, "task": task, "profile": profile}, source)
            specs.extend(RunSpec(task, alg, seed, config) for seed in seeds)
    return specs
