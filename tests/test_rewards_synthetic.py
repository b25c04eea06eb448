"""Synthetic rewards and the CommonGen copy penalty, against values worked out by hand."""

import pytest
from conftest import NEEDS_WORDNET

from grue_bench import plugins
from grue_bench.errors import GrueError
from grue_bench.rewards.base import Observation


def batch(reward_id, generations, prompts=None, **args):
    reward = plugins.REWARDS.get(reward_id)(**args)
    prompts = prompts or [""] * len(generations)
    return reward.batch(prompts, generations, [[] for _ in generations], [{} for _ in generations])


def test_increasing_numbers_by_hand():
    """RL4LMs's count: the increasing run among the numbers alone (words skipped), over the
    number of all tokens or min_tokens / 2, whichever is larger."""
    scores = batch(
        "increasing_numbers",
        ["1 2 3 4", "1 2 2 3", "5 4", "a 1 2", "1 x 2 y 3 z", "", "no numbers", "1 2 3 4 5 6 7 8 9 10 11 12"],
        min_tokens=20,
    )
    # 4/10, 2/10, 1/10, 2/10 (a skipped), 3/max(6, 10), 0, 0, 12/12
    assert scores == pytest.approx([0.4, 0.2, 0.1, 0.2, 0.3, 0.0, 0.0, 1.0])
    # min_tokens / 2 below the text's length: the text's length divides
    assert batch("increasing_numbers", ["1 x 2 y 3 z"], min_tokens=4) == pytest.approx([3 / 6])


def test_sentences_with_dates_are_rl4lms_iso_dates():
    """RL4LMs's pattern \\d{4}-\\d{2}-\\d{2}, searched anywhere: other date formats score 0."""
    texts = [
        "Born on 2021-05-12 in town",
        "12021-05-123",  # found inside longer digit runs too, as by re.search in RL4LMs
        "on May 5, 2021",
        "Born on 12/05/2021",
        "2021-5-12",
        "call 555 1234",
    ]
    assert batch("sentences_with_dates", texts) == [1.0, 1.0, 0.0, 0.0, 0.0, 0.0]


@pytest.mark.parametrize("reward_id", ["common_gen_repeat_penalty", "common_gen_repeat_penalty_batched"])
def test_common_gen_repeat_penalty_as_rl4lms(reward_id):
    """Concepts are the prompt after the prefix less its last character; substrings count."""
    prompts = ["generate a sentence with: dog frisbee catch."] * 7
    texts = [
        "The dog catches a frisbee.",  # 0
        "A DOG FRISBEE CATCH game",  # concept text, any case: -1
        "generate a sentence about a dog",  # -1
        "Two sentences about a dog.",  # "sentence" inside "sentences": -1
        "They regenerated the dog.",  # "generate" inside "regenerated": -1
        "dog frisbee",  # part of the concept text: 0
        "",  # 0
    ]
    assert batch(reward_id, texts, prompts) == [0.0, -1.0, -1.0, -1.0, -1.0, 0.0, 0.0]


def test_common_gen_repeat_penalty_needs_the_prefix_in_the_prompt():
    with pytest.raises(GrueError, match="does not contain the prefix 'generate a sentence with: '"):
        batch("common_gen_repeat_penalty", ["a dog"], ["dog frisbee catch."])
    penalty = batch("common_gen_repeat_penalty", ["dog frisbee"], ["Write: dog frisbee."], prefix="Write: ")
    assert penalty == [-1.0]


def test_common_gen_repeat_penalty_takes_the_concepts_from_the_samples_meta_in_any_prompt_format():
    """The small profile's chat instruction has neither RL4LMs's prefix nor its one-character end."""
    reward = plugins.REWARDS.get("common_gen_repeat_penalty")()
    prompt = "<|im_start|>user\nUse: dog frisbee catch<|im_end|>\n<|im_start|>assistant\n"
    texts = ["The dog catches a frisbee.", "Dog frisbee catch!", "A sentence: dogs run."]
    meta = [{"concepts": ["dog", "frisbee", "catch"]}] * 3
    assert reward.batch([prompt] * 3, texts, [[]] * 3, meta) == [0.0, -1.0, -1.0]
    rl4lms = ["generate a sentence with: dog frisbee catch."] * 3  # the same numbers on RL4LMs's prompt
    assert reward.batch(rl4lms, texts, [[]] * 3, [{}] * 3) == [0.0, -1.0, -1.0]
    # a prompt with the prefix is read as RL4LMs reads it, whatever the meta data says
    commas = ["generate a sentence with: dog, frisbee, catch."] * 3
    assert reward.batch(commas, ["Dog, frisbee, catch!", *texts[1:]], [[]] * 3, meta) == [-1.0, 0.0, -1.0]


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
    assert reward("rouge", rouge_type="rouge2") == [0.0]
    assert reward("rouge", rouge_type="rouge2", use_single_ref=False) == [1.0]
    assert reward("rouge_combined") == pytest.approx([(2 / 9 + 0 + 2 / 9) / 3])
    assert reward("rouge_combined", use_single_ref=False) == [1.0]


@NEEDS_WORDNET
def test_meteor_with_shaping_fn_adds_the_copy_penalty():
    """RL4LMs's CommonGen configs: meteor with shaping_fn common_gen_repeat_penalty."""
    prompts = ["generate a sentence with: dog frisbee catch."] * 2
    texts, references = (
        ["A dog catches a frisbee.", "dog frisbee catch"],
        [["The dog caught the frisbee."]] * 2,
    )
    meteor = plugins.METRICS.get("meteor")().compute(prompts, texts, references)["lexical/meteor"][0]
    assert min(meteor) > 0
    reward = plugins.REWARDS.get("meteor")(shaping_fn="common_gen_repeat_penalty")
    assert reward.batch(prompts, texts, references, [{}, {}]) == pytest.approx([meteor[0], meteor[1] - 1])
