"""TRL's PPO on ``bench_small.py``'s PPO workload, for the comparison in benchmarks/README.md (run by
hand, in an environment with TRL 1.12, the last release with PPO, which GRUE Bench does not depend on).

    python -m venv /tmp/trl12
    /tmp/trl12/bin/pip install torch==2.13.0 trl==1.12.0 transformers==5.24.0
    /tmp/trl12/bin/python benchmarks/trl_ppo.py --model ~/.cache/grue_bench/models/smollm2-135m \\
        --prompts prompts.txt   # the 16 openings bench_small.py writes (one per line)

The workload: 16 episodes an iteration, 32 new tokens sampled at temperature 1 with no top-k, 4
epochs of one minibatch, KL coefficient 0.05, a constant learning rate of 1e-6, no gradient
checkpointing, float32 (``--bf16``: TRL's bf16), 2 threads, seed 0, 7 iterations. TRL's PPO needs
what GRUE Bench's does not: a reward model and a value model of their own; both are SmolLM2-135M
with a fresh one-output head (its reward is meaningless, its cost is TRL's), and a separate
reference copy. Generation stops at an EOS (TRL's PPO has no minimum length; with a pretrained LM
and these openings few episodes end early). Prints one JSON line: ``sec_per_iter_median`` (the
iterations after the first), ``generation_s_median`` (their seconds in ``generate``), every
iteration's seconds and ``peak_rss_mb``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from trl_timing import iteration_times, print_figures  # this folder's: scripts run from it or by path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, required=True)
    parser.add_argument("--prompts", type=Path, required=True)
    parser.add_argument("--iters", type=int, default=7)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--bf16", action="store_true", help="TRL's bf16: autocast over float32 weights")
    args = parser.parse_args()

    import torch
    from datasets import Dataset
    from transformers import (
        AutoModelForCausalLM,
        AutoModelForSequenceClassification,
        AutoTokenizer,
    )
    from trl.experimental.ppo import PPOConfig, PPOTrainer

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    prompts = [line for line in args.prompts.read_text().splitlines() if line.strip()]
    tokenizer = AutoTokenizer.from_pretrained(args.model, padding_side="left")

    def causal():
        return AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float32)

    def scalar_head():
        model = AutoModelForSequenceClassification.from_pretrained(
            args.model, num_labels=1, dtype=torch.float32
        )
        model.config.pad_token_id = tokenizer.pad_token_id
        return model

    config = PPOConfig(
        output_dir="/tmp/trl_ppo_bench",
        per_device_train_batch_size=16,
        gradient_accumulation_steps=1,
        num_mini_batches=1,
        num_ppo_epochs=4,
        total_episodes=16 * args.iters,
        local_rollout_forward_batch_size=16,
        response_length=32,
        temperature=1.0,
        kl_coef=0.05,
        learning_rate=1e-6,
        lr_scheduler_type="constant",
        gradient_checkpointing=False,
        num_sample_generations=0,
        save_strategy="no",
        report_to="none",
        use_cpu=True,
        bf16=args.bf16,
        seed=0,
    )
    encoded = tokenizer(prompts * args.iters)
    times = iteration_times()
    trainer = PPOTrainer(
        args=config,
        processing_class=tokenizer,
        model=causal(),
        ref_model=causal(),
        reward_model=scalar_head(),
        value_model=scalar_head(),
        train_dataset=Dataset.from_dict({"input_ids": encoded["input_ids"]}),
        callbacks=[times],
    )
    trainer.train()
    print_figures("ppo", times.seconds, times.generation)


if __name__ == "__main__":
    main()
