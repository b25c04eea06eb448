"""The small profile's RL speed: PPO and GRPO on SmolLM2-135M-Instruct (float32), as one table
(run by hand, not a test).

    python benchmarks/bench_small.py                 # both workloads once
    python benchmarks/bench_small.py --repeats 2     # alternated: ppo, grpo, ppo, grpo
    python benchmarks/bench_small.py --compile       # the sampler's decode step compiled

The workloads are issue 42's: 16 IMDB openings (the first 16 train prompts, cut to their first
``--prompt-words`` words: short prompts of different lengths, as users' prompts are), 32 new tokens,
learning rate 1e-6, 2 threads, seed 0;
- PPO: 16 episodes per iteration, 4 epochs of 1 minibatch, KL coefficient 0.05, 4 iterations;
- GRPO: 4 prompts x 4 answers, 1 epoch, KL coefficient 0, 10 iterations.
Each run is its own process (``bench_rl.py``), so its peak RSS is its own. The tiny profile's
benchmarks did not see the 2026-11-23 regression (prompts padded to ``max_prompt_length``: a
third more update time and 0.7 GB more memory here); long prompts, all cut to the same width,
hide it too: this one would have caught it.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
COMMON = ["--profile", "small", "--new-tokens", "32", "--lr", "1e-6", "--seed", "0"]
WORKLOADS = {
    "ppo": ["--alg", "ppo", "--batch-size", "16", "--ppo-epochs", "4", "--minibatches", "1", "--iters", "4"],
    "grpo": [
        "--alg", "grpo", "--batch-size", "16", "--group-size", "4", "--ppo-epochs", "1",
        "--kl-coef", "0", "--iters", "10",
    ],
}  # fmt: skip
SHOWN = ("sec_per_iter_median", "update_s_median", "generation_s_median", "peak_rss_mb")


def openings(words: int) -> list[str]:
    """The first 16 IMDB train prompts, each cut to its first ``words`` words."""
    from grue_bench.datapools import TaskPool

    prompts = [sample.prompt_or_input_text for sample in TaskPool.prepare("train", task="imdb")][:16]
    return [" ".join(prompt.split()[:words]) for prompt in prompts]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=1, help="runs of each workload, alternated")
    parser.add_argument("--prompt-words", type=int, default=6)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    parser.add_argument("--compile", action="store_true", help="compile the sampler's decode step")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        prompts = Path(folder) / "prompts.txt"
        prompts.write_text("\n".join(openings(args.prompt_words)) + "\n", encoding="utf-8")
        rows = []
        for repeat in range(args.repeats):
            for name, workload in WORKLOADS.items():
                command = [sys.executable, str(HERE / "bench_rl.py"), *COMMON, *workload]
                command += ["--prompts", str(prompts), "--threads", str(args.threads)]
                command += ["--precision", args.precision, *(["--compile"] if args.compile else [])]
                out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
                figures = json.loads(out.strip().splitlines()[-1])
                print(json.dumps({"workload": name, "repeat": repeat, **figures}), flush=True)
                rows.append((name, figures))
    print("| workload | " + " | ".join(SHOWN) + " |")
    print("|---" * (len(SHOWN) + 1) + "|")
    for name, figures in rows:
        print(f"| {name} | " + " | ".join(str(figures[key]) for key in SHOWN) + " |")


if __name__ == "__main__":
    main()
