"""Peak memory and time of one optimizer step of a task's small-profile supervised fit (run by hand).

    python benchmarks/supervised_memory.py --task cnn_dailymail --rows 4
    python benchmarks/supervised_memory.py --task cnn_dailymail --rows 4 \
        --set alg.training_args.gradient_checkpointing=true
    python benchmarks/supervised_memory.py --task cnn_dailymail --rows 4 --head every-column
    python benchmarks/supervised_memory.py --task iwslt2017_en_de --rows 4 --steps 60 --keep-freed-memory

The step is the one a ``grue run --alg supervised`` run takes (its config as the runner builds it,
its first batch of the shuffled train references, its precision), in a process of its own: run one
configuration per call. ``--head every-column`` computes the loss as before 2026-11-28, the LM head
over every column of the batch (``lm(**batch).loss``), for comparison. Prints one JSON line:
the batch's shape, the loss, the step's seconds and the process's peak RSS in MiB (``ru_maxrss``).
``--steps N`` takes the fit's first N optimizer steps instead (its optimizer and schedule, batches of
every length in the shuffled order) and adds the resident MiB after each and the page faults of
the N steps: a heap that fragments grows over steps where one step does not show it.
``--keep-freed-memory`` sets the allocator as a run's process does
(``grue_bench/runner/host_memory.py``), and ``--short-of-memory always|never`` whether its optimizer
steps hand the heap's free pages back (by default as the machine's free memory says); without it,
glibc's default.
"""

from __future__ import annotations

import argparse
import ctypes
import itertools
import json
import logging
import os
import resource
import time

log = logging.getLogger(__name__)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="cnn_dailymail")
    parser.add_argument("--profile", default="small")
    parser.add_argument("--rows", type=int, default=None, help="rows of the batch (default: the profile's)")
    parser.add_argument("--head", choices=["reference-columns", "every-column"], default="reference-columns")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a config override")
    parser.add_argument("--steps", type=int, default=0, help="the fit's first N steps")
    parser.add_argument("--keep-freed-memory", action="store_true", help="the allocator as a run sets it")
    parser.add_argument(
        "--short-of-memory",
        choices=["machine", "always", "never"],
        default="machine",
        help="with --keep-freed-memory: whether optimizer steps hand free pages back",
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S")
    if args.keep_freed_memory:
        from grue_bench.runner import host_memory

        host_memory.keep_freed_memory()
        if args.short_of_memory != "machine":
            host_memory.LOW_MEMORY_FRACTION = 1.0 if args.short_of_memory == "always" else 0.0

    from grue_bench.resolve.grid import build_specs
    from grue_bench.rl.policy import causal_position_ids
    from grue_bench.runner.assemble import build_run

    overrides = list(args.set)
    if args.rows:
        overrides.append(f"alg.training_args.per_device_train_batch_size={args.rows}")
    (spec,) = build_specs([args.task], ["supervised"], [0], args.profile, overrides=overrides)
    run = build_run(spec.config, 0, splits=("train",))
    stage = run.supervised(run.base.model)
    if args.steps:
        fit_steps(stage, run.pools["train"], args)
        return
    batch = stage._batches(run.pools["train"], shuffle=True, seed=0)[0]
    stage.lm.train()
    start = time.perf_counter()
    if args.head == "every-column":
        with stage.precision.autocast():
            loss = stage.lm(**batch, position_ids=causal_position_ids(batch["attention_mask"])).loss
    else:
        loss = stage._loss(batch)
    loss.backward()
    seconds = time.perf_counter() - start
    print(
        json.dumps(
            {
                "task": args.task,
                "head": args.head,
                "set": args.set,
                "batch": list(batch["input_ids"].shape),
                "loss": round(float(loss), 4),
                "step_s": round(seconds, 1),
                "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
            }
        )
    )


def resident_mib() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 2**20


def heap_mib() -> dict[str, int]:
    """glibc's ``mallinfo2``: the heap's size, what of it is free, and the blocks served by mmap."""
    fields = ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks")
    fields += ("keepcost",)

    class MallInfo2(ctypes.Structure):
        _fields_ = [(name, ctypes.c_size_t) for name in fields]

    mallinfo2 = ctypes.CDLL(None).mallinfo2
    mallinfo2.restype = MallInfo2
    info = mallinfo2()
    return {"heap": info.arena >> 20, "free": info.fordblks >> 20, "mmapped": info.hblkhd >> 20}


def fit_steps(stage, pool, args) -> None:
    """The fit's first ``args.steps`` optimizer steps, the resident memory after each."""
    resident, start, faults = [], time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in itertools.islice(stage._fit(pool), args.steps):
        resident.append(resident_mib())
        log.info("step %d: %d MiB resident, glibc %s", len(resident), resident[-1], heap_mib())
    print(
        json.dumps(
            {
                "task": args.task,
                "set": args.set,
                "keep_freed_memory": args.keep_freed_memory,
                "short_of_memory": args.short_of_memory,
                "steps": len(resident),
                "seconds": round(time.perf_counter() - start, 1),
                "resident_mib": resident,
                "page_faults": resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults,
                "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
            }
        )
    )


if __name__ == "__main__":
    main()
