"""Speed and memory of one RL fine-tuning loop, as one JSON line (run by hand, not a test).

    python benchmarks/bench_rl.py --alg ppo --profile tiny --batch-size 16 --new-tokens 32 --iters 10
    python benchmarks/bench_rl.py --alg ppo --profile small --lora-r 8 --iters 4
    python benchmarks/bench_rl.py --alg ppo --model DIR --tokenizer DIR --prompts prompts.txt \\
        --reward my_module:my_reward --batch-size 16 --new-tokens 32 --ppo-epochs 4 --minibatches 1

The same workload can be given to other libraries: any `save_pretrained` causal LM, a prompts
file (one per line), a reward `module:function` taking a list of texts and returning floats.
Prints: sec_per_iter_median, sec_per_iter_min, first_iter_s (the first iteration, which with
--compile includes the compilation), gen_tokens_per_s (tokens generated per second inside
generate()) and e2e_tokens_per_s (per second of whole iterations), both after the first
iteration, update_s_median, peak_rss_mb, reward_first and reward_last (mean reward of the
first and last fifth of the iterations); and where an iteration's time goes:
generation_s_median (inside the sampler), rollout_s_median (generation + the reference's
scoring pass + reward + credit) and update_s_median. ``--lora-r R`` trains a LoRA adapter of rank
R (alpha 2R, peft's default target modules) instead of every weight, as ``alg.policy.args.peft``
does; ``trainable_params`` says how many parameters the optimizer holds.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import time
from pathlib import Path

from make_workload import rl_config  # this folder's: scripts run from it or by path
from op_times import OpTimes

from grue_bench.rl.trainer import Callback, Trainer


class CallableReward:
    """A plain ``texts -> floats`` function as a batched reward."""

    def __init__(self, function) -> None:
        self.function = function

    def batch(self, prompts, generations, references, meta_infos):
        return [float(x) for x in self.function(list(generations))]


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--alg", default="ppo", choices=["ppo", "nlpo", "a2c", "trpo", "grpo", "rloo"])
    parser.add_argument(
        "--profile", default="tiny", choices=["tiny", "small"], help="when --model is not given"
    )
    parser.add_argument("--model", type=Path, help="a save_pretrained causal LM folder")
    parser.add_argument("--tokenizer", type=Path, help="its tokenizer folder (default: --model)")
    parser.add_argument("--prompts", type=Path, help="one prompt per line (default: IMDB train prompts)")
    parser.add_argument("--reward", help="module:function, texts -> floats (default: increasing numbers)")
    parser.add_argument("--batch-size", type=int, default=16, help="episodes per iteration")
    parser.add_argument("--new-tokens", type=int, default=32)
    parser.add_argument("--ppo-epochs", type=int, default=4)
    parser.add_argument("--minibatches", type=int, default=1)
    parser.add_argument(
        "--micro-batch-size", type=int, help="rows per forward/backward pass (default: the algorithm's)"
    )
    parser.add_argument("--lr", type=float, default=1e-5)
    parser.add_argument("--kl-coef", type=float, default=0.05)
    parser.add_argument("--iters", type=int, default=10)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--lora-r", type=int, default=0, help="train a LoRA adapter of this rank (0: none)")
    parser.add_argument("--group-size", type=int, default=4, help="GRPO/RLOO: responses per prompt")
    parser.add_argument(
        "--precision", choices=["fp32", "bf16"], default="fp32", help="the forward passes' (alg.args.bf16)"
    )
    parser.add_argument(
        "--compile",
        action="store_true",
        help="compile the sampler's decode step (alg.policy.args.compile_sampler); the first "
        "iteration then includes the compilation, reported as first_iter_s",
    )
    parser.add_argument(
        "--torch-profile", type=Path, help="also write a torch.profiler table of the last iteration here"
    )
    parser.add_argument(
        "--op-times",
        type=Path,
        help="also write each operator's own seconds and page faults in the last iteration here, its "
        "rollout and update apart (op_times.py)",
    )
    parser.add_argument(
        "--stats-out",
        type=Path,
        help="also write every iteration's statistics here as JSON (did a change keep the numbers?)",
    )
    return parser.parse_args()


class Timing(Callback):
    """Seconds and statistics of every iteration; the last one under torch.profiler when
    ``profile_to`` is given (its operators by self CPU time go to that file), or under ``OpTimes``
    when ``op_times_to`` is (its table goes there; ``OpTimes.during("update")`` marks the update)."""

    def __init__(self, profile_to: Path | None, op_times_to: Path | None = None) -> None:
        self.profile_to, self.op_times_to = profile_to, op_times_to
        self.profiler = None
        self.op_times = OpTimes() if op_times_to else None
        self.timing_ops = False
        self.started = 0.0
        self.seconds: list[float] = []
        self.stats: list[dict[str, float]] = []

    def on_iteration_start(self, trainer: Trainer) -> None:
        last = trainer.iteration == trainer.n_iters - 1
        if self.profile_to and last:
            from torch.profiler import ProfilerActivity, profile

            self.profiler = profile(activities=[ProfilerActivity.CPU], record_shapes=False)
            self.profiler.__enter__()
        if self.op_times is not None and last:
            self.op_times.__enter__()
            self.timing_ops = True
        self.started = time.perf_counter()

    def on_iteration_end(self, trainer: Trainer, stats: dict[str, float]) -> None:
        self.seconds.append(time.perf_counter() - self.started)
        self.stats.append(stats)
        if self.profiler is not None:
            self.profiler.__exit__(None, None, None)
            table = self.profiler.key_averages().table(sort_by="self_cpu_time_total", row_limit=40)
            self.profile_to.write_text(table)
            self.profiler = None
        if self.timing_ops:
            self.op_times.__exit__(None, None, None)
            self.op_times_to.write_text(self.op_times.table())
            self.timing_ops = False

    def timed_update(self, update):
        """``update`` with its operators under the phase ``"update"`` while operators are timed."""
        if self.op_times is None:
            return update

        def timed(rollout):
            if not self.timing_ops:
                return update(rollout)
            with self.op_times.during("update"):
                return update(rollout)

        return timed


def main() -> None:
    args = parse_args()
    import torch

    torch.set_num_threads(args.threads)
    from grue_bench.data import Sample
    from grue_bench.models import BaseLM
    from grue_bench.registry import import_object
    from grue_bench.runner.assemble import Run, set_seed
    from grue_bench.runner.host_memory import keep_freed_memory

    keep_freed_memory()  # as a run does (before: MALLOC_MMAP_MAX_=65536, glibc's default)

    set_seed(args.seed)
    if args.model:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        lm = AutoModelForCausalLM.from_pretrained(args.model)
        tokenizer = AutoTokenizer.from_pretrained(args.tokenizer or args.model)
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
    else:
        from grue_bench.datapools import task_corpus
        from grue_bench.models import load_base_lm

        base = load_base_lm(
            "causal", profile=args.profile, corpus=lambda: task_corpus("imdb"), corpus_id="imdb"
        )
        lm, tokenizer = base.model, base.tokenizer
    name = str(args.model or args.profile)
    if args.prompts:
        prompts = [line.rstrip("\n") for line in args.prompts.read_text().splitlines() if line.strip()]
    else:
        from grue_bench.datapools import TaskPool

        prompts = [s.prompt_or_input_text for s in TaskPool.prepare("train", task="imdb")][:512]
    reward = CallableReward(import_object(args.reward)) if args.reward else None  # None: the config's
    if args.alg in ("grpo", "rloo"):  # a rollout counted in episodes
        n_envs, n_steps, rollout_size = 1, args.batch_size, args.batch_size
    else:  # RL4LMs: n_envs x n_steps transitions, here batch-size episodes of new-tokens each
        n_envs, n_steps, rollout_size = args.batch_size, args.new_tokens, args.batch_size * args.new_tokens
    minibatch = max(1, rollout_size // args.minibatches)
    common = {"n_steps": n_steps, "batch_size": minibatch, "learning_rate": args.lr}
    if args.precision == "bf16":
        common["bf16"] = True
    if args.micro_batch_size:
        common["micro_batch_size"] = args.micro_batch_size
    if args.alg in ("ppo", "nlpo", "grpo", "rloo"):
        common["n_epochs"] = args.ppo_epochs
    if args.alg in ("grpo", "rloo"):
        common["group_size"] = args.group_size
    policy = {"compile_sampler": args.compile}
    if args.lora_r:
        policy["peft"] = {"r": args.lora_r, "lora_alpha": 2 * args.lora_r, "lora_dropout": 0.0}
    sampling = {"do_sample": True, "top_k": 0, "min_new_tokens": args.new_tokens}
    config = rl_config(args.alg, common, n_envs, args.new_tokens, sampling, args.kl_coef, args.iters, policy)
    pool = [Sample(id=str(i), prompt_or_input_text=p, references=[]) for i, p in enumerate(prompts)]
    run = Run(config, args.seed, BaseLM(lm, tokenizer, "causal", name), {"train": pool})
    algorithm = run.rl(lm, reward_fn=reward)
    timing = Timing(args.torch_profile, args.op_times)
    algorithm.update = timing.timed_update(algorithm.update)
    run.train(algorithm, [timing])
    seconds, stats = timing.seconds, timing.stats
    if args.stats_out:
        numbers = [{k: v for k, v in s.items() if not k.startswith("time/")} for s in stats]
        args.stats_out.write_text(json.dumps(numbers, indent=1))
    trained = [p for p in algorithm.unwrapped.parameters() if p.requires_grad]
    updates = [s["time/update_s"] for s in stats]
    generation = [s["time/generation_s"] for s in stats]
    rollouts = [s["time/rollout_s"] for s in stats]
    rewards = [s["rollout/reward"] for s in stats]
    tokens = [s["rollout/length"] * args.batch_size for s in stats]
    fifth = max(1, args.iters // 5)
    warm = 1 if args.iters > 1 else 0  # token rates leave out the first iteration (warm-up, compilation)
    print(
        json.dumps(
            {
                "alg": args.alg,
                "model": name,
                "params": sum(p.numel() for p in lm.parameters()),
                "lora_r": args.lora_r,
                "precision": args.precision,
                "trainable_params": sum(p.numel() for p in trained),
                "batch_size": args.batch_size,
                "new_tokens": args.new_tokens,
                "iters": args.iters,
                "sec_per_iter_median": round(statistics.median(seconds), 4),
                "sec_per_iter_min": round(min(seconds), 4),
                "first_iter_s": round(seconds[0], 3),
                "gen_tokens_per_s": round(sum(tokens[warm:]) / sum(generation[warm:]), 1),
                "e2e_tokens_per_s": round(sum(tokens[warm:]) / sum(seconds[warm:]), 1),
                "update_s_median": round(statistics.median(updates), 4),
                "generation_s_median": round(statistics.median(generation), 4),
                "rollout_s_median": round(statistics.median(rollouts), 4),
                "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
                "reward_first": round(statistics.mean(rewards[:fifth]), 4),
                "reward_last": round(statistics.mean(rewards[-fifth:]), 4),
            }
        )
    )


if __name__ == "__main__":
    main()
