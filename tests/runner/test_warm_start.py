"""A chain's supervised warm start is fitted once and shared: a run that finds the fit of its
inputs (weights, data, settings, random states) loads it and goes on exactly as if it had fitted
it, random states included; other inputs fit anew. The tiny GPT-2 here keeps its dropout (0.1),
so the fit draws from the random state it starts from."""

from __future__ import annotations

import json
import random
import subprocess
from pathlib import Path
from types import SimpleNamespace

import numpy
import pytest
import torch

from grue_bench import plugins
from grue_bench.data import Sample
from grue_bench.errors import GrueError
from grue_bench.models import BaseLM
from grue_bench.resolve import supervised_args
from grue_bench.resolve.grid import WARM_START, build_specs
from grue_bench.runner import warm_start as module
from grue_bench.runner.assemble import Run
from grue_bench.runner.callbacks import Evaluations
from grue_bench.runner.warm_start import FOLDER, warm_start
from tests.rl.tiny_lm import tiny_causal, word_tokenizer
from tests.runner.test_runner import grue_run, rows

CONFIG = build_specs(["increasing_numbers"], ["supervised+ppo"], [0], "tiny")[0].config
POOL = [Sample(id=str(i), prompt_or_input_text=f"{i} {i + 1}", references=[f"{i + 2}"]) for i in range(12)]


def start(out: Path, random_state: int = 7):
    """A chain's warm start in the run folder ``out``, from the random state ``random_state``."""
    tokenizer = word_tokenizer()
    lm = tiny_causal(tokenizer, seed=0)
    torch.manual_seed(random_state)
    random.seed(random_state)
    numpy.random.seed(random_state)
    out.mkdir(parents=True, exist_ok=True)
    base = BaseLM(lm, tokenizer, "causal", "tiny-word")
    lm, losses, steps = warm_start(Run(CONFIG, 0, base, {"train": POOL}), lm, out, "cpu")
    after = (torch.get_rng_state(), random.random(), numpy.random.random())
    return lm, losses, steps, after


def same_weights(a, b) -> bool:
    one, two = a.state_dict(), b.state_dict()
    return one.keys() == two.keys() and all(torch.equal(one[name], two[name]) for name in one)


def same_after(a, b) -> bool:
    return torch.equal(a[0], b[0]) and a[1:] == b[1:]


@pytest.fixture
def fits(monkeypatch):
    """The supervised fits actually made."""
    made = []

    def counted(run, lm, checkpoints=None):
        made.append(run.seed)
        return fit(run, lm, checkpoints)

    fit = Run.warm_started
    monkeypatch.setattr(Run, "warm_started", counted)
    return made


def test_a_second_chain_loads_the_fit_and_goes_on_as_if_it_had_fitted_it(tmp_path, fits):
    ppo = start(tmp_path / "runs/task/supervised+ppo/seed0-a")
    nlpo = start(tmp_path / "runs/task/supervised+nlpo/seed0-b")
    assert len(fits) == 1 and len(list((tmp_path / "runs/task" / FOLDER).iterdir())) == 1
    alone = start(tmp_path / "elsewhere/task/supervised+nlpo/seed0-b")  # fitted by itself
    assert len(fits) == 2
    assert same_weights(nlpo[0], alone[0]) and same_weights(ppo[0], alone[0])
    assert nlpo[1:3] == alone[1:3] and nlpo[0].training == alone[0].training
    assert same_after(nlpo[3], alone[3]) and same_after(ppo[3], alone[3])
    assert not same_weights(alone[0], tiny_causal(word_tokenizer(), seed=0))  # it did train


def test_the_key_does_not_read_the_truncation_the_last_tokenization_left_on_the_tokenizer():
    """A loaded zero-shot test tokenizes nothing: the fit key must not tell it from an evaluated one."""
    tokenizer = word_tokenizer()
    run = Run(
        CONFIG, 0, BaseLM(tiny_causal(tokenizer, seed=0), tokenizer, "causal", "tiny-word"), {"train": POOL}
    )
    before = module.fit_key(run, run.base.model)
    tokenizer(["1 2 3"], truncation=True, max_length=2, padding="max_length")
    assert json.loads(tokenizer.backend_tokenizer.to_str())["truncation"] is not None  # what it left
    assert module.fit_key(run, run.base.model) == before


def test_another_random_state_is_another_fit(tmp_path, fits):
    first = start(tmp_path / "runs/task/supervised+ppo/seed0-a", random_state=7)
    other = start(tmp_path / "runs/task/supervised+nlpo/seed0-b", random_state=8)
    assert len(fits) == 2 and len(list((tmp_path / "runs/task" / FOLDER).iterdir())) == 2
    assert not same_weights(first[0], other[0])  # dropout drew from it: sharing would be wrong


def test_a_resumed_run_loads_the_fit_it_recorded_whatever_the_random_state(tmp_path, fits):
    run = tmp_path / "runs/task/supervised+ppo/seed0-a"
    first = start(run, random_state=7)
    resumed = start(run, random_state=99)  # a resume skips the test before training
    assert len(fits) == 1 and same_weights(first[0], resumed[0])


def test_a_recorded_fit_that_is_gone_is_an_error_naming_it(tmp_path, fits):
    run = tmp_path / "runs/task/supervised+ppo/seed0-a"
    start(run)
    (fit,) = (tmp_path / "runs/task" / FOLDER).iterdir()
    (fit / module.FIT_FILE).unlink()
    with pytest.raises(GrueError) as caught:
        start(run)
    assert f"the supervised warm start this run started from is gone: {fit}" in str(caught.value)
    assert "--force" in str(caught.value)


class Killed(Exception):
    """The process dies here."""


def test_a_fit_killed_midway_goes_on_from_its_checkpoint_as_if_never_stopped(tmp_path, fits, monkeypatch):
    """A warm start checkpoints every ``save_steps`` in the run's folder: started again after a kill
    at its third step, it loads the checkpoint of its second and ends as the fit that was never
    stopped (weights, losses, random states); the checkpoint is gone once the fit is saved."""
    from grue_bench.rl.supervised import Supervised

    profile = plugins.TASKS.get("increasing_numbers").profiles["tiny"]
    monkeypatch.setitem(
        profile, "algs", {"supervised": {"training_args": {"per_device_train_batch_size": 4}}}
    )
    monkeypatch.setitem(profile["algs"]["supervised"]["training_args"], "save_steps", 1)
    whole = start(tmp_path / "alone/task/supervised+ppo/seed0-a")
    assert whole[2] == 3  # 12 references in batches of 4

    step, steps = Supervised.step, []

    def dying(stage, pool, rng):  # the steps the fit starts at: the third one is killed
        steps.append(stage.iteration)
        if len(steps) == 3:
            raise Killed
        return step(stage, pool, rng)

    run = tmp_path / "runs/task/supervised+ppo/seed0-a"
    monkeypatch.setattr(Supervised, "step", dying)
    with pytest.raises(Killed):
        start(run)
    (checkpoint,) = run.glob(f"{module.CHECKPOINT_PREFIX}*")
    assert json.loads((checkpoint / "meta.json").read_text())["iteration"] == 2
    steps.clear()
    resumed = start(run)
    assert steps == [2]  # it went on from the checkpoint: one step left to take
    assert len(fits) == 3 and same_weights(resumed[0], whole[0])
    assert resumed[1:3] == whole[1:3] and same_after(resumed[3], whole[3])
    assert not list(run.glob(f"{module.CHECKPOINT_PREFIX}*"))


def test_a_seed_fits_once_for_its_supervised_run_and_chains_each_storing_what_it_stores_alone(tmp_path):
    def run(folder: Path, algs: str):
        command = grue_run(folder, "--jobs=1")
        command[command.index("--alg") + 1] = algs
        if algs == "supervised":  # the RL stage's settings are not a supervised run's
            command = [part for part in command if not part.startswith("--set=alg.args.")]
        folder.mkdir(exist_ok=True)
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        assert result.returncode == 0, result.stderr[-2000:]
        return result.stderr

    # the supervised run fits first (its validations between logging steps draw nothing the fit
    # sees) and both chains load its fit: they store what a chain that fitted alone stores
    log = run(tmp_path / "both", "supervised") + run(tmp_path / "both", "supervised+ppo,supervised+nlpo")
    assert log.count("warm start: supervised fit saved") == 1
    assert log.count("warm start: loading the supervised fit") == 2
    assert len(list((tmp_path / "both/runs/increasing_numbers" / FOLDER).iterdir())) == 1
    # the three runs test the same LM the same way before training: tested once, loaded twice;
    # the fit is tested by the supervised run last, after its validation (this test samples, so from
    # other random states), and by the first chain after its warm start, whose test the second loads
    assert log.count("shared test: saved") == 3 and log.count("shared test: loading") == 3
    assert log.count("(iteration -1)") == 2 and log.count("(iteration 0)") == 1
    run(tmp_path / "alone", "supervised+nlpo")
    query = (
        "select m.split, m.name, m.iteration, m.value from metrics m join runs r on r.id = m.run_id "
        "where r.alg = 'supervised+nlpo' and m.name not like 'time/%'"
    )
    shared, alone = (sorted(rows(tmp_path / f / "s.sqlite", query)) for f in ("both", "alone"))
    assert shared == alone and {name for _, name, _, _ in shared} >= {"rollout/reward", "train/policy_loss"}
    assert {iteration for split, _, iteration, _ in shared if split == "test"} == {-1, 0, 4}
    texts = "select g.* from generations g join runs r on r.id = g.run_id where r.alg = 'supervised+nlpo'"
    generated, alone = (
        sorted(row[1:] for row in rows(tmp_path / f / "s.sqlite", texts)) for f in ("both", "alone")
    )
    assert generated == alone and {row[1] for row in generated} >= {-1, 4}
    # the stored config and the run folder say what the warm start was, which the RL config does not
    settings = supervised_args(CONFIG).model_dump(mode="json")
    assert settings["learning_rate"] == 1e-3 and settings["num_train_epochs"] == 1.0  # the task's own
    configs = dict(rows(tmp_path / "both/s.sqlite", "select alg, config from runs"))
    assert json.loads(configs["supervised+nlpo"])[WARM_START] == {"training_args": settings}
    (record,) = (tmp_path / "both/runs/increasing_numbers/supervised+ppo").glob(f"*/{module.RECORD_FILE}")
    assert json.loads(record.read_text())["training_args"] == settings


@pytest.mark.parametrize("kept", [False, True])
def test_a_supervised_runs_validations_leave_the_random_states_its_fit_draws_from(kept):
    """What makes a supervised run's fit a chain's (whose fit validates nothing): with
    ``draws_kept`` a validation between iterations, which samples, leaves torch's, Python's and
    NumPy's random states as it found them."""

    def sampling_evaluator(lm, split, iteration):
        return {"score": float(torch.rand(1)) + random.random() + numpy.random.random()}, []

    def draws():
        return float(torch.rand(1)), random.random(), float(numpy.random.random())

    recorder = SimpleNamespace(metrics=lambda *args: None, generations=lambda *args: None)
    evaluations = Evaluations(sampling_evaluator, recorder, every=2, draws_kept=kept)
    trainer = SimpleNamespace(iteration=2, n_iters=4, algorithm=SimpleNamespace(model=None))
    for state in (0, 1):
        torch.manual_seed(state), random.seed(state), numpy.random.seed(state)
        undisturbed = draws()
        torch.manual_seed(state), random.seed(state), numpy.random.seed(state)
        evaluations.on_iteration_end(trainer, {})
        assert (draws() == undisturbed) is kept
