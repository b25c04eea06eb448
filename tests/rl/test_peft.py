"""PEFT adapters (``alg.policy.args.peft``, ``alg.training_args.peft``): only the adapter and the
value head train, the reference is the base with the adapter disabled, checkpoints restore the
adapter exactly, and the saved model loads with peft (or is plain, merged)."""

import random

import pytest
import torch
from peft import AutoPeftModelForCausalLM, AutoPeftModelForSeq2SeqLM, PeftModel
from pydantic import ValidationError
from transformers import AutoModelForCausalLM, AutoModelForSeq2SeqLM

from grue_bench.data import Sample
from grue_bench.errors import GrueError
from grue_bench.rl.a2c import A2C
from grue_bench.rl.adapters import add_adapter, is_adapted, merged
from grue_bench.rl.checkpoint import load_checkpoint, save_checkpoint
from grue_bench.rl.grpo import GRPO
from grue_bench.rl.hparams import (
    A2CArgs,
    GRPOArgs,
    MaskablePolicyArgs,
    NLPOArgs,
    PeftSettings,
    PolicyArgs,
    PPOArgs,
    RLOOArgs,
    SupervisedArgs,
    TRPOArgs,
)
from grue_bench.rl.logprobs import token_logprobs
from grue_bench.rl.nlpo import NLPO
from grue_bench.rl.policy import ActorCritic, response_logits_and_hidden
from grue_bench.rl.ppo import PPO
from grue_bench.rl.rloo import RLOO
from grue_bench.rl.rollout import GenerationSettings
from grue_bench.rl.supervised import Supervised
from grue_bench.rl.trainer import Trainer
from grue_bench.rl.trpo import TRPO
from grue_bench.schema import problems_from

from .tiny_lm import tiny_causal, tiny_seq2seq, word_tokenizer

SETTINGS = GenerationSettings(8, "left", 5, False, {"do_sample": True, "top_k": 0})
POOL = [Sample(id=str(i), prompt_or_input_text=f"{i} {i + 1}", references=[f"{i + 2}"]) for i in range(12)]
LORA = PeftSettings(r=4, lora_alpha=8, lora_dropout=0.0)
BUILD = {"causal": tiny_causal, "seq2seq": tiny_seq2seq}
ARGS = {
    PPO: PPOArgs(n_steps=16, batch_size=8, n_epochs=2, learning_rate=1e-2),
    NLPO: NLPOArgs(n_steps=16, batch_size=8, n_epochs=2, learning_rate=1e-2),
    GRPO: GRPOArgs(n_steps=8, batch_size=8, group_size=2, learning_rate=1e-2),
    RLOO: RLOOArgs(n_steps=8, batch_size=8, group_size=2, learning_rate=1e-2),
    A2C: A2CArgs(n_steps=16, learning_rate=1e-2),
    TRPO: TRPOArgs(n_steps=16, batch_size=8, learning_rate=1e-2, n_critic_updates=2),
}


class CountReward:
    def batch(self, prompts, generations, references, meta_infos):
        return [float(len(g.split())) for g in generations]


def _adapted(model_type: str, critic: str = "shared", settings: PeftSettings = LORA):
    torch.manual_seed(0)
    tokenizer = word_tokenizer()
    lm = add_adapter(BUILD[model_type](tokenizer), model_type, settings, key="alg.policy.args.peft")
    return tokenizer, ActorCritic(lm, model_type, critic=critic)


def _algorithm(cls, model_type: str, critic: str = "shared"):
    tokenizer, policy = _adapted(model_type, critic)
    extra = {"mask_args": MaskablePolicyArgs(top_mask=0.5, min_tokens_to_keep=2)} if cls is NLPO else {}
    return cls(policy, tokenizer, CountReward(), ARGS[cls], SETTINGS, kl_coeff=0.1, **extra)


def _snapshot(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {name: param.detach().clone() for name, param in module.named_parameters()}


def _changed(before: dict[str, torch.Tensor], module: torch.nn.Module) -> set[str]:
    return {name for name, param in module.named_parameters() if not torch.equal(before[name], param)}


def _untimed(stats: dict[str, float]) -> dict[str, float]:
    return {key: value for key, value in stats.items() if not key.startswith("time/")}


def _is_trained_part(name: str) -> bool:
    return "lora_" in name or name.startswith("value_head.")


@pytest.mark.parametrize("model_type", ["causal", "seq2seq"])
@pytest.mark.parametrize("cls", list(ARGS))
def test_an_update_moves_the_adapter_and_value_head_only(cls, model_type):
    algorithm = _algorithm(cls, model_type)
    policy = algorithm.unwrapped
    before = _snapshot(policy)
    trainable = {id(p) for p in policy.parameters() if p.requires_grad}
    assert trainable == {id(p) for name, p in policy.named_parameters() if _is_trained_part(name)}
    optimized = {id(p) for group in algorithm.optimizer.param_groups for p in group["params"]}
    assert optimized == trainable or (cls is TRPO and optimized < trainable)  # TRPO's: the critic
    algorithm.step(POOL, random.Random(0))
    changed = _changed(before, policy)
    assert changed and all(_is_trained_part(name) for name in changed)  # base bit-identical
    assert any("lora_" in name for name in changed)
    assert algorithm.ref_lm is policy.lm  # no second copy of the weights


def test_a_separate_critic_trains_its_own_adapter_on_the_shared_base():
    algorithm = _algorithm(PPO, "causal", critic="separate")
    policy = algorithm.unwrapped
    base = dict(policy.lm.named_parameters())
    critic = dict(policy.critic_lm.named_parameters())
    frozen = [name for name, param in base.items() if not param.requires_grad]
    assert frozen and all(critic[name] is base[name] for name in frozen)
    before = _snapshot(policy)
    algorithm.step(POOL, random.Random(0))
    changed = _changed(before, policy)
    assert any(name.startswith("critic_lm.") and "lora_" in name for name in changed)
    assert all(_is_trained_part(name) for name in changed)


@pytest.mark.parametrize("model_type", ["causal", "seq2seq"])
def test_the_reference_log_probs_are_the_base_models(model_type):
    algorithm = _algorithm(PPO, model_type)
    algorithm.step(POOL, random.Random(0))  # the adapter has moved off zero
    base = BUILD[model_type](algorithm.collector.tokenizer).eval()  # the same weights, no adapter
    episodes = algorithm.collector.collect(POOL[:4])
    logits, _ = response_logits_and_hidden(base, episodes.tokens, model_type, False)
    expected = token_logprobs(logits, episodes.tokens.response_ids)
    mask = episodes.tokens.response_mask.bool()
    assert torch.allclose(episodes.ref_logprobs[mask], expected[mask], atol=1e-5)
    assert not torch.allclose(episodes.logprobs[mask], expected[mask], atol=1e-3)


def test_nlpo_masking_model_is_an_adapter_copy_refreshed_in_place():
    algorithm = _algorithm(NLPO, "causal")
    policy_lm, mask_lm = algorithm.unwrapped.lm, algorithm.masker.model
    base = dict(policy_lm.named_parameters())
    shared = [name for name, param in mask_lm.named_parameters() if param is base[name]]
    assert shared and all("lora_" not in name for name in shared)
    algorithm.step(POOL, random.Random(0))
    lora = [name for name in base if "lora_" in name]
    assert not all(torch.equal(base[n], dict(mask_lm.named_parameters())[n]) for n in lora)
    algorithm.refresh_mask_model()
    assert all(torch.equal(base[n], dict(mask_lm.named_parameters())[n]) for n in lora)


@pytest.mark.parametrize("cls", [PPO, NLPO])
def test_a_checkpoint_holds_the_adapter_and_value_head_and_resumes_exactly(cls, tmp_path):
    algorithm = _algorithm(cls, "causal")
    algorithm.step(POOL, random.Random(0))
    save_checkpoint(tmp_path / "checkpoint", algorithm, random.Random(5).getstate())
    saved = torch.load(tmp_path / "checkpoint" / "state.pt", weights_only=True)
    assert all(_is_trained_part(name) for name in saved["policy"])
    if cls is NLPO:
        assert saved["mask_model"] and all("lora_" in name for name in saved["mask_model"])
    expected = _untimed(algorithm.step(POOL, random.Random(1)))

    resumed = _algorithm(cls, "causal")
    load_checkpoint(tmp_path / "checkpoint", resumed)
    assert _untimed(resumed.step(POOL, random.Random(1))) == expected
    after = dict(algorithm.unwrapped.named_parameters())
    assert all(torch.equal(after[name], param) for name, param in resumed.unwrapped.named_parameters())


@pytest.mark.parametrize("model_type", ["causal", "seq2seq"])
def test_the_saved_model_loads_with_peft_and_merged_weights_load_plain(model_type, tmp_path):
    algorithm = _algorithm(PPO, model_type)
    algorithm.step(POOL, random.Random(0))
    lm = algorithm.unwrapped.lm.eval()
    inputs = {"input_ids": torch.tensor([[3, 4, 5]])}
    if model_type == "seq2seq":
        inputs["decoder_input_ids"] = torch.tensor([[0, 6]])
    with torch.no_grad():
        expected = lm(**inputs).logits

    base_dir, adapter_dir, merged_dir = tmp_path / "base", tmp_path / "adapter", tmp_path / "merged"
    torch.manual_seed(1)
    BUILD[model_type](algorithm.collector.tokenizer).save_pretrained(base_dir)
    lm.base_model.model.config.name_or_path = str(base_dir)  # where a run's base comes from
    lm.peft_config["default"].base_model_name_or_path = str(base_dir)
    lm.save_pretrained(adapter_dir)
    auto_peft = AutoPeftModelForCausalLM if model_type == "causal" else AutoPeftModelForSeq2SeqLM
    auto = AutoModelForCausalLM if model_type == "causal" else AutoModelForSeq2SeqLM
    loaded = auto_peft.from_pretrained(adapter_dir).eval()
    assert isinstance(loaded, PeftModel)
    merged(lm).save_pretrained(merged_dir)
    plain = auto.from_pretrained(merged_dir).eval()
    assert not (merged_dir / "adapter_config.json").exists()
    with torch.no_grad():
        assert torch.allclose(loaded(**inputs).logits, expected, atol=1e-5)
        assert torch.allclose(plain(**inputs).logits, expected, atol=1e-4)


@pytest.mark.parametrize("model_type", ["causal", "seq2seq"])
def test_supervised_fitting_with_an_adapter_trains_the_adapter_only(model_type):
    torch.manual_seed(0)
    tokenizer = word_tokenizer()
    lm = add_adapter(BUILD[model_type](tokenizer), model_type, LORA, key="alg.training_args.peft")
    before = _snapshot(lm)
    args = SupervisedArgs(per_device_train_batch_size=4, learning_rate=1e-2, peft={"r": 4})
    trainer = Supervised(lm, tokenizer, model_type, args, 8, 4)
    Trainer(trainer, POOL, random.Random(0)).fit(trainer.n_steps(POOL))
    changed = _changed(before, trainer.model)
    assert changed and all("lora_" in name for name in changed)
    assert is_adapted(trainer.model)


def _problems(data: dict) -> list[str]:
    with pytest.raises(ValidationError) as caught:
        PolicyArgs.model_validate({"peft": data})
    return [p.render(None) for p in problems_from(caught.value, "alg.policy.args")]


def test_a_bad_peft_key_is_named_with_its_path_and_fix():
    assert _problems({"r": 4, "lora_alpah": 8}) == [
        "alg.policy.args.peft.lora_alpah: unknown key\n  fix: remove it or check its spelling"
    ]
    assert _problems({"r": "four"})[0].startswith("alg.policy.args.peft.r: Input should be a valid integer")
    assert _problems({"bias": "some"})[0].startswith("alg.policy.args.peft.bias: Input should be 'none'")
    assert "did you mean 'LORA'?" in _problems({"peft_type": "LORAA"})[0]
    assert "prompt-learning" in _problems({"peft_type": "PREFIX_TUNING"})[0]
    assert "'task_type' is set by GRUE Bench" in _problems({"task_type": "CAUSAL_LM"})[0]


def test_target_modules_the_model_lacks_are_a_grue_error_naming_the_key():
    tokenizer = word_tokenizer()
    with pytest.raises(GrueError) as caught:
        settings = PeftSettings(target_modules=["q_proj"])
        add_adapter(tiny_causal(tokenizer), "causal", settings, key="alg.policy.args.peft")
    assert caught.value.problems[0].key == "alg.policy.args.peft"
    assert "target_modules" in caught.value.problems[0].fix


def test_another_adapter_method_trains_too():
    ia3 = PeftSettings(peft_type="IA3", target_modules=["c_attn"], feedforward_modules=[])
    tokenizer, policy = _adapted("causal", settings=ia3)
    algorithm = PPO(policy, tokenizer, CountReward(), ARGS[PPO], SETTINGS, kl_coeff=0.1)
    before = _snapshot(policy)
    algorithm.step(POOL, random.Random(0))
    changed = _changed(before, policy)
    assert any("ia3_" in name for name in changed)
    assert all("ia3_" in name or name.startswith("value_head.") for name in changed)
