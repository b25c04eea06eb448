"""Synthetic rewards and the CommonGen copy penalty, against values worked out by hand."""

import pytest

from grue_bench import plugins
from grue_bench.rewards.base import Observation


def batch(reward_id, generations, prompts=None, **args):
    reward = plugins.REWARDS.get(reward_id)(**args)
    prompts = prompts or [""] * len(generations)
    return reward.batch(prompts, generations, [[] for _ in generations], [{} for _ in generations])


def test_increasing_numbers_by_hand():
    scores = batch(
        "increasing_numbers",
        ["1 2 3 4", "1 2 2 3", "5 4", "a 1 2", "", "1 2 3 4 5 6 7 8 9 10 11 12"],
        min_tokens=20,
    )
    # run / max(len, min_tokens / 2): 4/10, 2/10, 1/10, 0, 0, 12/12
    assert scores == pytest.approx([0.4, 0.2, 0.1, 0.0, 0.0, 1.0])


def test_sentences_with_dates():
    texts = [
        "Born on 12/05/2021 in town",
        "on May 5, 2021",
        "the 5th of nothing",
        "2020-01-31",
        "3 March 1999",
        "call 555 1234",
    ]
    assert batch("sentences_with_dates", texts) == [1.0, 1.0, 0.0, 1.0, 1.0, 0.0]


def test_common_gen_repeat_penalty():
    prompts = ["generate a sentence with: dog frisbee catch."] * 3
    texts = ["The dog catches a frisbee.", "dog frisbee catch", "generate a sentence about a dog"]
    assert batch("common_gen_repeat_penalty", texts, prompts) == [0.0, -1.0, -1.0]


def test_rl4lms_per_step_call_gives_the_reward_only_when_done():
    reward = plugins.REWARDS.get("increasing_numbers")(min_tokens=4)
    obs = Observation(prompt_or_input_text="", context_text="1 2 3 4")
    assert reward(obs, 0, obs, False) == 0.0
    assert reward(obs, 0, obs, True) == 1.0


def test_rouge_rewards_score_the_first_reference_unless_told_as_rl4lms():
    """RL4LMs's ``rouge`` reward defaults to ``use_single_ref=True``; ``rouge_combined`` always uses one."""
    generation, references = ["the cat sat on a mat"], [["a dog barked", "the cat sat on a mat"]]

    def reward(reward_id, **args):
        return plugins.REWARDS.get(reward_id)(**args).batch([""], generation, references, [{}])

    # Against "a dog barked" only "a" is shared: P = 1/6, R = 1/3, F = 2/9; ROUGE-2 is 0.
    assert reward("rouge") == pytest.approx([2 / 9])
    assert reward("rouge", use_single_ref=False) == [1.0]
    assert reward("rouge_combined") == pytest.approx([(2 / 9 + 0 + 2 / 9) / 3])
    assert reward("rouge_combined", use_single_ref=False) == [1.0]
