"""Generation on SmolLM2-135M with and without packed weights (``grue_bench/rl/packed.py``), in bf16
or float32, alternated, each pair from the same random state: seconds per ``generate`` call, whether
the tokens are the same and how far apart the log-probs are (run by hand, not a test).

    python benchmarks/bench_packed.py --rows 16 --new-tokens 32 --repeats 3 --threads 1
    python benchmarks/bench_packed.py --beams 4 --rows 8 --new-tokens 16
    python benchmarks/bench_packed.py --precision fp32 --threads 2

Sampling (top-k 0) is the rollout's decoding, beam search the evaluation's of CommonGen, ToTTo and
NarrativeQA on the small profile.
"""

from __future__ import annotations

import argparse
import logging
import time

import torch

from grue_bench.models.small import load_small
from grue_bench.rl import packed
from grue_bench.rl.rollout import GenerationSettings, generate

log = logging.getLogger("bench_packed")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=16)
    parser.add_argument("--new-tokens", type=int, default=32)
    parser.add_argument("--beams", type=int, default=1, help="beam search of this many beams (1: sampling)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--precision", choices=["bf16", "fp32"], default="bf16")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    torch.set_num_threads(args.threads)
    base = load_small("causal")
    prompts = [
        f"Review {i}: this movie was one of the films I expected the most of, and the acting"
        for i in range(args.rows)
    ]
    kwargs = (
        {"do_sample": True, "top_k": 0} if args.beams == 1 else {"do_sample": False, "num_beams": args.beams}
    )
    settings = GenerationSettings(64, "left", args.new_tokens, args.beams > 1, kwargs)
    packed_dtype = packed.packed_dtype

    def timed(packing: bool):
        packed.packed_dtype = packed_dtype if packing else (lambda lm: None)
        torch.manual_seed(0)
        start = time.perf_counter()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.precision == "bf16"):
            generated = generate(base.model, base.tokenizer, "causal", prompts, settings, "cpu")
        return time.perf_counter() - start, generated

    for repeat in range(args.repeats):
        (plain_s, plain), (packed_s, ours) = timed(False), timed(True)
        gap = 0.0 if plain.logprobs is None else float((plain.logprobs - ours.logprobs).abs().max())
        log.info(
            "repeat %d: plain %.2f s, packed %.2f s (%.0f%% less), same texts: %s, log-probs apart by %.1e",
            repeat,
            plain_s,
            packed_s,
            100 * (1 - packed_s / plain_s),
            plain.texts == ours.texts,
            gap,
        )


if __name__ == "__main__":
    main()
