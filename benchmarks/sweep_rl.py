"""How the cost of an RL iteration grows with batch size and response length (run by hand).

    python benchmarks/sweep_rl.py --model bench_workload/model --prompts bench_workload/prompts.txt

Runs ``bench_rl.py`` (a fresh process each, so peak memory is per point) over batch sizes
8, 16, 32, 64 x new tokens 16, 32, 64, 128 and prints one JSON line per point, then a table of
median seconds per iteration and, along each axis, the growth factor per doubling (2.0 is
linear growth; less means fixed costs are being amortised) and the exponent k of the fitted
power law s/iter ~ size^k for each row and column (least squares in log-log; 1.0 is linear),
which one noisy point moves less than it moves a single doubling.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import subprocess
import sys
from pathlib import Path

BATCH_SIZES = (8, 16, 32, 64)
NEW_TOKENS = (16, 32, 64, 128)


def fitted_exponent(sizes: tuple[int, ...], seconds: list[float]) -> float:
    """The slope of log(seconds) against log(size), by least squares."""
    xs, ys = [math.log(s) for s in sizes], [math.log(t) for t in seconds]
    mean_x, mean_y = sum(xs) / len(xs), sum(ys) / len(ys)
    covariance = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True))
    return covariance / sum((x - mean_x) ** 2 for x in xs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--alg", default="ppo")
    parser.add_argument("--model", type=Path, required=True)
    parser.add_argument("--prompts", type=Path, required=True)
    parser.add_argument("--reward", default="bench_rewards:increasing_numbers")
    parser.add_argument("--ppo-epochs", type=int, default=4)
    parser.add_argument("--iters", type=int, default=8)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()

    bench = Path(__file__).with_name("bench_rl.py")
    seconds: dict[tuple[int, int], float] = {}
    for batch in BATCH_SIZES:
        for tokens in NEW_TOKENS:
            command = [
                sys.executable, str(bench), "--alg", args.alg, "--model", str(args.model),
                "--prompts", str(args.prompts), "--reward", args.reward, "--batch-size", str(batch),
                "--new-tokens", str(tokens), "--ppo-epochs", str(args.ppo_epochs), "--minibatches", "1",
                "--iters", str(args.iters), "--threads", str(args.threads),
            ]  # fmt: skip
            done = subprocess.run(command, capture_output=True, text=True, check=True)
            row = json.loads(done.stdout.strip().splitlines()[-1])
            seconds[batch, tokens] = row["sec_per_iter_median"]
            print(json.dumps(row), flush=True)

    print(f"\nmedian s/iter, {args.alg}: rows = batch size, columns = new tokens")
    print("batch " + "".join(f"{t:>9}" for t in NEW_TOKENS))
    for batch in BATCH_SIZES:
        print(f"{batch:>5} " + "".join(f"{seconds[batch, t]:>9.3f}" for t in NEW_TOKENS))
    by_batch = [
        seconds[b2, t] / seconds[b1, t] for t in NEW_TOKENS for b1, b2 in itertools.pairwise(BATCH_SIZES)
    ]
    by_tokens = [
        seconds[b, t2] / seconds[b, t1] for b in BATCH_SIZES for t1, t2 in itertools.pairwise(NEW_TOKENS)
    ]
    print(
        json.dumps(
            {
                "growth_per_doubling_batch_max": round(max(by_batch), 2),
                "growth_per_doubling_batch_mean": round(sum(by_batch) / len(by_batch), 2),
                "growth_per_doubling_tokens_max": round(max(by_tokens), 2),
                "growth_per_doubling_tokens_mean": round(sum(by_tokens) / len(by_tokens), 2),
                "exponent_batch_per_tokens_column": [
                    round(fitted_exponent(BATCH_SIZES, [seconds[b, t] for b in BATCH_SIZES]), 2)
                    for t in NEW_TOKENS
                ],
                "exponent_tokens_per_batch_row": [
                    round(fitted_exponent(NEW_TOKENS, [seconds[b, t] for t in NEW_TOKENS]), 2)
                    for b in BATCH_SIZES
                ],
            }
        )
    )


if __name__ == "__main__":
    main()
