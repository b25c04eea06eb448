"""What ``trl_ppo.py`` and ``trl_grpo.py`` measure of a TRL trainer: the seconds between the ends of
its iterations (the first from the start of training: generation, scoring and update included), and
the seconds of each iteration spent in ``generate`` (transformers' ``GenerationMixin.generate``,
which TRL's trainers call to sample), printed as one JSON line."""

from __future__ import annotations

import json
import resource
import statistics
import time


def iteration_times():
    """A ``TrainerCallback`` whose ``seconds`` are every iteration's and ``generation`` the part of
    each in ``generate`` (transformers is imported here: TRL's environment has it, GRUE Bench's
    tests never load this module)."""
    from transformers import GenerationMixin, TrainerCallback

    class IterationTimes(TrainerCallback):
        def __init__(self) -> None:
            self.last, self.seconds, self.generation, self.generating = 0.0, [], [], 0.0
            untimed = GenerationMixin.generate

            def generate(model, *args, **kwargs):
                started = time.perf_counter()
                try:
                    return untimed(model, *args, **kwargs)
                finally:
                    self.generating += time.perf_counter() - started

            GenerationMixin.generate = generate

        def on_train_begin(self, *_, **__):
            self.last = time.perf_counter()

        def on_step_end(self, *_, **__):
            now = time.perf_counter()
            self.seconds.append(now - self.last)
            self.generation.append(self.generating)
            self.last, self.generating = now, 0.0

    return IterationTimes()


def print_figures(alg: str, seconds: list[float], generation: list[float]) -> None:
    """``sec_per_iter_median`` and ``generation_s_median`` (the iterations after the first), every
    iteration's seconds and the process's peak RSS."""
    figures = {
        "library": "trl",
        "alg": alg,
        "iterations": len(seconds),
        "sec_per_iter_median": round(statistics.median(seconds[1:]), 2),
        "generation_s_median": round(statistics.median(generation[1:]), 2),
        "iteration_s": [round(s, 2) for s in seconds],
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }
    print(json.dumps(figures), flush=True)
