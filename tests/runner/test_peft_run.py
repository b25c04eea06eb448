"""Runs with a LoRA adapter through the runner: the final ``model/`` is an adapter folder that
peft loads on its base (or, with ``peft.merge``, plain merged weights), the checkpoint holds the
adapter and value head only, and a bad key fails before anything runs."""

import subprocess

import torch
from peft import AutoPeftModelForCausalLM, PeftModel
from transformers import AutoModelForCausalLM

from .test_runner import grue_run, rows


def _run_dir(tmp_path, alg):
    return next((tmp_path / "runs" / "increasing_numbers" / alg).iterdir())


def test_a_ppo_run_with_lora_saves_an_adapter_that_peft_loads(tmp_path):
    command = grue_run(tmp_path, "--set=alg.policy.args.peft.r=4", "--set=alg.policy.args.peft.lora_alpha=8")
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    assert rows(tmp_path / "s.sqlite", "select status from runs") == [("finished",)]
    run_dir = _run_dir(tmp_path, "ppo")
    assert not (run_dir / "model" / "config.json").exists()
    model = AutoPeftModelForCausalLM.from_pretrained(run_dir / "model")
    assert isinstance(model, PeftModel)
    trained = [p for name, p in model.named_parameters() if "lora_B" in name]
    assert trained and any(p.abs().sum() > 0 for p in trained)  # B starts at zero: it moved
    state = torch.load(run_dir / "checkpoint" / "state.pt", weights_only=True)
    assert all("lora_" in name or name.startswith("value_head.") for name in state["policy"])


def test_a_merged_supervised_run_saves_plain_weights(tmp_path):
    merge = ("--set=alg.training_args.peft.r=4", "--set=alg.training_args.peft.merge=true")
    command = grue_run(tmp_path, *merge)
    command[command.index("--alg") + 1] = "supervised"
    command = [part for part in command if not part.startswith("--set=alg.args.")]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    model_dir = _run_dir(tmp_path, "supervised") / "model"
    assert not (model_dir / "adapter_config.json").exists()
    assert not isinstance(AutoModelForCausalLM.from_pretrained(model_dir), PeftModel)


def test_a_misspelt_peft_key_fails_before_the_run_with_its_key_path(tmp_path):
    command = grue_run(tmp_path, "--set=alg.policy.args.peft.lora_alpah=8")
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    assert result.returncode == 2
    assert "alg.policy.args.peft.lora_alpah: unknown key" in result.stderr
