"""What ``trl_ppo.py`` and ``trl_grpo.py`` measure of a TRL trainer: the seconds between the ends of
its iterations (the first from the start of training: generation, scoring and update included),
printed as one JSON line."""

from __future__ import annotations

import json
import resource
import statistics
import time


def iteration_times():
    """A ``TrainerCallback`` whose ``seconds`` are every iteration's (transformers is imported here:
    TRL's environment has it, GRUE Bench's tests never load this module)."""
    from transformers import TrainerCallback

    class IterationTimes(TrainerCallback):
        def __init__(self) -> None:
            self.last, self.seconds = 0.0, []

        def on_train_begin(self, *_, **__):
            self.last = time.perf_counter()

        def on_step_end(self, *_, **__):
            now = time.perf_counter()
            self.seconds.append(now - self.last)
            self.last = now

    return IterationTimes()


def print_figures(alg: str, seconds: list[float]) -> None:
    """``sec_per_iter_median`` (the iterations after the first), every iteration's seconds and the
    process's peak RSS."""
    figures = {
        "library": "trl",
        "alg": alg,
        "iterations": len(seconds),
        "sec_per_iter_median": round(statistics.median(seconds[1:]), 2),
        "iteration_s": [round(s, 2) for s in seconds],
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }
    print(json.dumps(figures), flush=True)
