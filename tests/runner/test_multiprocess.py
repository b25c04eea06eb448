"""One run across two CPU processes (gloo) from the command line: `grue run --num-processes 2`
records the run once, each process samples its own prompts, the processes end with the same
parameters, and the learning curve is that of one process sampling as many episodes."""

import re
import subprocess

import pytest

from .test_runner import grue_run, rows

N_ITERS = 3
ONE_PROCESS = ["--set=env.n_envs=16", "--set=alg.args.batch_size=8"]
"""A rollout of 16 x 8 transitions, minibatches of 8; with two processes each samples half of
it and takes half of each minibatch (their gradients averaged)."""
TWO_PROCESSES = ["--set=env.n_envs=8", "--set=alg.args.batch_size=4", "--num-processes=2"]


def command(tmp_path, *extra):
    """`grue run` of the synthetic task for ``N_ITERS`` iterations, logging at DEBUG."""
    words = grue_run(tmp_path, f"--set=train_evaluation.n_iters={N_ITERS}", *extra)
    words[words.index("INFO")] = "DEBUG"  # the per-process prompt and parameter lines
    return words


def rewards(store) -> list[float]:
    query = "select value from metrics where split='rollout' and name='rollout/reward' order by iteration"
    return [value for (value,) in rows(store, query)]


@pytest.mark.slow
def test_two_processes_train_one_run(tmp_path):
    two, one = tmp_path / "two", tmp_path / "one"
    result = subprocess.run(command(two, *TWO_PROCESSES), capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "1 run(s): 1 finished" in result.stdout
    store = two / "s.sqlite"
    assert rows(store, "select status from runs") == [("finished",)]  # recorded once
    test = "select iteration from metrics where split='test' and name='reward/increasing_numbers'"
    tests = rows(store, test)
    assert sorted(i for (i,) in tests) == [-1, N_ITERS]  # evaluated once, before and after
    assert next((two / "runs").glob("*/*/*/model/config.json"))

    prompts = dict(re.findall(r"iteration 1, process (\d): prompts ([\w\- ]+)", result.stderr))
    assert sorted(prompts) == ["0", "1"]
    assert prompts["0"] != prompts["1"]  # each process drew its own prompts
    digests = dict(re.findall(r"process (\d) ends with parameters (\w+)", result.stderr))
    assert sorted(digests) == ["0", "1"]
    assert digests["0"] == digests["1"]  # gradients averaged: the same update everywhere

    again = subprocess.run(command(two, *TWO_PROCESSES), capture_output=True, text=True, check=False)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "1 already done" in again.stdout  # every process agreed there was nothing to do

    single = subprocess.run(command(one, *ONE_PROCESS), capture_output=True, text=True, check=False)
    assert single.returncode == 0, single.stderr[-3000:]
    # the same total batch: the same number of iterations, a mean reward within noise (the
    # rewards are in [0, 1]; 16 episodes a rollout, about 0.16 each, a hundredth or two apart)
    both, alone = rewards(store), rewards(one / "s.sqlite")
    assert len(both) == len(alone) == N_ITERS
    assert sum(both) / N_ITERS == pytest.approx(sum(alone) / N_ITERS, abs=0.05)


def test_several_processes_refuse_ray(tmp_path):
    result = subprocess.run(
        command(tmp_path, "--num-processes=2", "--executor=ray"), capture_output=True, text=True, check=False
    )
    assert result.returncode == 2
    assert "--executor" in result.stderr and "Ray" in result.stderr
