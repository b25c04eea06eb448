"""Experiment trackers a run reports to (``report_to``, by Hugging Face Trainer's names).

Each tracker gets every metric row the store gets, at its iteration, named ``<split>/<metric>``
(``train/policy_loss``, ``validation/reward/increasing_numbers``); the resolved config as
hyperparameters; the run's label as its name; task, algorithm and seed as tags. Trackers are opened
in the process that executes the run (the writer, a ``--jobs`` worker or a Ray task), one tracker
run per run, and finished when it ends, marked failed if it raised. They are optional packages:
``pip install 'grue-bench[trackers]'``.
"""

from __future__ import annotations

import json
import logging
import os
import time
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path
from typing import Any, Protocol

from grue_bench.config import TRACKERS
from grue_bench.errors import GrueError
from grue_bench.resolve.grid import RunSpec
from grue_bench.runner.recorder import Recorder
from grue_bench.yamlio import dump_yaml

log = logging.getLogger(__name__)

PROJECT = "grue-bench"
"""The W&B project, MLflow experiment and Trackio project runs go to, unless WANDB_PROJECT,
MLFLOW_EXPERIMENT_NAME or TRACKIO_PROJECT says otherwise."""
EXTRA = "pip install 'grue-bench[trackers]'"


@dataclass(frozen=True)
class TrackedRun:
    """What a tracker is told about the run it tracks."""

    name: str
    group: str
    tags: dict[str, str]
    config: dict[str, Any]
    folder: Path
    """The run's artifact folder (TensorBoard writes into it)."""

    @classmethod
    def of(cls, spec: RunSpec, folder: Path) -> TrackedRun:
        tags = {"task": spec.task, "alg": spec.alg, "seed": str(spec.seed)}
        return cls(spec.label, f"{spec.task}/{spec.alg}", tags, spec.config.to_dict(), folder)


class Tracker(Protocol):
    def log(self, iteration: int, values: dict[str, float]) -> None: ...

    def finish(self, failed: bool) -> None: ...


class TensorBoardTracker:
    """Event files in the run's ``tensorboard/`` folder (``tensorboard --logdir grue_runs``)."""

    def __init__(self, run: TrackedRun) -> None:
        from torch.utils.tensorboard import SummaryWriter

        self.writer = SummaryWriter(log_dir=str(run.folder / "tensorboard"))
        self.writer.add_text("config", f"```yaml\n{dump_yaml({**run.tags, **run.config})}```")

    def log(self, iteration: int, values: dict[str, float]) -> None:
        for name, value in values.items():
            self.writer.add_scalar(name, value, iteration)

    def finish(self, failed: bool) -> None:
        self.writer.close()


class WandbTracker:
    """A W&B run whose x-axis is ``iteration`` (W&B's own step cannot go back to -1 or 0)."""

    def __init__(self, run: TrackedRun) -> None:
        import wandb

        self.run = wandb.init(
            project=os.environ.get("WANDB_PROJECT", PROJECT),
            name=run.name,
            group=run.group,
            tags=[run.tags["task"], run.tags["alg"], f"seed{run.tags['seed']}"],
            config=run.config,
        )
        self.run.define_metric("iteration")
        self.run.define_metric("*", step_metric="iteration")

    def log(self, iteration: int, values: dict[str, float]) -> None:
        self.run.log({**values, "iteration": iteration})

    def finish(self, failed: bool) -> None:
        self.run.finish(exit_code=1 if failed else 0)


class MlflowTracker:
    """An MLflow run (MLFLOW_TRACKING_URI, else MLflow's default), the config as flat params."""

    def __init__(self, run: TrackedRun) -> None:
        from mlflow import MlflowClient
        from mlflow.entities import Param
        from mlflow.utils.validation import MAX_PARAM_VAL_LENGTH, MAX_PARAMS_TAGS_PER_BATCH

        self.client = MlflowClient()
        experiment = _mlflow_experiment(self.client, os.environ.get("MLFLOW_EXPERIMENT_NAME", PROJECT))
        self.run_id = self.client.create_run(experiment, run_name=run.name, tags=run.tags).info.run_id
        params = [Param(key, value[:MAX_PARAM_VAL_LENGTH]) for key, value in _flat(run.config).items()]
        for start in range(0, len(params), MAX_PARAMS_TAGS_PER_BATCH):
            self.client.log_batch(self.run_id, params=params[start : start + MAX_PARAMS_TAGS_PER_BATCH])

    def log(self, iteration: int, values: dict[str, float]) -> None:
        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        metrics = [Metric(name, value, now, iteration) for name, value in values.items()]
        self.client.log_batch(self.run_id, metrics=metrics)

    def finish(self, failed: bool) -> None:
        self.client.set_terminated(self.run_id, "FAILED" if failed else "FINISHED")


def _mlflow_experiment(client: Any, name: str) -> str:
    """The experiment's id, created if new (by whichever worker comes first)."""
    from mlflow.exceptions import MlflowException

    experiment = client.get_experiment_by_name(name)
    if experiment is not None:
        return experiment.experiment_id
    try:
        return client.create_experiment(name)
    except MlflowException:  # another worker created it in between
        return client.get_experiment_by_name(name).experiment_id


def _flat(config: dict[str, Any], prefix: str = "") -> dict[str, str]:
    """Nested sections as dotted keys (MLflow params are flat strings)."""
    flat = {}
    for key, value in config.items():
        if isinstance(value, dict) and value:
            flat.update(_flat(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value if isinstance(value, str) else json.dumps(value)
    return flat


class TrackioTracker:
    """A Trackio run (local, or the Space TRACKIO_SPACE_ID names)."""

    def __init__(self, run: TrackedRun) -> None:
        import trackio

        self.run = trackio.init(
            project=os.environ.get("TRACKIO_PROJECT", PROJECT),
            name=run.name,
            config={**run.tags, **run.config},
            space_id=os.environ.get("TRACKIO_SPACE_ID"),
        )

    def log(self, iteration: int, values: dict[str, float]) -> None:
        self.run.log(values, step=iteration)

    def finish(self, failed: bool) -> None:
        self.run.finish()


OPENERS: dict[str, type] = {
    "tensorboard": TensorBoardTracker,
    "wandb": WandbTracker,
    "mlflow": MlflowTracker,
    "trackio": TrackioTracker,
}
"""Each of ``grue_bench.config.TRACKERS``; its name is also the package it needs."""


def requested(report_to: list[str]) -> list[str]:
    """The trackers ``report_to`` names; ``all`` stands for every installed one."""
    if "all" in report_to:
        return [name for name in TRACKERS if find_spec(name) is not None]
    return list(dict.fromkeys(report_to))


def _not_installed(name: str) -> GrueError:
    return GrueError(f"the {name} tracker is not installed", key="report_to", fix=EXTRA)


def check_installed(report_to: list[str]) -> None:
    """Fail before any run starts if a requested tracker's package is missing."""
    for name in requested(report_to):
        if find_spec(name) is None:
            raise _not_installed(name)


class Trackers:
    """The open trackers of one run; as a context manager, finishes them (failed if it raised)."""

    def __init__(self, trackers: list[Tracker]) -> None:
        self.trackers = trackers

    @classmethod
    def open(cls, spec: RunSpec, folder: Path) -> Trackers:
        """Open the trackers of ``spec``'s ``report_to`` for its run, whose artifacts go to ``folder``."""
        run = TrackedRun.of(spec, folder)
        opened = cls([])
        for name in requested(spec.config.report_to):
            try:
                opened.trackers.append(OPENERS[name](run))
            except ImportError as exc:
                opened.finish(failed=True)
                raise _not_installed(name) from exc
            except BaseException:
                opened.finish(failed=True)
                raise
        return opened

    def log(self, iteration: int, split: str, values: dict[str, float]) -> None:
        """One metric row of the store, as ``<split>/<metric>`` (a name already so prefixed is kept)."""
        named = {
            name if name.startswith(f"{split}/") else f"{split}/{name}": float(value)
            for name, value in values.items()
        }
        for tracker in self.trackers:
            tracker.log(iteration, named)

    def finish(self, failed: bool) -> None:
        for tracker in self.trackers:
            try:
                tracker.finish(failed)
            except Exception:  # one tracker failing to close must not hide the run's outcome
                log.exception("could not finish the %s tracker", type(tracker).__name__)

    def __enter__(self) -> Trackers:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.finish(failed=exc_type is not None)


@dataclass
class TrackingRecorder:
    """A recorder that also sends every metric row to the run's trackers."""

    inner: Recorder
    trackers: Trackers

    @property
    def live(self) -> bool:
        return self.inner.live

    def begin(self) -> None:
        self.inner.begin()

    def metrics(self, iteration: int, split: str, values: dict[str, float]) -> None:
        self.inner.metrics(iteration, split, values)
        self.trackers.log(iteration, split, values)

    def generations(self, iteration: int, split: str, rows: list[dict[str, Any]]) -> None:
        self.inner.generations(iteration, split, rows)

    def checkpoint(self, iteration: int, run_dir: str) -> None:
        self.inner.checkpoint(iteration, run_dir)
