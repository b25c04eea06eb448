"""What the update sees at learning rate 0 on a model with dropout (run by hand, not a test).

    python benchmarks/dropout_ratio.py                 # GPT-2-shaped, dropout 0.1, 2 x 64
    python benchmarks/dropout_ratio.py --layers 4 --width 128 --iters 3

A GPT-2 built from config with GPT-2's own dropout (0.1 on embeddings, attention and residuals),
the tiny profile's IMDB tokenizer and prompts, the increasing-numbers reward. Each algorithm
runs ``--iters`` iterations at learning rate 0, with dropout off in the update (the default,
``alg.args.disable_dropout: true``) and on (``false``, the old behaviour). With nothing moving,
the ratio pi/pi_old must be exactly 1: printed are the largest approximate KL and clip fraction
over every minibatch of every epoch, and for TRPO whether its line search accepted a step
(its learning rate is not used: TRPO steps by its trust region).
"""

from __future__ import annotations

import argparse
import logging

from make_workload import rl_config, workload_gpt2  # this folder's: scripts run from it or by path

ALGS = ("ppo", "nlpo", "grpo", "rloo", "trpo")
ROW = "{:6} {:18} {:>14} {:>13} {:>13}"


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--dropout", type=float, default=0.1)
    parser.add_argument("--episodes", type=int, default=16, help="episodes per iteration")
    parser.add_argument("--new-tokens", type=int, default=24)
    parser.add_argument("--iters", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    return parser.parse_args()


def measure(alg: str, disable_dropout: bool, args, tokenizer, pool) -> dict[str, float]:
    """The largest approx_kl and clip fraction over all minibatches; TRPO: whether it stepped."""
    import torch

    from grue_bench.models import BaseLM
    from grue_bench.runner.assemble import Run

    torch.manual_seed(0)
    lm = workload_gpt2(tokenizer, args.layers, args.width, args.dropout)
    if alg in ("grpo", "rloo"):  # a rollout of episodes, in groups of 4
        n_envs, hparams = 1, {"n_steps": args.episodes, "batch_size": args.episodes // 2, "group_size": 4}
    else:  # RL4LMs: n_envs x n_steps transitions, here full-length episodes
        n_envs = args.episodes
        hparams = {"n_steps": args.new_tokens, "batch_size": args.episodes * args.new_tokens // 2}
    hparams.update(learning_rate=0.0, disable_dropout=disable_dropout)
    sampling = {"do_sample": True, "top_k": 0}
    config = rl_config(alg, hparams, n_envs, args.new_tokens, sampling, 0.05, args.iters)
    run = Run(config, 0, BaseLM(lm, tokenizer, "causal", "gpt2-workload"), {"train": pool})
    algorithm = run.rl(lm)
    seen: list[dict[str, float]] = []
    if alg != "trpo":
        accumulate = algorithm.accumulate_gradient
        algorithm.accumulate_gradient = lambda batch: seen.append(accumulate(batch)) or seen[-1]
    before = torch.nn.utils.parameters_to_vector(lm.parameters()).clone()
    run.train(algorithm)
    if alg == "trpo":
        moved = not torch.equal(before, torch.nn.utils.parameters_to_vector(lm.parameters()))
        return {"trpo_stepped": float(moved)}
    return {
        "approx_kl_max": max(s["train/approx_kl"] for s in seen),
        "clipfrac_max": max(s["train/clipfrac"] for s in seen),
    }


def main() -> None:
    args = parse_args()
    logging.basicConfig(level=logging.WARNING)
    import torch

    torch.set_num_threads(args.threads)
    from grue_bench.data import Sample
    from grue_bench.datapools import TaskPool, task_corpus
    from grue_bench.models import load_base_lm

    base = load_base_lm("causal", profile="tiny", corpus=lambda: task_corpus("imdb"), corpus_id="imdb")
    tokenizer = base.tokenizer
    prompts = [s.prompt_or_input_text for s in TaskPool.prepare("train", task="imdb")][:256]
    pool = [Sample(id=str(i), prompt_or_input_text=p, references=[]) for i, p in enumerate(prompts)]
    print(f"GPT-2 {args.layers} x {args.width}, dropout {args.dropout}, learning rate 0, {args.iters} iters")
    print(ROW.format("alg", "dropout in update", "approx_kl max", "clipfrac max", "TRPO stepped"))
    for alg in ALGS:
        for disable in (True, False):
            row = measure(alg, disable, args, tokenizer, pool)
            kl, clipped = row.get("approx_kl_max", float("nan")), row.get("clipfrac_max", float("nan"))
            stepped = {1.0: "yes", 0.0: "no", None: ""}[row.get("trpo_stepped")]
            mode = "off (default)" if disable else "on"
            print(ROW.format(alg, mode, f"{kl:.3g}", f"{clipped:.3g}", stepped))


if __name__ == "__main__":
    main()
