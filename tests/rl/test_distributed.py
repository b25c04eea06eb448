"""Two CPU processes under `accelerate launch` keep identical parameters after a PPO update.

accelerate is a dependency: the launcher runs as a module of the interpreter under test (no
`accelerate` script needed on PATH), and the test fails, not skips, when it is missing."""

import json
import os
import subprocess
from pathlib import Path

import pytest

from grue_bench.runner.processes import launch_command


def test_two_ranks_have_identical_parameters_after_an_update(tmp_path):
    script = Path(__file__).with_name("ddp_update.py")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "ACCELERATE_USE_CPU": "1"}
    command = launch_command([str(script), str(tmp_path)], 2)
    result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    ranks = [json.loads((tmp_path / f"rank{i}.json").read_text()) for i in range(2)]
    assert [r["world"] for r in ranks] == [2, 2]
    assert ranks[0]["texts"] != ranks[1]["texts"]  # each rank sampled its own episodes...
    assert sum(ranks[0]["after"]) != pytest.approx(ranks[0]["before"], abs=1e-6)  # the update moved them
    assert ranks[0]["after"] == pytest.approx(
        ranks[1]["after"], rel=0, abs=1e-6
    )  # ...and the update is shared
    assert ranks[0]["kl_coef"] == ranks[1]["kl_coef"]
    assert len(ranks[0]["micro_batches"]) == len(ranks[1]["micro_batches"])  # as many steps...
    assert ranks[0]["micro_batches"] != ranks[1]["micro_batches"]  # ...of differently many passes
