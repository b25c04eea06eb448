"""The demo's grid: what `make demo` runs (the README's `grue run --task all --alg nlpo --seeds 3`)
is the seven GRUE tasks x NLPO x seeds 0, 1, 2, each run with a valid, distinct config."""

import shlex
import subprocess
import sys

from conftest import REPO

from grue_bench import plugins
from grue_bench.cli import build_parser
from grue_bench.commands.run import grid_specs
from grue_bench.runner.executor import GridExecutor
from grue_bench.store import Store


def test_the_demo_runs_the_seven_grue_tasks_with_nlpo_and_three_seeds():
    demo = next(line for line in (REPO / "Makefile").read_text().splitlines() if "bin/grue run" in line)
    argv = shlex.split(demo.split("bin/grue ", 1)[1])
    assert argv == ["run", "--task", "all", "--alg", "nlpo", "--seeds", "3"]  # README's command
    specs = grid_specs(build_parser("run").parse_args(argv))
    assert len(specs) == 21
    assert sorted(spec.task for spec in specs) == sorted(list(plugins.grue_tasks()) * 3)
    assert {spec.alg for spec in specs} == {"nlpo"} and {spec.config.alg.id for spec in specs} == {"nlpo"}
    assert sorted(spec.seed for spec in specs) == [0] * 7 + [1] * 7 + [2] * 7
    assert len({spec.label for spec in specs}) == 21
    assert all(spec.config.profile == "tiny" for spec in specs)  # the embedded offline default


SMALL_BUDGET = [  # the demo's runs with a rollout and an update of a few episodes: the same 21 keys
    "--set=train_evaluation.n_iters=1",
    "--set=env.n_envs=4",
    "--set=alg.args.n_steps=4",
    "--set=alg.args.batch_size=16",
    "--set=alg.args.n_epochs=1",
]


def test_the_demo_rerun_on_a_grid_stopped_before_its_last_run_executes_that_run_alone(tmp_path):
    """The demo's grid stopped with 20 runs finished and one not (as a kill leaves it; the
    resume of the run itself is tested in test_runner and test_exact_resume): the same command,
    in a new process, rebuilds the 21 keys, skips the 20 and ends with 21 finished, seeds 0..2
    of every GRUE task. (The whole demo, killed with 8 runs finished and rerun, was measured by
    hand: README, "Resume".)"""
    argv = ["run", "--task", "all", "--alg", "nlpo", "--seeds", "3", *SMALL_BUDGET]
    where = ["--store", str(tmp_path / "s.sqlite"), "--output-dir", str(tmp_path / "runs"), "--jobs", "1"]
    specs = grid_specs(build_parser("run").parse_args(argv))
    last = next(spec for spec in specs if spec.task == "totto" and spec.seed == 2)  # the fewest test samples
    with Store(tmp_path / "s.sqlite") as store:
        grid = GridExecutor(store, tmp_path / "runs")
        with grid.holding():  # stopped early: its claims are let go
            assert grid.claim(specs) == specs
            for spec in specs:
                if spec is not last:
                    store.finish_run(grid.run_ids[spec.label])

    rerun = subprocess.run(
        [sys.executable, "-m", "grue_bench.cli", *argv, *where], capture_output=True, text=True, check=False
    )
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    assert "21 run(s): 1 finished, 20 already done, 0 failed" in rerun.stdout
    with Store(tmp_path / "s.sqlite") as store:
        runs = store.runs()
        assert len(runs) == 21 and {run.status for run in runs} == {"finished"}
        assert sorted((run.task, run.seed) for run in runs) == sorted((s.task, s.seed) for s in specs)
        tested = set(store.metrics_table().query("split == 'test'")["run_id"])
    assert tested == {run.id for run in runs if (run.task, run.seed) == ("totto", 2)}  # the one executed
