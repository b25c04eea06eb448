"""Write issue 9's reference workload to a folder, so any RL library can run the same one.

    python benchmarks/make_workload.py --out bench_workload

Writes ``model/`` (a 2-layer, 64-wide GPT-2 built from config, ``save_pretrained``; its
tokenizer alongside) and ``prompts.txt`` (IMDB training prompts, one per line, newlines
replaced by spaces). The reward used with it is ``bench_rewards:increasing_numbers``
(benchmarks/bench_rewards.py).
Then, e.g.:

    python benchmarks/bench_rl.py --alg ppo --model bench_workload/model \\
        --prompts bench_workload/prompts.txt --reward bench_rewards:increasing_numbers \\
        --batch-size 16 --new-tokens 32 --ppo-epochs 4 --minibatches 1 --threads 2
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

log = logging.getLogger(__name__)


def workload_gpt2(tokenizer, layers: int, width: int, dropout: float = 0.0):
    """The workload's GPT-2 built from config (4 heads, 256 positions) over ``tokenizer``."""
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(
        vocab_size=len(tokenizer),
        n_positions=256,
        n_embd=width,
        n_layer=layers,
        n_head=4,
        resid_pdrop=dropout,
        embd_pdrop=dropout,
        attn_pdrop=dropout,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=tokenizer.bos_token_id,
    )
    return GPT2LMHeadModel(config)


def rl_config(
    alg: str,
    alg_args: dict,
    n_envs: int,
    new_tokens: int,
    generation_kwargs: dict,
    kl_coef: float,
    n_iters: int,
    policy_args: dict | None = None,
):
    """The run config of a benchmark's RL workload: IMDB prompts (64 tokens, cut on the left), the
    increasing-numbers reward, no early end of episodes; built as any run's (``runner.assemble``)."""
    from grue_bench import plugins
    from grue_bench.resolve import build_config

    policy = {"generation_kwargs": generation_kwargs, **(policy_args or {})}
    policy_id = plugins.default_policy(alg, "causal")
    if plugins.POLICIES.get(policy_id).maskable:  # NLPO: its mask keeps at least 10 tokens here
        policy = {"min_tokens_to_keep": 10, **policy}
    data = {
        "task": "imdb",  # its prompts and tiny model, unless the benchmark brings its own
        "reward_fn": {"id": "increasing_numbers", "args": {"min_tokens": 10}},
        "env": {
            "n_envs": n_envs,
            "args": {
                "max_prompt_length": 64,
                "prompt_truncation_side": "left",
                "max_episode_length": new_tokens,
                "terminate_on_eos": False,
            },
        },
        "alg": {
            "id": alg,
            "args": alg_args,
            "kl_div": {"coeff": kl_coef},
            "policy": {"id": policy_id, "args": policy},
        },
        "train_evaluation": {"n_iters": n_iters},
    }
    return build_config(data, "the benchmark's workload")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("bench_workload"))
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--prompts", type=int, default=512, help="how many prompts to write")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")

    import torch

    from grue_bench.datapools import TaskPool, task_corpus
    from grue_bench.models import load_base_lm

    torch.manual_seed(0)
    base = load_base_lm("causal", profile="tiny", corpus=lambda: task_corpus("imdb"), corpus_id="imdb")
    tokenizer = base.tokenizer
    model = workload_gpt2(tokenizer, args.layers, args.width)
    model.save_pretrained(args.out / "model")
    tokenizer.save_pretrained(args.out / "model")
    prompts = [s.prompt_or_input_text.replace("\n", " ") for s in TaskPool.prepare("train", task="imdb")]
    (args.out / "prompts.txt").write_text("\n".join(prompts[: args.prompts]) + "\n", encoding="utf-8")
    log.info(
        "wrote %s: GPT-2 %d layers x %d wide, %d parameters, vocabulary %d; %d prompts",
        args.out,
        args.layers,
        args.width,
        model.num_parameters(),
        len(tokenizer),
        min(len(prompts), args.prompts),
    )


if __name__ == "__main__":
    main()
