"""Each torch operator's own wall seconds in a block, by phase, operator and input shapes, with the
page faults it took (``bench_rl.py --op-times``).

A dispatch mode times each operator's call and nothing else. torch.profiler's bookkeeping per
operator (more so with ``record_shapes``) inflates short operators and moves time between them: on
SmolLM2-135M's GRPO update it put the head's weight-gradient product at 618 ms, which takes 192 ms
timed so (benchmarks/README.md). The Python and dispatch time between operators is in no row: a
phase's wall seconds less its operators' sum is that. The timing costs tens of microseconds an
operator and slows the operators too: GRPO's rollout on SmolLM2-135M (61,013 calls) took 7.4 s
timed, 4.2 s of it in its operators, against 3.2-3.9 s untimed. Compare operators with each other
within one table, not with an untimed run's seconds.
"""

from __future__ import annotations

import contextlib
import resource
import time
from collections import defaultdict
from collections.abc import Iterator

import torch
from torch.utils._python_dispatch import TorchDispatchMode


def _minor_faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


class OpTimes(TorchDispatchMode):
    """Within the mode, each operator's calls, seconds and page faults by (phase, operator,
    input shapes); ``during(phase)`` names the phase of a block (``"rollout"`` otherwise)."""

    def __init__(self) -> None:
        super().__init__()
        self.phase = "rollout"
        self.rows: dict[tuple[str, str, str], list[float]] = defaultdict(lambda: [0, 0.0, 0])
        self.wall: dict[str, float] = defaultdict(float)
        self._since = 0.0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        faults, started = _minor_faults(), time.perf_counter()
        out = func(*args, **(kwargs or {}))
        seconds = time.perf_counter() - started
        shapes = str([tuple(a.shape) for a in args if isinstance(a, torch.Tensor)])
        row = self.rows[(self.phase, str(func), shapes)]
        row[0] += 1
        row[1] += seconds
        row[2] += _minor_faults() - faults
        return out

    def __enter__(self):
        self._since = time.perf_counter()
        return super().__enter__()

    def __exit__(self, *exc):
        self.wall[self.phase] += time.perf_counter() - self._since
        return super().__exit__(*exc)

    @contextlib.contextmanager
    def during(self, phase: str) -> Iterator[None]:
        """The block's operators under ``phase``; then back to the phase before."""
        before, now = self.phase, time.perf_counter()
        self.wall[before] += now - self._since
        self.phase, self._since = phase, now
        try:
            yield
        finally:
            now = time.perf_counter()
            self.wall[phase] += now - self._since
            self.phase, self._since = before, now

    def table(self, limit: int = 20) -> str:
        """Per phase: wall seconds, operators' seconds and faults; then the ``limit`` costliest
        operators (all shapes together) and the ``limit`` costliest (operator, shapes)."""
        lines = []
        for phase in sorted({key[0] for key in self.rows}, key=lambda p: -self.wall[p]):
            rows = {key[1:]: row for key, row in self.rows.items() if key[0] == phase}
            by_op: dict[str, list[float]] = defaultdict(lambda: [0, 0.0, 0])
            for (op, _), row in rows.items():
                by_op[op] = [a + b for a, b in zip(by_op[op], row, strict=True)]
            seconds, faults = sum(r[1] for r in rows.values()), sum(r[2] for r in rows.values())
            lines.append(
                f"== {phase}: {self.wall[phase]:.2f} s wall, {seconds:.2f} s in "
                f"{sum(r[0] for r in rows.values()):.0f} operator calls, {faults:.0f} page faults"
            )
            for title, table in (("operator", by_op), ("operator, input shapes", rows)):
                lines.append(f"   calls        ms     faults  {title}")
                for key, (calls, secs, flts) in sorted(table.items(), key=lambda kv: -kv[1][1])[:limit]:
                    name = key if isinstance(key, str) else " ".join(key)
                    lines.append(f"  {calls:6.0f} {secs * 1e3:9.1f} {flts:10.0f}  {name}")
        return "\n".join(lines) + "\n"
