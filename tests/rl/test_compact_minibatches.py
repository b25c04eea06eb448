"""A minibatch forwards only what its trained transitions need: the rows that hold them, the
prompt columns that are not padding in every one of those rows, and the steps up to the last
trained one. The update is the same as on the whole rows, to float rounding."""

import random
from dataclasses import replace
from types import SimpleNamespace

import pytest
import torch

from grue_bench.data import Sample
from grue_bench.rl.batch import Rollout
from grue_bench.rl.grpo import GRPO
from grue_bench.rl.hparams import GRPOArgs, PPOArgs
from grue_bench.rl.policy import ActorCritic
from grue_bench.rl.ppo import PPO
from grue_bench.rl.rollout import GenerationSettings

from .hand_made import hand_made_episodes
from .tiny_lm import tiny_causal, tiny_seq2seq, word_tokenizer

# EOS ends an episode: responses of several lengths
SETTINGS = GenerationSettings(8, "left", 6, True, {"do_sample": True, "top_k": 0})
POOL = [Sample(str(i), " ".join(["the", "cat", "runs", "a", "dog"][: 1 + i % 5]), []) for i in range(10)]


class CountReward:
    def batch(self, prompts, generations, references, meta_infos):
        return [float(len(g.split())) for g in generations]


def _rollout_with_prompts(prompt_lengths: list[int], mask: torch.Tensor) -> Rollout:
    """A hand-made rollout whose rows have left-padded prompts of these lengths."""
    rollout = hand_made_episodes([0.0] * len(prompt_lengths), *[torch.zeros_like(mask)] * 2, mask)
    rollout = rollout.to_rollout(torch.arange(mask.numel(), dtype=torch.float).view_as(mask))
    width = max(prompt_lengths)
    prompt_mask = torch.tensor([[0] * (width - n) + [1] * n for n in prompt_lengths])
    prompt_ids = prompt_mask * torch.arange(1, width + 1)
    return Rollout(**{**vars(rollout), "prompt_ids": prompt_ids, "prompt_mask": prompt_mask})


def test_a_minibatch_keeps_its_rows_prompt_columns_and_steps_up_to_the_last_trained_one():
    mask = torch.ones(3, 5)
    rollout = _rollout_with_prompts([4, 2, 1], mask)
    minibatch = rollout.transitions(torch.tensor([1, 2, 2]), torch.tensor([0, 2, 1]))
    assert minibatch.prompt_ids.tolist() == [[3, 4], [0, 4]]  # column 1-2 is padding in both rows
    assert minibatch.prompt_mask.tolist() == [[1, 1], [0, 1]]
    assert minibatch.loss_mask.tolist() == [[1.0, 0.0, 0.0], [0.0, 1.0, 1.0]]
    assert minibatch.advantages.tolist() == [[5.0, 6.0, 7.0], [10.0, 11.0, 12.0]]
    assert minibatch.response_mask.shape == (2, 3)


def test_whole_episodes_keep_every_step_up_to_the_longest_response():
    mask = torch.tensor([[1.0, 1, 0, 0], [1, 0, 0, 0], [1, 1, 1, 1]])
    rollout = _rollout_with_prompts([2, 2, 2], mask)
    assert rollout.select(torch.tensor([0, 1])).response_mask.tolist() == [[1.0, 1.0], [1.0, 0.0]]
    assert rollout.select(torch.tensor([2])).response_mask.shape == (1, 4)


def _trained(cls, args, model_type: str, compact: bool, monkeypatch):
    """One update of a fresh policy (seed 0) on the rollout its first iteration collects: the
    statistics, how far the parameters moved, and the rollout's and each minibatch's width (prompt, steps)."""
    tokenizer = word_tokenizer()
    lm = (tiny_causal if model_type == "causal" else tiny_seq2seq)(tokenizer, seed=0)
    algorithm = cls(ActorCritic(lm, model_type), tokenizer, CountReward(), args, SETTINGS, 0.1, n_envs=4)
    torch.manual_seed(0)
    episodes = algorithm.rollout_episodes(algorithm.collect(POOL, random.Random(0)))
    ended = episodes.tokens.response_mask.clone()
    ended[::2, 3:] = 0.0  # every other episode ends at its third token
    rollout = algorithm.credit(replace(episodes, tokens=replace(episodes.tokens, response_mask=ended)))
    before = [param.detach().clone() for param in algorithm.unwrapped.parameters()]
    if not compact:
        monkeypatch.setattr(Rollout, "compact", lambda self: self)
    widths, loss = [], algorithm.loss

    def measured_loss(mb):
        widths.append((mb.prompt_ids.size(1), mb.response_ids.size(1)))
        return loss(mb)

    algorithm.loss = measured_loss
    algorithm.policy.eval()
    stats = algorithm.update(rollout)
    monkeypatch.undo()
    moved = [
        param.detach() - start for param, start in zip(algorithm.unwrapped.parameters(), before, strict=True)
    ]
    return (
        stats,
        torch.cat([m.flatten() for m in moved]),
        (rollout.prompt_ids.size(1), rollout.response_ids.size(1)),
        widths,
    )


@pytest.mark.parametrize("model_type", ["causal", "seq2seq"])
@pytest.mark.parametrize(
    ("cls", "args"),
    [
        (PPO, PPOArgs(n_steps=6, batch_size=5, n_epochs=2, learning_rate=1e-3)),
        (GRPO, GRPOArgs(n_steps=8, batch_size=3, n_epochs=2, group_size=4, learning_rate=1e-3)),
    ],
)
def test_the_update_on_compact_minibatches_is_the_update_on_whole_rows(cls, args, model_type, monkeypatch):
    stats, moved, full, widths = _trained(cls, args, model_type, True, monkeypatch)
    whole_stats, whole_moved, _, whole_widths = _trained(cls, args, model_type, False, monkeypatch)
    assert set(whole_widths) == {full}
    assert any(prompt < full[0] or steps < full[1] for prompt, steps in widths)
    # abs: the policy loss is a mean of terms of order 1 (whitened advantages) that nearly cancel
    assert stats == pytest.approx(whole_stats, rel=1e-6, abs=1e-7)
    # Adam divides each gradient by its own running scale: an element whose gradient is all but 0
    # moves by a step of the learning rate's size either way, so its rounding shows in the weights
    assert torch.linalg.norm(moved - whole_moved) <= 1e-5 * torch.linalg.norm(whole_moved)


def test_minibatches_of_whole_episodes_forward_each_row_once_an_epoch():
    mask = torch.tensor([[1.0, 1, 1, 0], [1, 0, 0, 0], [1, 1, 1, 1], [1, 1, 0, 0], [1, 1, 1, 0]])
    rollout = _rollout_with_prompts([2, 2, 2, 2, 2], mask)  # 13 transitions in 5 episodes
    rows_forwarded = {}
    for unit in ("episodes", "transitions"):
        drawn = SimpleNamespace(
            args=PPOArgs(batch_size=4, minibatch_by=unit), shuffle_rng=torch.Generator().manual_seed(0)
        )
        batches = PPO.minibatches(drawn, rollout)
        counts = [int(mb.loss_mask.sum()) for mb in batches]
        assert sum(counts) == 13
        # the hand-made advantages number the cells: row r starts at 4r
        rows = [[int(a) // 4 for a in mb.advantages[:, 0]] for mb in batches]
        rows_forwarded[unit] = sum(map(len, rows))
        if unit == "episodes":
            order = [row for its_rows in rows for row in its_rows]
            assert sorted(order) == [0, 1, 2, 3, 4] != order  # each once, shuffled
            assert all(count >= 4 for count in counts[:-1])
            for mb, its_rows in zip(batches, rows, strict=True):  # every step of its rows is trained
                assert torch.equal(mb.loss_mask, mask[its_rows][:, : mb.loss_mask.size(1)])
    assert rows_forwarded["transitions"] > rows_forwarded["episodes"]
