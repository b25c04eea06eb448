"""The runner end to end on the synthetic task: store rows, resume after SIGKILL, concurrent
writers, a run shared by two grids executed once, failure isolation, and Ray giving the same rows
as local processes."""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest

from grue_bench import plugins
from grue_bench.resolve.grid import build_specs
from grue_bench.rewards.base import RewardFunction
from grue_bench.rl.checkpoint import CHECKPOINT, META_FILE
from grue_bench.runner.executor import GridExecutor
from grue_bench.runner.run import spec_dir
from grue_bench.store import BEFORE_TRAINING, Store

FAST = [
    "train_evaluation.n_iters=4",
    "train_evaluation.eval_every=2",
    "train_evaluation.save_every=1",
    "train_evaluation.eval_batch_size=16",
    "alg.args.n_steps=8",
    "alg.args.batch_size=8",
    "alg.args.n_epochs=1",
    "datapool.args.n_samples=16",
]


def grue_run(tmp_path, *extra, seeds="0"):
    command = [
        sys.executable,
        "-m",
        "grue_bench.cli",
        "--log-level",
        "INFO",
        "run",
        "--task",
        "increasing_numbers",
        "--alg",
        "ppo",
        "--seed-list",
        seeds,
        "--store",
        str(tmp_path / "s.sqlite"),
        "--output-dir",
        str(tmp_path / "runs"),
        *[f"--set={o}" for o in FAST],
        *extra,
    ]
    return command


def rows(store_path, query):
    with sqlite3.connect(store_path) as db:
        return db.execute(query).fetchall()


def count_now(store_path, query) -> int:
    """``select count(*) ...`` on a store another process may still be creating (0 until it is)."""
    try:
        return rows(store_path, query)[0][0] if store_path.exists() else 0
    except sqlite3.OperationalError:  # the file exists, its tables not yet
        return 0


def wait_for_store(process: subprocess.Popen, store_path, query: str, timeout_s: float = 300) -> None:
    """Poll until ``select count(*) ...`` ``query`` on the store is non-zero, or ``process`` has
    ended, or ``timeout_s`` has passed (a bound on the polling, not a timing expectation)."""
    deadline = time.time() + timeout_s
    while process.poll() is None and time.time() < deadline:
        time.sleep(0.1)
        if count_now(store_path, query):
            return


def test_a_run_fills_the_store_and_its_artifacts(tmp_path):
    result = subprocess.run(grue_run(tmp_path), capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "1 run(s): 1 finished" in result.stdout
    store = tmp_path / "s.sqlite"
    ((status, model, config),) = rows(store, "select status, model, config from runs")
    assert status == "finished" and model.startswith("tiny-causal")
    assert json.loads(config)["train_evaluation"]["n_iters"] == 4
    iterations = rows(store, "select distinct iteration from metrics where split='rollout' order by 1")
    assert [i for (i,) in iterations] == [1, 2, 3, 4]
    tests = rows(
        store, "select iteration from metrics where split='test' and name='reward/increasing_numbers'"
    )
    assert sorted(i for (i,) in tests) == [-1, 4]  # before and after training
    generated = "select iteration, count(*) from generations where split='test' group by 1 order by 1"
    assert rows(store, generated) == [(-1, 16), (4, 16)]  # the zero-shot texts too
    run_dir = next((tmp_path / "runs" / "increasing_numbers" / "ppo").iterdir())
    for name in ("config.yaml", "rollout_info.jsonl", "test_metrics.jsonl", "validation_metrics.jsonl"):
        assert (run_dir / name).is_file(), name
    assert (run_dir / "model" / "config.json").is_file()
    training = [json.loads(line) for line in (run_dir / "training_info.jsonl").read_text().splitlines()]
    assert [row["iteration"] for row in training] == [1, 2, 3, 4]
    stored = dict(rows(store, "select name, value from metrics where split='train' and iteration=4"))
    assert {k: v for k, v in training[-1].items() if k != "iteration"} == pytest.approx(stored)
    # running the same command again does nothing
    again = subprocess.run(grue_run(tmp_path), capture_output=True, text=True, check=False)
    assert "1 already done" in again.stdout


def test_sigkill_mid_grid_then_rerun_gives_exactly_one_finished_run_each(tmp_path):
    # runs long after their first checkpoint (iteration 4 of 16), so that a poll starved by a
    # loaded machine still sees the grid mid-way (with 8 iterations, one CI run saw it only done)
    command = grue_run(
        tmp_path, "--set=train_evaluation.n_iters=16", "--set=train_evaluation.eval_every=4", seeds="0,1"
    )
    store = tmp_path / "s.sqlite"
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    # kill once the first run has a checkpoint mid-way
    wait_for_store(process, store, "select count(*) from runs where last_checkpoint_iteration >= 2")
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert rows(store, "select count(*) from runs where status='finished'")[0][0] < 2
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    assert f"pid {process.pid} on host" in result.stderr and "taking it over" in result.stderr
    assert "resuming after iteration" in result.stderr
    assert rows(store, "select seed, status, owner_pid from runs order by seed") == [
        (0, "finished", None),
        (1, "finished", None),
    ]
    counts = rows(
        store,
        "select run_id, count(*) from metrics where split='rollout' and name='rollout/reward' "
        "group by run_id",
    )
    assert [c for _, c in counts] == [16, 16]


def _worker_pids(parent: int) -> list[int]:
    """The pool's worker processes under ``parent`` (not multiprocessing's resource tracker)."""
    found = subprocess.run(["pgrep", "-P", str(parent), "-f", "spawn_main"], capture_output=True, text=True)
    return [int(pid) for pid in found.stdout.split()]


def test_workers_killed_by_the_os_do_not_hang_the_grid(tmp_path):
    command = grue_run(
        tmp_path,
        "--jobs=2",
        "--set=train_evaluation.n_iters=30",
        "--set=train_evaluation.eval_every=10",
        seeds="0,1,2",
    )
    store = tmp_path / "s.sqlite"
    log = tmp_path / "stderr.txt"
    with log.open("w") as stderr:  # a file, not a pipe: a full pipe would stall the run while we wait
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=stderr)
    mid_way = "select count(*) from runs where status = 'running' and last_checkpoint_iteration >= 2"
    wait_for_store(process, store, mid_way)
    workers = _worker_pids(process.pid)
    assert process.poll() is None and workers, "the grid ended before a run was mid-way"
    for pid in workers:  # as the OOM killer would: the runs in flight are interrupted
        os.kill(pid, signal.SIGKILL)
    process.wait(timeout=600)
    err = log.read_text()
    assert process.returncode == 0, err[-3000:]
    assert "resuming after iteration" in err  # an interrupted run went on from its checkpoint
    assert rows(store, "select seed, status from runs order by seed") == [(s, "finished") for s in (0, 1, 2)]
    counts = rows(
        store, "select count(*) from metrics where split='rollout' and name='rollout/reward' group by run_id"
    )
    assert [c for (c,) in counts] == [30, 30, 30]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the death signal is Linux's")
def test_a_worker_whose_writer_died_before_it_started_exits_at_once():
    """A writer SIGKILLed while spawning its pool dies before the workers arm their death signal:
    they must not live on as orphans."""
    start = "from grue_bench.runner.executor import _init_worker; _init_worker(20, None, 1, {pid})"
    orphan = subprocess.run([sys.executable, "-c", start.format(pid=1 << 30)], timeout=120)
    assert orphan.returncode == 1
    child = subprocess.run([sys.executable, "-c", start.format(pid=os.getpid())], timeout=120)
    assert child.returncode == 0


def test_two_processes_on_one_store_both_finish(tmp_path):
    first = subprocess.Popen(
        grue_run(tmp_path, seeds="0"), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    second = subprocess.Popen(
        grue_run(tmp_path, seeds="1"), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    outputs = [p.communicate(timeout=600) for p in (first, second)]
    for process, (_, err) in zip((first, second), outputs, strict=True):
        assert process.returncode == 0, err[-2000:]
        assert "database is locked" not in err
    store = tmp_path / "s.sqlite"
    assert rows(store, "select seed, status from runs order by seed") == [(0, "finished"), (1, "finished")]
    assert rows(store, "select count(*) from metrics where split='rollout' and name='rollout/reward'") == [
        (8,)
    ]


def left_to(pid: int) -> str:
    """How ``grue run`` lists the run it left to the grid in process ``pid``."""
    return f"RUNNING ELSEWHERE increasing_numbers/ppo/seed0: in pid {pid} on host"


def test_two_grids_started_at_once_execute_their_shared_run_once(tmp_path):
    n_iters = 12
    command = grue_run(
        tmp_path, f"--set=train_evaluation.n_iters={n_iters}", "--set=train_evaluation.eval_every=4"
    )
    logs = [tmp_path / "first.txt", tmp_path / "second.txt"]
    grids = []
    for log in logs:  # stderr to files: a full pipe would stall a grid while we wait for the other
        with log.open("w") as stderr:
            grids.append(subprocess.Popen(command, stdout=subprocess.PIPE, stderr=stderr, text=True))
    outs = [grid.communicate(timeout=600)[0] for grid in grids]
    errs = [log.read_text() for log in logs]
    store = tmp_path / "s.sqlite"
    ((key, status, owner),) = rows(store, "select key, status, owner_pid from runs")
    assert (status, owner) == ("finished", None)
    executed = [f"run {key[:10]} finished" in err for err in errs]
    assert executed.count(True) == 1, errs
    winner, loser = (0, 1) if executed[0] else (1, 0)
    assert grids[winner].returncode == 0, errs[winner][-3000:]
    if grids[loser].returncode == 3:  # it registered while the winner held the run
        assert left_to(grids[winner].pid) in outs[loser]
    else:  # or after the winner had finished it
        assert grids[loser].returncode == 0 and "1 already done" in outs[loser], errs[loser][-3000:]
    run_dir = next((tmp_path / "runs" / "increasing_numbers" / "ppo").iterdir())
    rollouts = (run_dir / "rollout_info.jsonl").read_text().splitlines()
    assert [json.loads(line)["iteration"] for line in rollouts] == list(range(1, n_iters + 1))
    assert rows(store, "select count(*) from metrics where split='rollout' and name='rollout/reward'") == [
        (n_iters,)
    ]


def proc_state(pid: int) -> str:
    """The state letter of a process ('T' once stopped)."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def write_locked(store_path) -> bool:
    """Whether some process holds the store's write lock now."""
    db = sqlite3.connect(store_path, timeout=0, isolation_level=None)
    try:
        db.execute("BEGIN IMMEDIATE")
        db.execute("ROLLBACK")
        return False
    except sqlite3.OperationalError:
        return True
    finally:
        db.close()


def pause_between_writes(pid: int, store_path) -> None:
    """SIGSTOP a grid at a moment it holds no write lock on the store: stopped inside a write, it
    would lock every other process out of the store."""
    deadline = time.time() + 120
    while time.time() < deadline:
        os.kill(pid, signal.SIGSTOP)
        while proc_state(pid) != "T" and time.time() < deadline:
            time.sleep(0.01)
        if not write_locked(store_path):
            return
        os.kill(pid, signal.SIGCONT)
        time.sleep(0.05)
    raise AssertionError(f"process {pid} held the store's write lock every time it was stopped")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the process state from /proc")
def test_a_run_a_live_grid_holds_is_left_to_it_and_reported(tmp_path):
    command = grue_run(tmp_path, "--jobs=1", "--set=train_evaluation.n_iters=16")
    store = tmp_path / "s.sqlite"
    with (tmp_path / "first.txt").open("w") as stderr:
        first = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=stderr)
    wait_for_store(first, store, "select count(*) from runs where status = 'running'")
    assert first.poll() is None, "the grid ended before its run was running"
    pause_between_writes(first.pid, store)  # alive, and holding its run, whatever the machine's load
    try:
        second = subprocess.run(command, capture_output=True, text=True, check=False)
    finally:
        os.kill(first.pid, signal.SIGCONT)
    assert second.returncode == 3, second.stderr[-3000:]
    assert "0 finished, 0 already done, 0 failed, 1 running in other processes" in second.stdout
    assert left_to(first.pid) in second.stdout
    assert "left to it" in second.stderr
    assert first.wait(timeout=600) == 0, (tmp_path / "first.txt").read_text()[-3000:]
    assert rows(store, "select status, owner_pid from runs") == [("finished", None)]
    assert rows(store, "select count(*) from metrics where split='rollout' and name='rollout/reward'") == [
        (16,)
    ]


@pytest.fixture(scope="module")
def two_seeds(tmp_path_factory) -> tuple[Path, list]:
    """Seeds 0 and 1 run one after the other into ``s.sqlite``, their folders in ``runs/``."""
    root = tmp_path_factory.mktemp("two_seeds")
    specs = build_specs(["increasing_numbers"], ["ppo"], [0, 1], "tiny", overrides=FAST)
    with Store(root / "s.sqlite") as store:
        GridExecutor(store, root / "runs").run(specs)
    return root, specs


def test_a_run_duration_counts_from_its_own_start_not_the_grid_start(two_seeds):
    root, _ = two_seeds
    with Store(root / "s.sqlite") as store:
        first, second = sorted(store.runs(status="finished"), key=lambda r: r.seed)
    assert second.started_at >= first.finished_at  # seed 1 waited for seed 0; its clock did not run
    for run in (first, second):
        span = datetime.fromisoformat(run.finished_at) - datetime.fromisoformat(run.started_at)
        assert run.duration_s == pytest.approx(span.total_seconds(), abs=1e-3)


def _stored_values(store_path, seed: int) -> dict[tuple[str, str, int], float]:
    """The values a store recorded for the run of ``seed``, but timings, by (split, name, iteration)."""
    found = rows(
        store_path,
        "select split, name, iteration, value from metrics join runs on runs.id = metrics.run_id"
        f" where seed = {seed} and name not like 'time/%'",
    )
    return {(split, name, iteration): value for split, name, iteration, value in found}


def test_a_run_new_to_its_store_or_forced_starts_over_whatever_its_folder_holds(two_seeds, tmp_path):
    """A finished run's folder keeps its last checkpoint. The same run into a new store with the
    same output folder does not resume from it: it records the test before training and every
    iteration, the values of the first. A forced run empties the folder too; a resumed one keeps it."""
    root, specs = two_seeds
    folder = spec_dir(root / "runs", specs[0])
    assert (folder / CHECKPOINT / META_FILE).is_file()
    again = tmp_path / "again.sqlite"
    with Store(again) as store:
        GridExecutor(store, root / "runs").run(specs[:1])
    got = _stored_values(again, seed=0)
    assert got == _stored_values(root / "s.sqlite", seed=0)
    assert {i for split, _, i in got if split == "test"} == {BEFORE_TRAINING, 4}
    assert {i for _, name, i in got if name == "rollout/reward"} == {1, 2, 3, 4}

    with Store(again) as store:
        run = store.runs()[0]
        store.fail_run(run.id, "killed")
        assert GridExecutor(store, root / "runs").claim(specs[:1]) == specs[:1]  # resumed: kept
        assert (folder / CHECKPOINT / META_FILE).is_file()
        store.release_runs()
        assert GridExecutor(store, root / "runs", force=True).claim(specs[:1]) == specs[:1]
        assert not folder.exists()
        store.release_runs()


class NaNAfterFirstCall(RewardFunction):
    def __init__(self):
        self.calls = 0

    def batch(self, prompts, generations, references, meta_infos):
        self.calls += 1
        return [float("nan") if self.calls > 1 else 0.0 for _ in generations]


def test_a_nan_reward_fails_its_run_and_the_others_finish(tmp_path):
    plugins.REWARDS.register("nan_after_first_call", NaNAfterFirstCall)
    good = build_specs(["increasing_numbers"], ["ppo"], [0], "tiny", overrides=FAST)
    bad = build_specs(
        ["increasing_numbers"],
        ["ppo"],
        [1],
        "tiny",
        overrides=FAST,
        extra={"reward_fn": {"id": "nan_after_first_call"}},
    )
    with Store(tmp_path / "s.sqlite") as store:
        report = GridExecutor(store, tmp_path / "runs").run(bad + good)
        assert report.finished == ["increasing_numbers/ppo/seed0"]
        assert list(report.failed) == ["increasing_numbers/ppo/seed1"]
        failed = store.runs(status="failed")[0]
        assert "invalid reward (nan)" in failed.error
        assert store.runs(status="finished")[0].seed == 0


def test_cli_exits_non_zero_naming_failed_runs(tmp_path):
    # a reward that cannot work at run time: perplexity needs a model the reward is never given
    broken = (
        "--set=reward_fn={id: metric, args: {metric: causal_perplexity, keys: [fluency_metrics/perplexity]}}"
    )
    result = subprocess.run(grue_run(tmp_path, broken), capture_output=True, text=True, check=False)
    assert result.returncode == 1
    assert "0 finished" in result.stdout and "1 failed" in result.stdout
    assert "FAILED increasing_numbers/ppo/seed0: GrueError" in result.stdout
    assert "causal_perplexity needs a causal LM" in result.stdout


@pytest.mark.skipif(
    subprocess.run([sys.executable, "-c", "import ray"], capture_output=True).returncode != 0,
    reason="ray is not installed (pip install 'grue-bench[ray]')",
)
def test_ray_executor_stores_the_same_rows_as_local_processes(tmp_path):
    local, remote = tmp_path / "local", tmp_path / "ray"
    local.mkdir()
    remote.mkdir()
    env = {**os.environ, "RAY_ADDRESS": "", "OMP_NUM_THREADS": "1"}
    for folder, extra in ((local, ["--jobs", "2"]), (remote, ["--executor", "ray"])):
        result = subprocess.run(
            grue_run(folder, *extra, seeds="0,1"), capture_output=True, text=True, check=False, env=env
        )
        assert result.returncode == 0, result.stderr[-3000:]
    query = (
        "select r.seed, m.split, m.name, m.iteration, round(m.value, 4) from metrics m join runs r "
        "on r.id = m.run_id where m.name not like 'time/%' order by 1, 2, 3, 4"
    )
    assert rows(local / "s.sqlite", query) == rows(remote / "s.sqlite", query)
    assert rows(remote / "s.sqlite", "select count(*) from runs where status='finished'") == [(2,)]
    for folder in (local, remote):  # checkpoints promoted by the writer; none left staged
        for run_dir in (folder / "runs" / "increasing_numbers" / "ppo").iterdir():
            assert not list(run_dir.glob("*.staged"))
            assert json.loads((run_dir / "checkpoint" / "meta.json").read_text())["iteration"] == 3
    assert rows(remote / "s.sqlite", "select last_checkpoint_iteration from runs") == [(3,), (3,)]
