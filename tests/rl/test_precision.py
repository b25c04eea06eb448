"""Mixed precision (``rl/precision.py``): bf16 runs the forward passes' matrix products in
bfloat16 while log-probs, values and weights stay float32; a half precision the hardware lacks is
refused naming the setting. (Resuming a half-precision run: tests/runner/test_exact_resume.py.)"""

import pytest
import torch
from conftest import NEEDS_NATIVE_BF16

from grue_bench.errors import GrueError
from grue_bench.rl import precision as precision_module
from grue_bench.rl.batch import TokenBatch
from grue_bench.rl.policy import ActorCritic
from grue_bench.rl.precision import Precision
from grue_bench.rl.rollout import encode_prompts

from .test_policy_and_losses import SETTINGS
from .tiny_lm import tiny_causal, word_tokenizer

CPU = torch.device("cpu")


def _policy_and_batch():
    tokenizer = word_tokenizer()
    policy = ActorCritic(tiny_causal(tokenizer).eval(), "causal")
    torch.nn.init.normal_(policy.value_head.weight)
    ids, mask = encode_prompts(tokenizer, ["1 2 3", "the cat runs"], SETTINGS, "causal", "cpu")
    response = torch.tensor([[5, 6, 7, 8], [9, 10, 11, 1]])
    return policy, TokenBatch(ids, mask, response, torch.ones_like(response, dtype=torch.float))


@NEEDS_NATIVE_BF16
def test_bf16_runs_the_model_in_bfloat16_and_gives_float32_logprobs_values_and_gradients():
    policy, batch = _policy_and_batch()
    exact = policy(batch)
    seen = []
    hook = policy.lm.lm_head.register_forward_hook(lambda module, inputs, output: seen.append(output.dtype))
    with Precision.from_flags(bf16=True, fp16=False, device=CPU, key="alg.args").autocast():
        half = policy(batch)
    hook.remove()
    assert seen == [torch.bfloat16]  # the matrix products ran in bfloat16
    assert {half.logprobs.dtype, half.entropy.dtype, half.values.dtype} == {torch.float32}
    assert torch.allclose(half.logprobs, exact.logprobs, atol=0.05)  # bfloat16 keeps ~3 digits
    assert torch.allclose(half.values, exact.values, atol=0.05)
    half.logprobs.sum().backward()
    assert {p.grad.dtype for p in policy.lm.parameters() if p.grad is not None} == {torch.float32}


def test_fp32_runs_no_autocast():
    policy, batch = _policy_and_batch()
    fp32 = Precision.from_flags(bf16=False, fp16=False, device=CPU, key="alg.args")
    with fp32.autocast():
        assert not torch.is_autocast_enabled("cpu")
        out = policy(batch)
    assert torch.equal(out.logprobs, policy(batch).logprobs)
    assert fp32.grad_scaler() is None


def test_a_half_precision_this_machine_lacks_is_an_error_naming_the_setting(monkeypatch):
    with pytest.raises(GrueError) as caught:
        Precision.from_flags(bf16=False, fp16=True, device=CPU, key="alg.args")
    assert str(caught.value).startswith("alg.args.fp16: fp16 needs a CUDA GPU; this run is on cpu")
    assert "fp32" in caught.value.problems[0].fix
    monkeypatch.setattr(precision_module, "bf16_supported", lambda device: False)
    with pytest.raises(GrueError) as caught:
        Precision.from_flags(bf16=True, fp16=False, device=CPU, key="alg.training_args")
    assert str(caught.value).startswith(
        "alg.training_args.bf16: bf16 is not supported by this CPU (no AVX-512 BF16 or AMX)"
    )
    assert caught.value.problems[0].fix == "use fp32 (--precision fp32)"


@pytest.mark.parametrize(
    ("machine", "avx512_bf16", "amx", "expected"),
    [
        ("x86_64", False, False, False),  # Skylake to Ice Lake: oneDNN would emulate bf16, 4x slower
        ("x86_64", True, False, True),  # Zen 4 and 5, Cooper Lake
        ("x86_64", True, True, True),  # Sapphire Rapids and later
        ("aarch64", False, False, True),  # Arm: oneDNN's check is the bf16 extension itself
    ],
)
def test_a_cpu_runs_bf16_natively_only_with_bfloat16_instructions(
    monkeypatch, machine, avx512_bf16, amx, expected
):
    monkeypatch.setattr(precision_module.platform, "machine", lambda: machine)
    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: avx512_bf16)
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: amx)
    monkeypatch.setattr(torch.ops.mkldnn, "_is_mkldnn_bf16_supported", lambda: True)
    assert precision_module.bf16_supported(CPU) is expected
    monkeypatch.setattr(torch.ops.mkldnn, "_is_mkldnn_bf16_supported", lambda: False)
    assert precision_module.bf16_supported(CPU) is False
