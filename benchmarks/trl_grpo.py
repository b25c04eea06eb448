"""TRL's GRPO on ``bench_small.py``'s GRPO workload, for the comparison in benchmarks/README.md (run
by hand, in an environment with TRL, which GRUE Bench does not depend on).

    python -m venv /tmp/trl
    /tmp/trl/bin/pip install torch==2.13.0 trl==1.16.0 transformers==5.24.0
    /tmp/trl/bin/python benchmarks/trl_grpo.py --model ~/.cache/grue_bench/models/smollm2-135m \\
        --prompts prompts.txt   # the 16 openings bench_small.py writes (one per line)

The workload: 4 prompts x 4 answers a step, 32 new tokens (none ends earlier: ``min_new_tokens``),
sampled at temperature 1 with no top-k, one pass (``num_iterations`` 1), no KL term (``beta`` 0: no
reference model), a constant learning rate of 1e-6, no gradient checkpointing (TRL's default
recomputes the forward pass in the backward one), float32 (``--bf16``: TRL's bf16), 2 threads, seed
0, 10 steps; the reward counts the increasing run of numbers in a completion, as
``bench_rewards.increasing_numbers`` (its value does not change the time). Prints one JSON line
(``trl_timing``): ``sec_per_iter_median`` (the steps after the first, end to end: generation
included), ``generation_s_median`` (their seconds in ``generate``), every step's seconds and
``peak_rss_mb``.
"""

from __future__ import annotations

import argparse
import itertools
import re
from pathlib import Path

from trl_timing import iteration_times, print_figures  # this folder's: scripts run from it or by path


def increasing_run(completions: list[str], **_) -> list[float]:
    """The longest run of consecutive increasing integers among each text's numbers."""
    rewards = []
    for text in completions:
        numbers = [int(token) for token in re.findall(r"-?\d+", text)]
        best = run = 1 if numbers else 0
        for previous, number in itertools.pairwise(numbers):
            run = run + 1 if number == previous + 1 else 1
            best = max(best, run)
        rewards.append(float(best))
    return rewards


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, required=True)
    parser.add_argument("--prompts", type=Path, required=True)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--bf16", action="store_true")
    args = parser.parse_args()

    import torch
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    torch.set_num_threads(args.threads)
    prompts = [line for line in args.prompts.read_text().splitlines() if line.strip()]
    tokenizer = AutoTokenizer.from_pretrained(args.model, padding_side="left")
    model = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float32)

    config = GRPOConfig(
        output_dir="/tmp/trl_grpo_bench",
        per_device_train_batch_size=16,
        num_generations=4,
        max_completion_length=32,
        generation_kwargs={"min_new_tokens": 32},
        temperature=1.0,
        top_k=0,
        num_iterations=1,
        beta=0.0,
        learning_rate=1e-6,
        lr_scheduler_type="constant",
        gradient_checkpointing=False,  # TRL's default recomputes the forward pass; GRUE Bench does not
        max_steps=args.steps,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        use_cpu=True,
        bf16=args.bf16,
        seed=0,
    )
    times = iteration_times()
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=increasing_run,
        args=config,
        train_dataset=Dataset.from_dict({"prompt": prompts * args.steps}),
        processing_class=tokenizer,
        callbacks=[times],
    )
    trainer.train()
    print_figures("grpo", times.seconds, times.generation)


if __name__ == "__main__":
    main()
