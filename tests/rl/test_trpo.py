"""TRPO's update in micro-batches is the whole-batch update, and processes take the same steps."""

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch.nn.utils import parameters_to_vector

from .ddp_trpo import POOL, tiny_trpo

REPO = Path(__file__).resolve().parents[2]


def _rollout(trpo):
    torch.manual_seed(0)
    return trpo.credit(trpo.rollout_episodes(trpo.collect(POOL, random.Random(0))))


def _update_without_dropout(trpo, rollout):
    """An update in eval mode: without dropout, two updates on a rollout see the same forward passes."""
    trpo.policy.eval()
    return trpo.update(rollout)


@pytest.mark.parametrize("model_type", ["causal", "seq2seq"])
def test_micro_batches_change_memory_not_the_step(model_type):
    whole, micro = tiny_trpo(6, model_type), tiny_trpo(2, model_type)
    rollout = _rollout(whole)
    assert len(rollout) >= 6 and rollout.loss_mask.sum() == 36  # 6 x 6 transitions
    before = parameters_to_vector(whole.unwrapped.parameters()).detach().clone()
    whole_stats, micro_stats = (_update_without_dropout(trpo, rollout) for trpo in (whole, micro))
    assert whole_stats["train/line_search_accepted"] == micro_stats["train/line_search_accepted"] == 1.0
    after_whole = parameters_to_vector(whole.unwrapped.parameters()).detach()
    after_micro = parameters_to_vector(micro.unwrapped.parameters()).detach()
    assert not torch.allclose(before, after_whole)  # the update moved the parameters...
    assert torch.allclose(after_whole, after_micro, rtol=0, atol=1e-5)  # ...to the same place
    for key in ("train/policy_loss", "train/approx_kl", "train/value_loss", "train/entropy"):
        assert abs(whole_stats[key] - micro_stats[key]) < 1e-5, key


def test_micro_batches_bound_the_rows_of_every_forward_pass():
    trpo = tiny_trpo(micro_batch_size=2)
    rollout = _rollout(trpo)
    rows = []

    def record(module, args, kwargs):
        rows.append(kwargs["input_ids"].size(0))

    handle = trpo.unwrapped.lm.register_forward_pre_hook(record, with_kwargs=True)
    try:
        trpo.update(rollout)
    finally:
        handle.remove()
    assert len(rows) > 10 and max(rows) <= 2, rows


def test_two_processes_take_the_same_steps(tmp_path):
    """Two CPU processes (gloo) with their own samples end a few TRPO iterations with the same
    parameters, to the bit."""
    env = {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "ACCELERATE_USE_CPU": "1",
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
    }
    launch = [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_machines", "1"]
    options = ["--num_processes", "2", "--mixed_precision", "no", "--dynamo_backend", "no"]
    script = Path(__file__).with_name("ddp_trpo.py")
    result = subprocess.run(
        [*launch, *options, str(script), str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-5000:]
    first, second = (json.loads((tmp_path / f"rank{i}.json").read_text()) for i in range(2))
    assert first["world"] == second["world"] == 2
    assert first["texts"] != second["texts"]  # each process sampled its own episodes...
    assert first["accepted"] == second["accepted"] and sum(first["accepted"]) > 0
    assert first["after"] != first["before"]  # ...the updates moved the parameters...
    assert first["after"] == second["after"], (first["sum"], second["sum"])  # ...in step
