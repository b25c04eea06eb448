"""A profile's own RL run, where its time goes, against this machine's matmul peak (run by hand,
not a test).

    python benchmarks/bench_profile.py                       # IMDB PPO, small profile, float32
    python benchmarks/bench_profile.py --precision bf16
    python benchmarks/bench_profile.py --task daily_dialog --alg nlpo --iters 3
    python benchmarks/bench_profile.py --set alg.args.minibatch_by=episodes
    python benchmarks/bench_profile.py --precision fp16 --no-eval   # on a GPU (cuda when there is one)

The run is the config ``grue run --task T --alg A --profile P`` trains, built as a run builds it
(``runner.assemble``), for ``--iters`` iterations, without the store and the evaluations between
them; then its test evaluation (generation, then the whole metric suite). One JSON line:
- ``generation_s``, ``rollout_s``, ``update_s``, ``iteration_s``: per iteration (lists);
- ``eval_generate_s``, ``eval_score_s``: the test evaluation's two parts, and ``eval_metric_s``:
  the scoring's seconds by metric;
- ``update_gflop``: the matrix products of the last iteration's update, counted by torch's
  ``FlopCounterMode`` on a replay of that update from the same state (linear layers; attention's
  products are not counted on CPU, a few percent at these lengths; on a GPU the replay runs them
  as plain products, counted), and ``update_gflops``: that
  count over the update's measured seconds;
- ``matmul_peak_gflops``: float32 and bfloat16 (and float16 on a GPU), the best of a few products of
  a small model's shapes (and an 8192^3 one on a GPU) at the run's threads, measured in the same
  process after the run, on the run's device; ``update_share_of_peak``: the update's rate over the
  peak of its precision;
- ``device``, and on a GPU ``peak_gpu_mib``: the most GPU memory the process held at once.

``--op-times FILE`` then replays the last update and the evaluation with each operator timed
(``op_times.py``), phase by phase, and writes the table to FILE; the figures above come from the
untimed run.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import time
from pathlib import Path

from op_times import OpTimes

from grue_bench.rl.trainer import Callback

SHAPES = ((768, 576, 1536), (1536, 576, 576), (2048, 2048, 2048))
"""(m, k, n) of the matmul peak: SmolLM2-135M's MLP and attention projections over 768 tokens, and
a large square product."""


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="imdb")
    parser.add_argument("--alg", default="ppo")
    parser.add_argument("--profile", default="small")
    parser.add_argument("--iters", type=int, default=2)
    parser.add_argument("--precision", choices=["fp32", "bf16", "fp16"], default="fp32")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-eval", action="store_true", help="leave out the test evaluation")
    parser.add_argument(
        "--op-times",
        type=Path,
        metavar="FILE",
        help="replay the last update and the evaluation with each operator timed; the table to FILE",
    )
    parser.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE", help="a config override, as grue run's"
    )
    return parser.parse_args()


def matmul_peak_gflops(dtype, device, repeats: int = 8) -> float:
    """The best rate of ``SHAPES``' products in ``dtype`` on ``device`` (GFLOP/s, 2mkn per product)."""
    import torch

    def synchronize() -> None:  # a GPU's product runs asynchronously: time it to its end
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    shapes = SHAPES + (((8192, 8192, 8192),) if device.type == "cuda" else ())
    best = 0.0
    for m, k, n in shapes:
        a, b = torch.randn(m, k, device=device).to(dtype), torch.randn(k, n, device=device).to(dtype)
        a @ b
        for _ in range(repeats):
            synchronize()
            started = time.perf_counter()
            a @ b
            synchronize()
            best = max(best, 2 * m * k * n / (time.perf_counter() - started) / 1e9)
    return best


class LastUpdate(Callback):
    """Keeps the last iteration's rollout (by wrapping the algorithm's ``update``) and the state it
    started from (taken at that iteration's start, outside the timed update), so that update can be
    replayed."""

    def __init__(self, algorithm) -> None:
        self.algorithm, self.update = algorithm, algorithm.update
        self.rollout, self.state, self.training = None, None, False
        algorithm.update = self

    def on_iteration_start(self, trainer) -> None:
        if trainer.iteration == trainer.n_iters - 1:  # a rollout changes none of this state
            self.state = copy.deepcopy(self.algorithm.state_dict())

    def __call__(self, rollout):
        self.rollout, self.training = rollout, self.algorithm.policy.training
        return self.update(rollout)

    def replay(self) -> None:
        """The last update again, from the state it started from."""
        self.algorithm.load_state_dict(self.state)
        self.algorithm.policy.train(self.training)
        self.update(self.rollout)

    def counted_gflop(self) -> float:
        """The matrix products' GFLOP of a replay of the last update."""
        from torch.nn.attention import SDPBackend, sdpa_kernel
        from torch.utils.flop_counter import FlopCounterMode

        # on a GPU, attention as plain matrix products: torch's counter refuses the fused kernels'
        # grouped-query shapes (SmolLM2's 9 query heads over 3 key heads)
        device = next(self.algorithm.policy.parameters()).device
        backend = sdpa_kernel(SDPBackend.MATH) if device.type == "cuda" else contextlib.nullcontext()
        with backend, FlopCounterMode(display=False) as counter:
            self.replay()
        return counter.get_total_flops() / 1e9


def main() -> None:
    args = parse_args()
    import torch

    torch.set_num_threads(args.threads)
    from grue_bench.resolve.grid import build_specs
    from grue_bench.runner.assemble import build_run, run_precision
    from grue_bench.runner.evaluator import generate_texts, score_texts
    from grue_bench.runner.host_memory import keep_freed_memory
    from grue_bench.scoring import Scores

    keep_freed_memory()  # as a run does (before: MALLOC_MMAP_MAX_=65536, glibc's default)

    # explicit either way: the small profile's own setting is bf16 where the machine has it
    overrides = [
        f"train_evaluation.n_iters={args.iters}",
        f"alg.args.bf16={args.precision == 'bf16'}",
        f"alg.args.fp16={args.precision == 'fp16'}",
        *args.set,
    ]
    (spec,) = build_specs([args.task], [args.alg], [args.seed], args.profile, overrides=overrides)
    config = spec.config
    run = build_run(config, args.seed)
    algorithm = run.rl(run.base.model)
    device = algorithm.device
    last = LastUpdate(algorithm)
    started = time.perf_counter()
    history = run.train(algorithm, [last]).history
    train_s = time.perf_counter() - started
    figures = {
        "task": args.task,
        "alg": args.alg,
        "profile": args.profile,
        "precision": args.precision,
        "threads": args.threads,
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "overrides": args.set,
        "train_s": round(train_s, 2),
    }
    for key in ("generation_s", "rollout_s", "update_s"):
        figures[key] = [round(stats[f"time/{key}"], 2) for stats in history]
    parts = zip(figures["rollout_s"], figures["update_s"], strict=True)
    figures["iteration_s"] = [round(rollout + update, 2) for rollout, update in parts]
    precision, lm, samples = run_precision(config, device), algorithm.model, run.pools["test"]

    def evaluate(times: OpTimes | None = None) -> tuple[float, float, Scores]:
        """The test evaluation's generation and scoring seconds, and its scores; with ``times``,
        its operators timed, each part a phase."""

        def phase(name: str):
            return times.during(name) if times else contextlib.nullcontext()

        tokenizer, model_type = run.tokenizer, run.model_type
        started = time.perf_counter()
        with phase("evaluation: generation"):
            texts = generate_texts(lm, tokenizer, model_type, config, samples, "test", device, precision)
        generated = time.perf_counter()
        with phase("evaluation: scoring"):
            scores, _ = score_texts(lm, tokenizer, model_type, config, samples, "test", texts, precision)
        return generated - started, time.perf_counter() - generated, scores

    if not args.no_eval:
        generate_s, score_s, scores = evaluate()
        figures.update(
            eval_samples=len(samples),
            eval_generate_s=round(generate_s, 2),
            eval_score_s=round(score_s, 2),
            eval_metric_s={metric: round(seconds, 2) for metric, seconds in scores.seconds.items()},
        )
    gflop = last.counted_gflop()
    rate = gflop / history[-1]["time/update_s"]
    if args.op_times:
        times = OpTimes()
        with times:
            with times.during("update"):
                last.replay()
            if not args.no_eval:
                evaluate(times)
        args.op_times.write_text(times.table())
    if device.type == "cuda":
        figures["peak_gpu_mib"] = round(torch.cuda.max_memory_allocated(device) / 2**20)
    dtypes = {"fp32": torch.float32, "bf16": torch.bfloat16}
    if device.type == "cuda":
        dtypes["fp16"] = torch.float16
    peaks = {name: matmul_peak_gflops(dtype, device) for name, dtype in dtypes.items()}
    figures.update(
        update_gflop=round(gflop, 1),
        update_gflops=round(rate, 1),
        matmul_peak_gflops={name: round(peak, 1) for name, peak in peaks.items()},
        update_share_of_peak=round(rate / peaks[args.precision], 3),
    )
    print(json.dumps(figures), flush=True)


if __name__ == "__main__":
    main()
