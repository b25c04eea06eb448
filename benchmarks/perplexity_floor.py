"""How near perplexity's windows run to this machine's limits (run by hand, not a test).

    python benchmarks/perplexity_floor.py                    # small profile, IMDB test, float32
    python benchmarks/perplexity_floor.py --precision bf16   # where the CPU has bfloat16

The metric as a run's test evaluation runs it (the profile's ``causal_perplexity`` on the base LM:
RL4LMs's 1024-token windows advancing by 512, so every reference token is forwarded twice), timed;
then its floor on this machine: the matrix products it runs (counted by torch's ``FlopCounterMode``
on a second pass) at this machine's matmul peak (``bench_profile.matmul_peak_gflops``), plus
attention at torch's own kernel (``scaled_dot_product_attention`` over each window's causal
positions, timed alone, times the layers), the windows as the second pass forwards them. One JSON
line: ``seconds``, ``windows``, ``forwarded_tokens``, ``product_gflop``, ``products_floor_s``,
``attention_floor_s``, ``floor_s`` and the peak.
"""

from __future__ import annotations

import argparse
import json
import math
import time

from bench_profile import matmul_peak_gflops


def attention_seconds(config, window: int, dtype, repeats: int = 5) -> float:
    """The best time of one layer's causal attention over ``window`` positions, as the LM's ``sdpa``
    attention runs it (its query heads over its key/value heads)."""
    import torch
    import torch.nn.functional as F

    heads, kv_heads = config.num_attention_heads, config.num_key_value_heads
    dim = config.hidden_size // heads
    query = torch.randn(1, heads, window, dim, dtype=dtype)
    key, value = (torch.randn(1, kv_heads, window, dim, dtype=dtype) for _ in range(2))
    best = math.inf
    for _ in range(repeats + 1):
        started = time.perf_counter()
        F.scaled_dot_product_attention(query, key, value, is_causal=True, enable_gqa=True)
        best = min(best, time.perf_counter() - started)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="imdb")
    parser.add_argument("--profile", default="small")
    parser.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    torch.set_num_threads(args.threads)
    from grue_bench.resolve.grid import build_specs
    from grue_bench.runner.assemble import build_run, run_precision
    from grue_bench.runner.evaluator import evaluation_metrics
    from grue_bench.scoring import score

    overrides = [f"alg.args.bf16={args.precision == 'bf16'}"]
    (spec,) = build_specs([args.task], ["ppo"], [0], args.profile, overrides=overrides)
    config = spec.config
    run = build_run(config, 0, splits=("test",))
    lm, samples = run.base.model, run.pools["test"]
    lm.tokenizer = run.tokenizer  # perplexity reads it from the model, as the evaluation sets it
    (component,) = [m for m in evaluation_metrics(config) if m.id == "causal_perplexity"]
    precision = run_precision(config, lm.device)

    def perplexity() -> float:
        texts = [""] * len(samples)  # perplexity scores the references, not the generations
        autocast = precision.autocast
        scores = score([component], samples, texts, model=lm, split="test", model_precision=autocast)
        return scores.corpus()["fluency_metrics/perplexity"]

    started = time.perf_counter()
    value = perplexity()
    seconds = time.perf_counter() - started
    lengths: list[int] = []  # each window's length, as the metric forwards it
    hook = lm.register_forward_pre_hook(lambda _, inputs: lengths.append(inputs[0].size(1)))
    with FlopCounterMode(display=False) as counter:
        perplexity()
    hook.remove()
    product_gflop = counter.get_total_flops() / 1e9

    dtype = torch.bfloat16 if args.precision == "bf16" else torch.float32
    layers = lm.config.num_hidden_layers
    seconds_at = {n: attention_seconds(lm.config, n, dtype) for n in set(lengths)}
    attention_s = layers * sum(seconds_at[n] for n in lengths)
    peak = matmul_peak_gflops(dtype, lm.device)
    products_s = product_gflop / peak
    figures = {
        "task": args.task,
        "profile": args.profile,
        "precision": args.precision,
        "threads": args.threads,
        "perplexity": value,
        "windows": len(lengths),
        "forwarded_tokens": sum(lengths),
        "seconds": round(seconds, 2),
        "product_gflop": round(product_gflop, 1),
        "matmul_peak_gflops": round(peak, 1),
        "products_floor_s": round(products_s, 2),
        "attention_floor_s": round(attention_s, 2),
        "floor_s": round(products_s + attention_s, 2),
    }
    print(json.dumps(figures), flush=True)


if __name__ == "__main__":
    main()
