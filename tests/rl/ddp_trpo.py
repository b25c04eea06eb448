"""TRPO on the tiny GPT-2, for tests/rl/test_trpo.py: built there in one process, and run here
under `accelerate launch` for a few iterations on every rank, each rank with its own prompts and
samples; each rank then writes a digest of its parameters."""

import hashlib
import json
import random
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from tiny_lm import tiny_causal, tiny_seq2seq, word_tokenizer

from grue_bench.data import Sample
from grue_bench.rewards.synthetic import IncreasingNumbers
from grue_bench.rl.hparams import TRPOArgs
from grue_bench.rl.policy import ActorCritic
from grue_bench.rl.rollout import GenerationSettings
from grue_bench.rl.trpo import TRPO

POOL = [Sample(id=str(i), prompt_or_input_text=f"{i} {i + 1}", references=[]) for i in range(10)]
ITERATIONS = 3


def tiny_trpo(micro_batch_size: int, model_type: str = "causal", accelerator=None) -> TRPO:
    """TRPO with 6 x 6 transitions an iteration (6 or more episodes of at most 6 tokens) on a tiny
    GPT-2 or T5, the same weights at every call."""
    tokenizer = word_tokenizer()
    lm = {"causal": tiny_causal, "seq2seq": tiny_seq2seq}[model_type](tokenizer, seed=0)
    args = TRPOArgs(
        n_steps=6,
        batch_size=4,
        micro_batch_size=micro_batch_size,
        learning_rate=1e-2,
        target_kl=0.05,
        cg_max_steps=5,
        n_critic_updates=2,
    )
    settings = GenerationSettings(8, "left", 6, True, {"do_sample": True})
    policy = ActorCritic(lm, model_type)
    reward = IncreasingNumbers(min_tokens=6)
    return TRPO(policy, tokenizer, reward, args, settings, 0.01, accelerator=accelerator, n_envs=6)


def parameter_digest(trpo: TRPO) -> str:
    """A hash of every parameter's bits (the actor's and the critic's)."""
    digest = hashlib.sha256()
    for parameter in trpo.unwrapped.parameters():
        digest.update(parameter.detach().numpy().tobytes())
    return digest.hexdigest()


def main(out_dir: str) -> None:
    from accelerate import Accelerator

    accelerator = Accelerator(cpu=True)
    trpo = tiny_trpo(micro_batch_size=2, accelerator=accelerator)
    rank = accelerator.process_index
    torch.manual_seed(100 + rank)  # each rank samples its own responses...
    rng = random.Random(rank)  # ...to its own prompts
    before = parameter_digest(trpo)
    stats = [trpo.step(POOL, rng) for _ in range(ITERATIONS)]
    report = {
        "world": accelerator.num_processes,
        "before": before,
        "after": parameter_digest(trpo),
        "sum": sum(float(p.double().sum()) for p in trpo.unwrapped.parameters()),
        "accepted": [s["train/line_search_accepted"] for s in stats],
        "texts": trpo.last_texts,
    }
    Path(out_dir, f"rank{rank}.json").write_text(json.dumps(report))


if __name__ == "__main__":
    main(sys.argv[1])
