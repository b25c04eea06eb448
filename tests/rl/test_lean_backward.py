"""lean_backward: the same gradients as autograd's, bit for bit, from less saved memory."""

import copy

import pytest
import torch

from grue_bench.rl.algorithm import adamw, with_moments_allocated
from grue_bench.rl.frozen_casts import CastOnceLinear
from grue_bench.rl.hparams import PPOArgs
from grue_bench.rl.lean_backward import keep_less_for_backward
from grue_bench.rl.policy import ActorCritic
from grue_bench.rl.ppo import PPO
from grue_bench.rl.rollout import GenerationSettings

from .tiny_lm import tiny_causal, tiny_llama, tiny_seq2seq, word_tokenizer

B, T = 3, 7


def token_ids(lm, seed: int = 1) -> torch.Tensor:
    return torch.randint(4, lm.config.vocab_size, (B, T), generator=torch.Generator().manual_seed(seed))


def loss_of(lm, ids: torch.Tensor, keep: int = T - 2) -> torch.Tensor:
    """A loss on the log-probs of the last ``keep`` positions (as the update's)."""
    if lm.config.is_encoder_decoder:
        logits = lm(input_ids=ids, decoder_input_ids=ids).logits
    else:
        logits = lm(input_ids=ids, attention_mask=torch.ones_like(ids), logits_to_keep=keep).logits
    return torch.log_softmax(logits.float(), -1)[..., 5].sum()


def gradients(lm, ids: torch.Tensor, bf16: bool) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    lm.eval()  # dropout off, as in the update (alg.args.disable_dropout)
    lm.zero_grad(set_to_none=True)
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
        loss = loss_of(lm, ids)
    loss.backward()
    return loss.detach(), {name: p.grad for name, p in lm.named_parameters() if p.grad is not None}


MODELS = {
    "llama": tiny_llama,
    "llama-untied": lambda: tiny_llama(tie=False),
    "gpt2": lambda: tiny_causal(word_tokenizer()),
    "t5": lambda: tiny_seq2seq(word_tokenizer()),
}


@pytest.mark.parametrize("name", sorted(MODELS))
@pytest.mark.parametrize("bf16", [False, True])
def test_the_gradients_are_autograds_bit_for_bit(name, bf16):
    plain = MODELS[name]()
    lean = copy.deepcopy(plain)
    keep_less_for_backward(lean)
    assert type(lean.get_output_embeddings()) is not torch.nn.Linear  # the head is lean
    ids = token_ids(plain)
    loss, expected = gradients(plain, ids, bf16)
    lean_loss, got = gradients(lean, ids, bf16)
    assert torch.equal(loss, lean_loss)
    assert expected.keys() == got.keys() and len(got) == len(list(plain.parameters()))
    for key in expected:
        assert torch.equal(expected[key], got[key]), key


def test_a_llama_training_pass_keeps_half_its_mlp_intermediates():
    def saved_bytes(lm) -> int:
        storages = {}

        def pack(tensor):
            storages[tensor.untyped_storage().data_ptr()] = tensor.untyped_storage().nbytes()
            return tensor

        with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
            loss_of(lm, token_ids(lm), keep=0)  # all positions: the head keeps what it did
        weights = {p.untyped_storage().data_ptr() for p in lm.parameters()}
        return sum(size for ptr, size in storages.items() if ptr not in weights)

    plain = tiny_llama()
    lean = copy.deepcopy(plain)
    keep_less_for_backward(lean)
    mlp_intermediate = B * T * plain.config.intermediate_size * 4  # bytes, float32
    # silu(gate) and the product are no longer kept, in each layer
    assert saved_bytes(plain) - saved_bytes(lean) == 2 * plain.config.num_hidden_layers * mlp_intermediate


def test_copies_stay_lean_and_passes_without_gradients_are_unchanged():
    plain = tiny_llama()
    lean = copy.deepcopy(plain)
    keep_less_for_backward(lean)
    keep_less_for_backward(lean)  # once is enough: a second call changes nothing
    copied = copy.deepcopy(lean)
    assert type(copied.model.layers[0].mlp) is type(lean.model.layers[0].mlp)
    assert type(type(lean.model.layers[0].mlp).__mro__[1]) is type  # one subclass, not two
    assert type(lean.model.layers[0].mlp).__mro__[1] is type(plain.model.layers[0].mlp)
    ids = token_ids(plain)
    with torch.no_grad():
        assert torch.equal(copied(input_ids=ids).logits, plain(input_ids=ids).logits)


def test_frozen_weights_get_no_gradient_and_the_rest_are_unchanged():
    plain = tiny_llama()
    lean = copy.deepcopy(plain)
    keep_less_for_backward(lean)
    for lm in (plain, lean):
        lm.get_output_embeddings().weight.requires_grad_(False)  # tied: the embedding too
        for layer in lm.model.layers:
            layer.mlp.down_proj.weight.requires_grad_(False)
    ids = token_ids(plain)
    _, expected = gradients(plain, ids, bf16=False)
    _, got = gradients(lean, ids, bf16=False)
    assert "lm_head.weight" not in got and "model.layers.0.mlp.down_proj.weight" not in got
    assert expected.keys() == got.keys()
    assert all(torch.equal(expected[key], got[key]) for key in expected)


def test_moments_allocated_at_once_step_as_if_they_had_not_been():
    torch.manual_seed(0)
    lazy_model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 4))
    eager_model = copy.deepcopy(lazy_model)
    lazy = adamw(list(lazy_model.parameters()), 1e-2)
    eager = with_moments_allocated(adamw(list(eager_model.parameters()), 1e-2))
    assert len(eager.state) == 4 and not lazy.state
    assert all(float(state["exp_avg"].abs().sum()) == 0.0 for state in eager.state.values())
    for _ in range(3):
        x = torch.randn(5, 8)
        for model, optimizer in ((lazy_model, lazy), (eager_model, eager)):
            optimizer.zero_grad()
            model(x).square().sum().backward()
            optimizer.step()
    assert all(
        torch.equal(a, b) for a, b in zip(lazy_model.parameters(), eager_model.parameters(), strict=True)
    )
    lazy_state, eager_state = lazy.state_dict(), eager.state_dict()
    assert lazy_state["param_groups"] == eager_state["param_groups"]
    for index, state in lazy_state["state"].items():
        assert all(torch.equal(value, eager_state["state"][index][key]) for key, value in state.items())


def test_a_cpu_algorithm_trains_a_lean_lm_and_has_its_moments_from_the_start():
    tokenizer = word_tokenizer()
    policy = ActorCritic(tiny_causal(tokenizer), "causal")
    settings = GenerationSettings(8, "left", 4, False, {"do_sample": True})
    algorithm = PPO(policy, tokenizer, None, PPOArgs(n_steps=4, batch_size=4), settings, 0.1)
    # the lean head (its own class) over the cast-once linear layer (frozen_casts)
    assert type(algorithm.unwrapped.lm.lm_head).__mro__[1:3] == (CastOnceLinear, torch.nn.Linear)
    trained = [p for p in algorithm.unwrapped.parameters() if p.requires_grad]
    assert len(algorithm.optimizer.state) == len(trained)
    assert all(algorithm.optimizer.state[p]["exp_avg"].shape == p.shape for p in trained)


def test_deepspeed_zero3_weights_take_autograds_way(monkeypatch):
    """ZeRO-3 gathers a partitioned weight only in its own module's call, which the lean MLP
    would bypass: its weights (marked ``ds_id``) keep the MLP's own forward."""
    import grue_bench.rl.lean_backward as lean_backward

    lean = tiny_llama()
    keep_less_for_backward(lean)
    for layer in lean.model.layers:
        layer.mlp.down_proj.weight.ds_id = 0

    def refuse(*args):
        raise AssertionError("GatedDownProjection used")

    monkeypatch.setattr(lean_backward.GatedDownProjection, "apply", refuse)
    loss_of(lean, token_ids(lean)).backward()
    assert lean.model.layers[0].mlp.gate_proj.weight.grad is not None
