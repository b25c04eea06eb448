"""CPU attention (models/attention.py): decoding through the key/value heads gives ``sdpa``'s numbers;
a bf16 training pass attends in float32."""

from __future__ import annotations

import pytest
import torch
from transformers import (
    GPT2Config,
    GPT2LMHeadModel,
    LlamaForCausalLM,
    T5Config,
    T5ForConditionalGeneration,
)

from grue_bench.models import attention
from grue_bench.models.attention import NAME, use_cpu_attention
from tests.rl.tiny_lm import tiny_llama


def grouped_llama() -> LlamaForCausalLM:
    """The shared tiny Llama, 2 query heads per key/value head, in eval mode."""
    return tiny_llama().eval()


def prompts(padded: bool) -> dict[str, torch.Tensor]:
    """Two prompts, left-padded to one width (``padded``) or of equal length (no mask needed)."""
    ids = torch.tensor([[5, 17, 33, 2, 8, 31], [0, 0, 9, 12, 37, 3]])
    mask = torch.ones_like(ids)
    if padded:
        mask[1, :2] = 0
    else:
        ids[1, :2] = torch.tensor([4, 6])
    return {"input_ids": ids, "attention_mask": mask}


def decode(model, batch, **kwargs) -> tuple[torch.Tensor, torch.Tensor]:
    """Greedy or beam tokens and the scores of each decoding step."""
    with torch.no_grad():
        settings = {"max_new_tokens": 8, "pad_token_id": 0, "output_scores": True, **kwargs}
        out = model.generate(**batch, return_dict_in_generate=True, **settings)
    return out.sequences, torch.stack(out.scores)


@pytest.mark.parametrize("padded", [True, False])
@pytest.mark.parametrize("beams", [1, 3])
def test_decoding_gives_sdpa_numbers(padded: bool, beams: int) -> None:
    model, batch = grouped_llama(), prompts(padded)
    sequences, scores = decode(model, batch, do_sample=False, num_beams=beams)
    use_cpu_attention(model)
    assert model.config._attn_implementation == NAME
    packed_sequences, packed_scores = decode(model, batch, do_sample=False, num_beams=beams)
    assert torch.equal(sequences, packed_sequences)
    assert torch.allclose(scores, packed_scores, atol=1e-5, rtol=1e-5)


def test_decoding_steps_take_the_packed_path_and_prefill_stays_sdpa(monkeypatch) -> None:
    model, batch = grouped_llama(), prompts(padded=False)
    use_cpu_attention(model)
    sdpa_calls, sdpa = [], attention.sdpa_attention_forward
    counted = lambda *args, **kwargs: sdpa_calls.append(1) or sdpa(*args, **kwargs)  # noqa: E731
    monkeypatch.setattr(attention, "sdpa_attention_forward", counted)
    decode(model, batch, do_sample=False)
    assert len(sdpa_calls) == 2  # the prompt's pass, once per layer; the 7 decoding steps are packed


def test_bf16_decoding_close_to_sdpa() -> None:
    model, batch = grouped_llama(), prompts(padded=True)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        _, scores = decode(model, batch, do_sample=False)
        use_cpu_attention(model)
        _, packed_scores = decode(model, batch, do_sample=False)
    assert torch.allclose(scores, packed_scores, atol=0.05)


def test_other_attention_implementations_are_left_alone() -> None:
    config = GPT2Config(n_layer=1, n_head=2, n_embd=16, vocab_size=50, attn_implementation="eager")
    eager = GPT2LMHeadModel(config)
    use_cpu_attention(eager)
    assert eager.config._attn_implementation == "eager"


def test_a_seq2seq_model_decodes_as_before() -> None:
    """T5 hands its position bias (a tensor) to the attention: its calls stay ``sdpa``'s."""
    torch.manual_seed(0)
    config = T5Config(
        vocab_size=40, d_model=16, d_kv=8, d_ff=32, num_layers=1, num_heads=2, decoder_start_token_id=0
    )
    model, batch = T5ForConditionalGeneration(config).eval(), prompts(padded=True)
    sequences, scores = decode(model, batch, do_sample=False, num_beams=2)
    use_cpu_attention(model)
    packed_sequences, packed_scores = decode(model, batch, do_sample=False, num_beams=2)
    assert torch.equal(sequences, packed_sequences) and torch.equal(scores, packed_scores)


@pytest.mark.parametrize("trained", ["all", "v_proj"])  # v_proj alone: a LoRA on values, the query frozen
def test_a_bf16_training_pass_attends_in_float32_and_a_scoring_pass_stays_bf16(monkeypatch, trained) -> None:
    """Under bf16 autocast Llama hands ``sdpa`` a float32 query (its rotary embedding) that autocast
    casts down: what counts is the type ``sdpa`` computes in, its output's."""
    model, batch = grouped_llama().train(), prompts(padded=True)
    if trained == "v_proj":
        for name, parameter in model.named_parameters():
            parameter.requires_grad_("v_proj" in name)
    use_cpu_attention(model)
    computed, sdpa = [], torch.nn.functional.scaled_dot_product_attention
    recorded = lambda *args, **kwargs: computed.append(sdpa(*args, **kwargs)) or computed[-1]  # noqa: E731
    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention", recorded)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        logits = model(**batch).logits
        assert {out.dtype for out in computed} == {torch.float32} and logits.dtype == torch.bfloat16
        logits.float().logsumexp(-1).mean().backward()  # the backward runs through float32 attention
        computed.clear()
        with torch.no_grad():
            model(**batch)
    assert {out.dtype for out in computed} == {torch.bfloat16}
    trained = [p for p in model.parameters() if p.requires_grad]
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in trained)


def test_a_bf16_training_pass_is_closer_to_float32_than_bf16_attention() -> None:
    """Attention in float32 keeps the bf16 pass's gradients near float32's."""

    def query_gradient(dtype_of_attention: str) -> torch.Tensor:
        model, batch = grouped_llama().train(), prompts(padded=True)
        if dtype_of_attention == "float32":
            use_cpu_attention(model)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=dtype_of_attention != "none"):
            model(**batch).logits.float().logsumexp(-1).mean().backward()
        return model.model.layers[0].self_attn.q_proj.weight.grad

    exact, in_bf16, in_float32 = (query_gradient(kind) for kind in ("none", "bf16", "float32"))
    assert (in_float32 - exact).norm() < (in_bf16 - exact).norm()


def test_a_bf16_training_pass_with_a_position_bias_stays_sdpa_s() -> None:
    """T5 adds its position bias (bf16 under autocast) to the mask: its training pass is ``sdpa``'s,
    whose types agree, as before."""
    torch.manual_seed(0)
    config = T5Config(
        vocab_size=40, d_model=16, d_kv=8, d_ff=32, num_layers=1, num_heads=2, decoder_start_token_id=0
    )
    model, batch = T5ForConditionalGeneration(config).train(), prompts(padded=True)
    use_cpu_attention(model)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = model(**batch, labels=batch["input_ids"]).loss
    loss.backward()
    assert torch.isfinite(loss) and model.shared.weight.grad is not None
