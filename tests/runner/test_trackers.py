"""``report_to``: every metric row of the store reaches each experiment tracker at its iteration,
from the process that runs the run; offline (W&B offline, MLflow's file store, TensorBoard's event
files, Trackio's local database)."""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path

import pytest
from conftest import need_module

from grue_bench.config import RunConfig
from grue_bench.errors import GrueError
from grue_bench.resolve.grid import build_specs
from grue_bench.runner import trackers
from grue_bench.store import Store

from .wandb_offline import offline_run

TINY = [
    "train_evaluation.n_iters=2",
    "train_evaluation.eval_every=1",
    "train_evaluation.eval_batch_size=8",
    "alg.args.n_steps=8",
    "alg.args.batch_size=8",
    "alg.args.n_epochs=1",
    "datapool.args.n_samples=8",
]


def trackio_curves(folder: Path) -> dict[str, dict[str, list[tuple[int, float]]]]:
    """Per Trackio run name, each logged metric's (step, value) points, read from the local
    project database Trackio writes (``$TRACKIO_DIR/<project>.db``)."""
    with sqlite3.connect(folder / "grue-bench.db") as db:
        rows = db.execute("SELECT run_name, step, metrics FROM metrics ORDER BY id").fetchall()
    curves: dict[str, dict[str, list[tuple[int, float]]]] = {}
    for name, step, metrics in rows:
        for key, value in json.loads(metrics).items():
            curves.setdefault(name, {}).setdefault(key, []).append((step, value))
    return {name: {key: sorted(points) for key, points in found.items()} for name, found in curves.items()}


@pytest.fixture
def offline_trackers(tmp_path, monkeypatch):
    """Every tracker offline and writing under ``tmp_path`` (Trackio into ``tmp_path/trackio``, read
    again by a fresh import in this process: its folder is fixed when it is imported)."""
    need_module("trackio")
    for name in [name for name in sys.modules if name == "trackio" or name.startswith("trackio.")]:
        monkeypatch.delitem(sys.modules, name)
    env = {
        "TRACKIO_DIR": str(tmp_path / "trackio"),
        "WANDB_MODE": "offline",
        "WANDB_DIR": str(tmp_path),
        "WANDB_SILENT": "true",
        "MLFLOW_TRACKING_URI": f"file:{tmp_path / 'mlruns'}",
        "MLFLOW_ALLOW_FILE_STORE": "true",  # MLflow 3.x refuses the file store otherwise
        "MLFLOW_DISABLE_TELEMETRY": "true",
        "DO_NOT_TRACK": "1",
    }
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return tmp_path


def expected_curves(store: Store, run_id: int) -> dict[str, list[tuple[int, float]]]:
    """The store's rows of a run under the names the trackers log them by."""
    curves = {}
    for split in ("rollout", "train", "validation", "test"):
        for name, points in store.curves(run_id, split).items():
            curves[name if name.startswith(f"{split}/") else f"{split}/{name}"] = points
    return curves


def tensorboard_curves(folder: Path) -> dict[str, list[tuple[int, float]]]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(folder))
    events.Reload()
    return {
        tag: sorted((event.step, event.value) for event in events.Scalars(tag))
        for tag in events.Tags()["scalars"]
    }


def wandb_runs(root: Path) -> dict[str, dict]:
    runs = [offline_run(path) for path in root.glob("wandb/offline-run-*/run-*.wandb")]
    return {run["name"]: run for run in runs}


def history_curves(rows: list[dict]) -> dict[str, list[tuple[int, float]]]:
    curves: dict[str, list[tuple[int, float]]] = {}
    for row in rows:
        for name, value in row.items():
            if not name.startswith("_") and name != "iteration":
                curves.setdefault(name, []).append((row["iteration"], value))
    return {name: sorted(points) for name, points in curves.items()}


def assert_same(logged: dict, stored: dict, rel: float = 1e-12) -> None:
    assert sorted(logged) == sorted(stored)
    for name, points in stored.items():
        assert [step for step, _ in logged[name]] == [step for step, _ in points], name
        assert [value for _, value in logged[name]] == pytest.approx([v for _, v in points], rel=rel), name


@pytest.mark.slow
def test_each_run_logs_the_stores_metrics_to_every_tracker(offline_trackers, run_grue):
    need_module("tensorboard")
    need_module("wandb")
    MlflowClient = need_module("mlflow").MlflowClient

    tmp = offline_trackers
    sets = [f"--set={override}" for override in TINY]
    store_path = tmp / "s.sqlite"
    code, _, err = run_grue(
        *("run", "--task", "increasing_numbers", "--alg", "ppo", "--seed-list", "0,1", "--jobs", "2"),
        *("--store", str(store_path), "--output-dir", str(tmp / "runs"), *sets),
        *("--report-to", "tensorboard,wandb,mlflow,trackio"),
    )
    assert code == 0, err[-3000:]
    with Store(store_path) as store:
        runs = {
            f"increasing_numbers/ppo/seed{seed}": run_id
            for run_id, seed in store.db.execute("SELECT id, seed FROM runs")
        }
        stored = {label: expected_curves(store, run_id) for label, run_id in runs.items()}
        config = json.loads(store.db.execute("SELECT config FROM runs").fetchone()[0])
    assert config["report_to"] == ["tensorboard", "wandb", "mlflow", "trackio"]
    assert {name.split("/")[0] for name in stored["increasing_numbers/ppo/seed0"]} == {
        "rollout",
        "train",
        "validation",
        "test",
    }

    # TensorBoard: event files in each run's artifact folder
    for label, curves in stored.items():
        (folder,) = (tmp / "runs" / "increasing_numbers" / "ppo").glob(f"seed{label[-1]}-*")
        assert_same(tensorboard_curves(folder / "tensorboard"), curves, rel=1e-6)  # float32 events

    # W&B offline: one run per grid run, its history at each iteration
    logged = wandb_runs(tmp)
    assert sorted(logged) == sorted(stored)
    for label, curves in stored.items():
        run = logged[label]
        assert_same(history_curves(run["history"]), curves)
        assert run["exit_code"] == 0 and run["group"] == "increasing_numbers/ppo"
        assert run["tags"] == ["increasing_numbers", "ppo", f"seed{label[-1]}"]
        assert run["config"]["train_evaluation"]["n_iters"] == 2

    # MLflow file store
    client = MlflowClient(f"file:{tmp / 'mlruns'}")
    experiment = client.get_experiment_by_name("grue-bench")
    found = {run.info.run_name: run for run in client.search_runs([experiment.experiment_id])}
    assert sorted(found) == sorted(stored)
    for label, curves in stored.items():
        run = found[label]
        history = {
            name: sorted((m.step, m.value) for m in client.get_metric_history(run.info.run_id, name))
            for name in run.data.metrics
        }
        assert_same(history, curves)
        assert run.info.status == "FINISHED"
        assert run.data.tags["alg"] == "ppo" and run.data.tags["seed"] == label[-1]
        assert run.data.params["train_evaluation.n_iters"] == "2"

    # Trackio (the real package, local): one run per grid run, every curve at its iterations
    logged = trackio_curves(tmp / "trackio")
    assert sorted(logged) == sorted(stored)
    for label, curves in stored.items():
        assert_same(logged[label], curves)


def test_a_tracker_not_installed_is_refused_before_any_run(run_grue, tmp_path, monkeypatch):
    monkeypatch.setattr(trackers, "find_spec", lambda name: None if name == "wandb" else object())
    store = tmp_path / "s.sqlite"
    code, out, err = run_grue(
        *("run", "--task", "increasing_numbers", "--alg", "ppo", "--store", str(store)),
        *("--output-dir", str(tmp_path / "runs"), "--report-to", "tensorboard,wandb"),
    )
    assert code == 2 and out == ""
    assert "report_to: the wandb tracker is not installed" in err
    assert "pip install 'grue-bench[trackers]'" in err
    assert not store.exists()


def test_all_stands_for_the_installed_trackers(monkeypatch):
    monkeypatch.setattr(trackers, "find_spec", lambda name: object() if name in ("mlflow", "wandb") else None)
    assert trackers.requested(["all"]) == ["wandb", "mlflow"]
    assert trackers.requested(["mlflow", "mlflow"]) == ["mlflow"]


def test_a_missing_import_when_a_run_opens_its_trackers_names_the_extra(tmp_path, monkeypatch):
    (spec,) = build_specs(["increasing_numbers"], ["ppo"], [0], "tiny", extra={"report_to": ["wandb"]})
    monkeypatch.setitem(sys.modules, "wandb", None)  # `import wandb` raises ImportError
    with pytest.raises(GrueError, match=r"wandb tracker is not installed"):
        trackers.Trackers.open(spec, tmp_path)


def test_a_failing_run_finishes_its_tracker_runs_as_failed(offline_trackers):
    MlflowClient = need_module("mlflow").MlflowClient

    tmp = offline_trackers
    report_to = {"report_to": "mlflow,trackio"}
    (spec,) = build_specs(["increasing_numbers"], ["ppo"], [0], "tiny", extra=report_to)
    with pytest.raises(RuntimeError), trackers.Trackers.open(spec, tmp / "run") as opened:
        opened.log(1, "rollout", {"rollout/reward": 0.5})
        raise RuntimeError("diverged")
    client = MlflowClient(f"file:{tmp / 'mlruns'}")
    (run,) = client.search_runs([client.get_experiment_by_name("grue-bench").experiment_id])
    assert run.info.status == "FAILED" and run.data.metrics == {"rollout/reward": 0.5}
    assert trackio_curves(tmp / "trackio") == {"increasing_numbers/ppo/seed0": {"rollout/reward": [(1, 0.5)]}}


@pytest.mark.parametrize(
    ("value", "parsed"),
    [
        ("tensorboard,wandb", ["tensorboard", "wandb"]),
        ("none", []),
        (None, []),
        (["mlflow"], ["mlflow"]),
        ("all", ["all"]),
    ],
)
def test_report_to_takes_hugging_faces_forms(value, parsed):
    assert RunConfig(alg={"id": "ppo"}, report_to=value).report_to == parsed


def test_report_to_refuses_an_unknown_tracker_and_leaves_the_hash_alone():
    choices = "Input should be 'tensorboard', 'wandb', 'mlflow', 'trackio' or 'all'"
    with pytest.raises(ValueError, match=choices):
        RunConfig(alg={"id": "ppo"}, report_to="tensorbord")
    plain = RunConfig(alg={"id": "ppo"})
    assert RunConfig(alg={"id": "ppo"}, report_to="wandb").hash() == plain.hash()
