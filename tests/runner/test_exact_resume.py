"""A run killed mid-way and resumed gives what the uninterrupted run gives, bit for bit on CPU:
the same per-iteration rewards, losses and KL, the same validation and test scores."""

import signal
import subprocess

import pytest
import torch

from grue_bench import plugins
from grue_bench.resolve import apply_override, build_config, task_config
from grue_bench.rl import precision as precision_module
from grue_bench.rl.checkpoint import STATE_FILE, save_checkpoint
from grue_bench.rl.trainer import Callback
from grue_bench.runner.assemble import build_run

from .test_runner import grue_run, rows, wait_for_store

ITERATIONS = 8


def _command(tmp_path, alg: str) -> list[str]:
    command = grue_run(
        tmp_path,
        f"--set=train_evaluation.n_iters={ITERATIONS}",
        "--set=train_evaluation.eval_every=3",
        "--set=alg.args.n_epochs=2",
        "--set=alg.args.batch_size=4",
        "--jobs=1",
    )
    command[command.index("--alg") + 1] = alg
    return command


def _metrics(store) -> dict[tuple[str, str, int], float]:
    """Every recorded value but timings, by (split, name, iteration)."""
    found = rows(store, "select split, name, iteration, value from metrics where name not like 'time/%'")
    return {(split, name, iteration): value for split, name, iteration, value in found}


@pytest.mark.slow
@pytest.mark.parametrize("alg", ["ppo", "nlpo", "supervised+ppo"])
def test_a_run_killed_and_resumed_repeats_the_uninterrupted_run(tmp_path, alg):
    whole, broken = tmp_path / "whole", tmp_path / "broken"
    result = subprocess.run(_command(whole, alg), capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr[-2000:]

    store = broken / "s.sqlite"
    process = subprocess.Popen(_command(broken, alg), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_for_store(process, store, "select count(*) from runs where last_checkpoint_iteration >= 2")
    assert process.poll() is None, "the run ended before it could be killed mid-way"
    process.send_signal(signal.SIGKILL)
    process.wait()
    killed_at = rows(store, "select last_checkpoint_iteration, status from runs")[0]
    assert killed_at[1] != "finished" and 2 <= killed_at[0] < ITERATIONS
    resumed = subprocess.run(_command(broken, alg), capture_output=True, text=True, check=False)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert "resuming after iteration" in resumed.stderr

    expected, got = _metrics(whole / "s.sqlite"), _metrics(store)
    assert set(got) == set(expected)
    assert {name for _, name, _ in expected} >= {"rollout/reward", "train/policy_loss", "train/value_loss"}
    assert max(i for _, _, i in expected) == ITERATIONS  # the final validation and test scores
    differ = {key: (expected[key], got[key]) for key in expected if abs(expected[key] - got[key]) > 1e-6}
    assert not differ, f"killed after iteration {killed_at[0]}: {sorted(differ.items())[:10]}"


class StopAfterCheckpoint(Callback):
    """Saves a checkpoint after iteration ``at`` and ends training there, as a kill right after it."""

    def __init__(self, folder, at: int) -> None:
        self.folder, self.at = folder, at

    def on_iteration_end(self, trainer, stats) -> bool:
        if trainer.iteration == self.at:
            save_checkpoint(self.folder, trainer.algorithm, trainer.rng.getstate())
            return True
        return False


def _numbers(stats: dict[str, float]) -> dict[str, float]:
    """An iteration's statistics but its timings."""
    return {key: value for key, value in stats.items() if not key.startswith("time/")}


def resume_config(alg: str):
    """increasing_numbers, 4 iterations of a short rollout: quick to train twice."""
    data = task_config(plugins.TASKS.get("increasing_numbers"), alg, "tiny")
    for assignment in ("train_evaluation.n_iters=4", "env.args.max_episode_length=8", "alg.args.n_steps=8"):
        apply_override(data, assignment)
    if alg == "trpo":
        apply_override(data, "alg.args.n_critic_updates=2")
    return build_config(data, f"exact resume {alg}")


@pytest.mark.parametrize("alg", ["a2c", "trpo", "grpo", "rloo"])
def test_every_algorithm_resumed_from_its_checkpoint_repeats_the_uninterrupted_iterations(tmp_path, alg):
    """The checkpoint holds all an algorithm's state (weights, optimizer, minibatch order, KL
    coefficient, random states): in the process a killed run restarts in, iterations 3 and 4
    from the checkpoint of iteration 2 are those of the run that went on, bit for bit."""
    config = resume_config(alg)
    whole = build_run(config, 0, splits=("train",))
    history = whole.train(whole.rl(whole.base.model)).history
    cut = build_run(config, 0, splits=("train",))
    cut.train(cut.rl(cut.base.model), [StopAfterCheckpoint(tmp_path / "checkpoint", at=2)])
    resumed = build_run(config, 0, splits=("train",))  # seeds everything again, as a new process
    trainer = resumed.train(resumed.rl(resumed.base.model), resume_from=tmp_path / "checkpoint")

    assert len(history) == 4 and trainer.iteration == 4
    assert [_numbers(s) for s in trainer.history] == [_numbers(s) for s in history[2:]]
    assert history[2] != history[3]  # the iterations differ: the comparison is not vacuous


@pytest.mark.parametrize(("logging_steps", "save_steps", "at"), [(2, None, 2), (4, 3, 3)])
def test_a_supervised_fit_resumed_from_its_checkpoint_repeats_the_uninterrupted_fit(
    tmp_path, logging_steps, save_steps, at
):
    """Checkpointed in the middle of its first epoch (2 batches a step), at a logging period or
    (``save_steps``) inside one, a fit resumed in a freshly seeded run takes the same steps: the
    same losses, reports and weights."""
    data = task_config(plugins.TASKS.get("commongen"), "supervised", "tiny")
    for assignment in (
        "datapool={id: commongen, args: {max_samples: 24}}",
        "alg.training_args.per_device_train_batch_size=8",
        "alg.training_args.gradient_accumulation_steps=2",
        f"alg.training_args.logging_steps={logging_steps}",
        f"alg.training_args.save_steps={save_steps or 'null'}",
        "alg.training_args.num_train_epochs=2",
    ):
        apply_override(data, assignment)
    config = build_config(data, "exact resume supervised")

    def fitted(*callbacks, resume_from=None):
        run = build_run(config, 0, splits=("train",))
        stage = run.supervised(run.base.model)
        return stage, run.train(stage, callbacks, resume_from=resume_from)

    whole, whole_trainer = fitted()
    assert whole.iteration == whole.n_steps(build_run(config, 0, ("train",)).pools["train"]) > 4
    fitted(StopAfterCheckpoint(tmp_path / "checkpoint", at=at))
    resumed, trainer = fitted(resume_from=tmp_path / "checkpoint")

    assert resumed.iteration == whole.iteration and resumed.losses == whole.losses
    assert trainer.history == whole_trainer.history[1:]  # the pauses after the checkpoint
    assert any("train/loss" in stats for stats in trainer.history)  # with a report that spans the cut
    before, after = whole.model.state_dict(), resumed.model.state_dict()
    assert all(torch.equal(before[name], after[name]) for name in before)


@pytest.mark.parametrize("half", ["bf16", "fp16"])
def test_a_half_precision_run_resumed_from_its_checkpoint_repeats_the_uninterrupted_iterations(
    tmp_path, monkeypatch, half
):
    """bf16 resumes bit for bit as fp32 does; fp16 (a GPU's, run here on the CPU's float16
    autocast) also carries its loss scale through the checkpoint."""
    monkeypatch.setattr(precision_module, "check_supported", lambda name, device, key: None)
    data = resume_config("ppo").to_dict()
    apply_override(data, f"alg.args.{half}=true")
    config = build_config(data, f"exact resume {half}")

    def trained(*callbacks, resume_from=None):
        run = build_run(config, 0, splits=("train",))
        algorithm = run.rl(run.base.model)
        return algorithm, run.train(algorithm, callbacks, resume_from=resume_from)

    whole, whole_trainer = trained()
    assert whole.precision.name == half and whole.collector.precision.name == half
    assert (whole.scaler is not None) == (half == "fp16")
    trained(StopAfterCheckpoint(tmp_path / "checkpoint", at=2))
    if half == "fp16":
        assert "grad_scaler" in torch.load(tmp_path / "checkpoint" / STATE_FILE, weights_only=False)
    resumed, trainer = trained(resume_from=tmp_path / "checkpoint")

    assert [_numbers(s) for s in trainer.history] == [_numbers(s) for s in whole_trainer.history[2:]]
    if half == "fp16":
        assert resumed.scaler.get_scale() == whole.scaler.get_scale()
