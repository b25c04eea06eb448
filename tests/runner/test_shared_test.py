"""A test is evaluated once and shared: a run that finds the test of its key loads it, writes the
same files (at its own iteration) and is left in the random states the test ended in; a test that
drew nothing is shared whatever the random states; other weights, settings or random states (for a
test that sampled) test anew."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy
import pytest
import torch

from grue_bench.data import Sample
from grue_bench.resolve.grid import build_specs
from grue_bench.runner import evaluator as evaluator_module
from grue_bench.runner.evaluator import Evaluator
from grue_bench.runner.shared_test import FOLDER, shared_test
from grue_bench.scoring import Scores
from tests.rl.tiny_lm import tiny_causal, word_tokenizer

CONFIG = build_specs(["increasing_numbers"], ["ppo"], [0], "tiny")[0].config
TEST = [Sample(id=str(i), prompt_or_input_text=f"{i} {i + 1}", references=[f"{i + 2}"]) for i in range(4)]


@pytest.fixture
def evaluations(monkeypatch):
    """The tests actually evaluated; each samples (draws from torch, Python and NumPy) unless
    ``evaluations.draw`` is False, and scores what it drew."""
    made = _Made()

    def evaluate(lm, tokenizer, model_type, config, samples, split, device, precision):
        made.append(split)
        drawn = float(torch.rand(1)) + random.random() + float(numpy.random.random()) if made.draw else 0.0
        scores = Scores(results={"m": {"score": (None, drawn)}}, skipped={"other": "needs a model"})
        return scores, [{"sample_id": s.id, "text": f"{drawn}", "scores": {}} for s in samples]

    monkeypatch.setattr(evaluator_module, "evaluate", evaluate)
    return made


class _Made(list):
    draw = True


def make_test(folder: Path, random_state: int = 7, config=CONFIG, lm_seed: int = 0, iteration: int = -1):
    """The test at ``iteration`` (-1: before training) of a run whose folder is ``folder``, from
    ``random_state``: its table, its rows, the draws after it and the metrics it skipped."""
    tokenizer = word_tokenizer()
    lm = tiny_causal(tokenizer, seed=lm_seed)
    torch.manual_seed(random_state), random.seed(random_state), numpy.random.seed(random_state)
    folder.mkdir(parents=True, exist_ok=True)
    evaluator = Evaluator(config, tokenizer, "causal", {"test": TEST}, folder, "cpu")
    table, rows = shared_test(evaluator, lm, iteration)
    after = (float(torch.rand(1)), random.random(), float(numpy.random.random()))
    return table, rows, after, evaluator.skipped


def written(folder: Path) -> tuple[str, str]:
    return (folder / "test_metrics.jsonl").read_text(), (folder / "predictions/test_-1.json").read_text()


def test_a_second_run_loads_the_test_writes_what_it_writes_and_draws_as_after_it(tmp_path, evaluations):
    ppo = make_test(tmp_path / "runs/task/ppo/seed0-a")
    nlpo = make_test(tmp_path / "runs/task/nlpo/seed0-b")
    assert evaluations == ["test"] and len(list((tmp_path / "runs/task" / FOLDER).iterdir())) == 1
    assert nlpo == ppo and nlpo[3] == {"other": "needs a model"}
    assert written(tmp_path / "runs/task/nlpo/seed0-b") == written(tmp_path / "runs/task/ppo/seed0-a")
    alone = make_test(tmp_path / "elsewhere/task/nlpo/seed0-b")  # evaluated by itself
    assert len(evaluations) == 2 and alone == nlpo  # the random states after it included


def test_a_test_that_samples_is_shared_only_from_the_same_random_states(tmp_path, evaluations):
    first = make_test(tmp_path / "runs/task/ppo/seed0-a", random_state=7)
    other = make_test(tmp_path / "runs/task/ppo/seed1-a", random_state=8)
    assert len(evaluations) == 2 and first[0] != other[0]  # sharing would be wrong


def test_a_test_that_draws_nothing_is_shared_whatever_the_random_states(tmp_path, evaluations):
    evaluations.draw = False
    first = make_test(tmp_path / "runs/task/ppo/seed0-a", random_state=7)
    other = make_test(tmp_path / "runs/task/ppo/seed1-a", random_state=8)
    assert evaluations == ["test"] and first[:2] == other[:2]
    assert other[2] != first[2]  # each run goes on from its own random states


def test_other_weights_or_settings_test_anew(tmp_path, evaluations):
    evaluations.draw = False
    make_test(tmp_path / "runs/task/ppo/seed0-a")
    make_test(tmp_path / "runs/task/ppo/seed0-b", lm_seed=1)
    wider = CONFIG.model_copy(deep=True)
    wider.train_evaluation.eval_batch_size += 1
    make_test(tmp_path / "runs/task/ppo/seed0-c", config=wider)
    assert len(evaluations) == 3 and len(list((tmp_path / "runs/task" / FOLDER).iterdir())) == 3


def test_the_saved_test_holds_scores_rows_and_the_random_states_it_ended_in(tmp_path, evaluations):
    table, rows, _, _ = make_test(tmp_path / "runs/task/ppo/seed0-a")
    (path,) = (tmp_path / "runs/task" / FOLDER).iterdir()
    saved = json.loads(path.read_text())
    assert saved["table"] == table and saved["rows"] == rows
    assert set(saved["random_states"]) == {"torch_rng", "cuda_rng", "python_rng", "numpy_rng"}


def test_a_test_loaded_at_another_iteration_is_written_at_that_one(tmp_path, evaluations):
    # a supervised run's last test (after 16 steps) is its chain's test after the warm start
    evaluations.draw = False
    supervised, chain = (
        tmp_path / "runs/task/supervised/seed0-a",
        tmp_path / "runs/task/supervised+ppo/seed0-a",
    )
    fitted = make_test(supervised, iteration=16)
    warm_started = make_test(chain, iteration=0)
    assert evaluations == ["test"] and warm_started[:2] == fitted[:2]
    predictions = (supervised / "predictions/test_16.json").read_text()
    assert (chain / "predictions/test_0.json").read_text() == predictions
    (line,) = (json.loads(text) for text in (chain / "test_metrics.jsonl").read_text().splitlines())
    assert line == {"iteration": 0, **fitted[0]}
