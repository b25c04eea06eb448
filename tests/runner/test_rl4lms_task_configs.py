"""RL4LMs's own 44 task configs, unchanged (tests/data/rl4lms_configs/task_configs): ``grue
validate`` accepts each, and with ``--profile tiny`` (every hub model replaced by an offline one,
each replacement logged) and smaller sizes, each trains one iteration and evaluates once, offline."""

import random

import pytest
import torch
from conftest import RL4LMS_TASK_CONFIGS

from grue_bench.resolve.grid import build_specs, resolve_grid
from grue_bench.runner.assemble import Run, load_base, load_pool
from grue_bench.runner.evaluator import evaluate

CONFIGS = sorted(RL4LMS_TASK_CONFIGS.glob("*/*.yml"))
RL_SIZES = ["train_evaluation.n_iters=1", "alg.args.n_steps=4", "alg.args.batch_size=8"]
"""One iteration of a small rollout (env.n_envs x 4 transitions), as the issue allows."""
SUPERVISED_SIZES = ["alg.training_args.num_train_epochs=0.01"]
"""The supervised trainer's counterpart of one iteration: a few optimizer steps."""
EVAL_SIZES = ["train_evaluation.eval_batch_size=256"]
EVAL_SAMPLES = 16
"""The evaluation runs the config's generation and every metric on this many validation samples."""


def _name(path) -> str:
    return f"{path.parent.name}/{path.stem}"


def test_all_44_configs_are_here():
    assert len(CONFIGS) == 44


@pytest.mark.parametrize("path", CONFIGS, ids=_name)
def test_grue_validate_accepts_it_unchanged(run_grue, path):
    code, out, err = run_grue("validate", str(path))
    assert code == 0, err
    assert out.startswith(f"ok: {path}")


@pytest.mark.slow
@pytest.mark.parametrize("path", CONFIGS, ids=_name)
def test_it_trains_one_iteration_and_evaluates_offline_on_the_tiny_profile(path):
    tasks, algs = resolve_grid(None, None, path)
    supervised = algs == ["supervised"]
    overrides = (SUPERVISED_SIZES if supervised else RL_SIZES) + EVAL_SIZES
    (spec,) = build_specs(tasks, algs, [0], "tiny", path, overrides, offline=True)
    config = spec.config
    base = load_base(config)
    assert base.name.startswith("tiny-")  # no hub model was needed
    lm = base.model
    run = Run(config, 0, base, {"train": list(load_pool(config, "train"))})
    if supervised:
        stage = run.supervised(lm)
        run.train(stage)
        assert stage.losses and all(loss == loss for loss in stage.losses)
        lm = stage.model
    else:
        algorithm = run.rl(lm)
        stats = algorithm.step(run.pools["train"], random.Random(0))
        assert algorithm.iteration == 1 and stats["rollout/length"] > 0
        lm = algorithm.model
    samples = list(load_pool(config, "validation"))[:EVAL_SAMPLES]
    scores, rows = evaluate(
        lm, base.tokenizer, base.model_type, config, samples, "validation", torch.device("cpu")
    )
    assert len(rows) == len(samples) > 0
    assert set(scores.results) == {metric.id for metric in config.train_evaluation.metrics}
    assert not scores.skipped
