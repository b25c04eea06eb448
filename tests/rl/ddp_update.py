"""Run by tests/rl/test_distributed.py under `accelerate launch`: one PPO update on every rank,
each rank with its own prompts, then each rank writes a checksum of its parameters."""

import json
import random
import sys
from pathlib import Path

import torch
from accelerate import Accelerator

sys.path.insert(0, str(Path(__file__).resolve().parent))

from tiny_lm import tiny_causal, word_tokenizer

from grue_bench.data import Sample
from grue_bench.rewards.synthetic import IncreasingNumbers
from grue_bench.rl.hparams import PPOArgs
from grue_bench.rl.policy import ActorCritic
from grue_bench.rl.ppo import PPO
from grue_bench.rl.rollout import GenerationSettings


def main(out_dir: str) -> None:
    accelerator = Accelerator(cpu=True)
    rank = accelerator.process_index
    tokenizer = word_tokenizer()
    lm = tiny_causal(tokenizer, seed=0)  # same initial weights on every rank
    settings = GenerationSettings(
        max_prompt_length=8,
        prompt_truncation_side="left",
        max_new_tokens=6,
        terminate_on_eos=True,
        generation_kwargs={"do_sample": True},
    )
    ppo = PPO(
        ActorCritic(lm, "causal"),
        tokenizer,
        IncreasingNumbers(min_tokens=6),
        # 4 x 6 transitions a rank, minibatches of 8 transitions from a varying number of rows, in
        # micro-batches of 1 row: the ranks' micro-batch counts differ, their steps must not
        PPOArgs(n_steps=6, batch_size=8, micro_batch_size=1, n_epochs=2, learning_rate=1e-2),
        settings,
        kl_coeff=0.01,
        target_kl=0.5,
        accelerator=accelerator,
        n_envs=4,
        seed=rank,  # ranks shuffle differently here, as differing episode lengths make them in runs
    )
    torch.manual_seed(100 + rank)  # different samples on each rank
    pool = [Sample(id=str(i), prompt_or_input_text=f"{i} {i + 1}", references=[]) for i in range(10)]
    before = sum(float(p.sum()) for p in ppo.unwrapped.parameters())
    counts, split = [], ppo.micro_batches
    ppo.micro_batches = lambda batch: counts.append(len(split(batch))) or split(batch)
    stats = ppo.step(pool, random.Random(rank))
    after = [float(p.double().sum()) for p in ppo.unwrapped.parameters()]
    Path(out_dir, f"rank{rank}.json").write_text(
        json.dumps(
            {
                "world": accelerator.num_processes,
                "before": before,
                "after": after,
                "kl_coef": ppo.kl.value,
                "texts": ppo.last_texts,
                "reward": stats["rollout/reward"],
                "micro_batches": counts,
            }
        )
    )


if __name__ == "__main__":
    main(sys.argv[1])
