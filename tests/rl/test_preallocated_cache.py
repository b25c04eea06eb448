"""The preallocated key/value cache (rl/preallocated_cache.py): the same beams, tokens, scores and
log-probs as transformers' own cache, bit for bit, without copying the cache to grow it or
reordering a beam search's prompt."""

from __future__ import annotations

import contextlib

import pytest
import torch
from transformers.cache_utils import DynamicCache, DynamicLayer

from grue_bench.models.attention import use_cpu_attention
from grue_bench.rl import rollout, sampler
from grue_bench.rl.kv_cache import cache_keyword
from grue_bench.rl.preallocated_cache import PreallocatedLayer, preallocate
from tests.rl.tiny_lm import tiny_llama

BEAMS = 3


def beam_search(lm, bf16: bool, new_tokens: int = 7):
    """Sequences, their scores and every step's scores from ``generate``'s beam search over
    left-padded prompts, its cache prefilled once per prompt (``_prompt_cache_for``)."""
    ids = torch.tensor([[5, 17, 33, 2, 8, 31, 7], [0, 0, 9, 12, 37, 3, 22], [0, 0, 0, 0, 6, 14, 29]])
    mask = (torch.arange(ids.size(1)) >= (ids == 0).sum(1, keepdim=True)).long()
    autocast = torch.autocast("cpu", dtype=torch.bfloat16) if bf16 else contextlib.nullcontext()
    with autocast, torch.no_grad():
        cache = rollout._prompt_cache_for(lm, ids, mask, BEAMS, new_tokens)
        out = lm.generate(
            input_ids=ids,
            attention_mask=mask,
            **{cache_keyword(lm): cache},
            num_beams=BEAMS,
            num_return_sequences=BEAMS,
            do_sample=False,
            max_new_tokens=new_tokens,
            pad_token_id=0,
            eos_token_id=[39],
            output_scores=True,
            return_dict_in_generate=True,
        )
    layers = {type(layer) for layer in cache.layers}
    return out.sequences, out.sequences_scores, torch.stack(out.scores), layers


@pytest.mark.parametrize("bf16", [False, True])
@pytest.mark.parametrize("cpu_attention", [False, True])
def test_beam_search_is_the_same_bit_for_bit(monkeypatch, bf16: bool, cpu_attention: bool) -> None:
    lm = tiny_llama().eval()
    if cpu_attention:  # decoding steps through the key/value heads, on the cache's views
        use_cpu_attention(lm)
    orders = []
    reorder = PreallocatedLayer.reorder_cache

    def spied(layer, index):
        orders.append(index)
        reorder(layer, index)

    monkeypatch.setattr(PreallocatedLayer, "reorder_cache", spied)
    ours = beam_search(lm, bf16)
    monkeypatch.setattr(rollout, "preallocate", lambda cache, room: None)  # transformers' own cache
    theirs = beam_search(lm, bf16)
    assert ours[3] == {PreallocatedLayer} and theirs[3] == {DynamicLayer}
    for mine, reference in zip(ours[:3], theirs[:3], strict=True):
        assert torch.equal(mine, reference)
    assert any(not torch.equal(idx, torch.arange(len(idx))) for idx in orders)  # beams were reordered


@pytest.mark.parametrize("bf16", [False, True])
def test_sampling_draws_the_same_tokens_and_log_probs(monkeypatch, bf16: bool) -> None:
    lm = tiny_llama().eval()
    use_cpu_attention(lm)
    ids = torch.tensor([[5, 17, 33, 2, 8], [0, 0, 9, 12, 37], [5, 17, 33, 2, 8]])  # a repeated prompt
    mask = (ids != 0).long()
    autocast = torch.autocast("cpu", dtype=torch.bfloat16) if bf16 else contextlib.nullcontext()

    def drawn():
        torch.manual_seed(0)
        with autocast, torch.no_grad():
            out = sampler.sample(lm, "causal", ids, mask, {"do_sample": True, "top_k": 0}, 9, [], 0)
        return out.tokens, out.logprobs

    grown = []
    update = PreallocatedLayer.update

    def counted(layer, *args, **kwargs):
        grown.append(1)
        return update(layer, *args, **kwargs)

    monkeypatch.setattr(PreallocatedLayer, "update", counted)
    ours = drawn()
    monkeypatch.setattr(sampler, "preallocate", lambda cache, room: None)  # transformers' own cache
    theirs = drawn()
    assert torch.equal(ours[0], theirs[0]) and torch.equal(ours[1], theirs[1])
    assert ours[0].shape == (3, 9) and len(grown) == 8 * 2  # 8 decoding steps x 2 layers, in place


def layer_pair(prompt: torch.Tensor, room: int) -> tuple[PreallocatedLayer, DynamicLayer]:
    reference = DynamicLayer()
    reference.update(prompt, -prompt)
    return PreallocatedLayer(prompt.clone(), -prompt, room), reference


def test_a_reorder_moves_only_what_follows_the_prompt_and_a_step_past_the_room_grows() -> None:
    torch.manual_seed(0)
    prompt = torch.randn(2, 1, 4, 3).repeat_interleave(BEAMS, 0)  # 2 prompts x 3 beams, 4 positions
    ours, theirs = layer_pair(prompt, room=2)
    prompt_buffer = ours.keys.untyped_storage().data_ptr()
    for step, order in enumerate(([2, 0, 0, 5, 3, 4], [1, 1, 2, 3, 5, 5], [0, 2, 1, 4, 4, 3])):
        states = torch.randn(6, 1, 1, 3)
        for layer in (ours, theirs):
            layer.update(states, -states)
            layer.reorder_cache(torch.tensor(order))
        assert torch.equal(ours.keys, theirs.keys) and torch.equal(ours.values, theirs.values)
        assert ours.get_seq_length() == theirs.get_seq_length() == 5 + step
    # two steps fitted the room in place; the third grew the buffer
    assert ours.keys.untyped_storage().data_ptr() != prompt_buffer
    ours.crop(-2)
    theirs.crop(-2)
    assert torch.equal(ours.keys, theirs.keys) and ours.get_seq_length() == 5


def test_only_a_filled_plain_layer_is_shared_and_repeating_after_it_is_refused() -> None:
    cache = DynamicCache()
    cache.layers = [DynamicLayer(), DynamicLayer()]
    cache.layers[0].update(torch.ones(3, 1, 2, 4), torch.ones(3, 1, 2, 4))
    preallocate(cache, room=5)
    assert type(cache.layers[0]) is PreallocatedLayer and type(cache.layers[1]) is DynamicLayer
    with pytest.raises(NotImplementedError, match="repeated for its beams before"):
        cache.layers[0].batch_repeat_interleave(2)
