"""Host memory that a run frees stays with the run for its next allocation (glibc on Linux).

Every training step and every evaluation batch allocates and frees the same large buffers: the
logits over the vocabulary and their gradients (SmolLM2: 49,152 entries a position, 100 MiB for
512 positions in float32), the tied embedding's gradient (108 MiB), a perplexity window's logits.
glibc serves a block over 32 MiB with its own ``mmap`` and unmaps it when freed, so the next step's
block is fresh memory: the kernel faults in and zeroes each of its 4 KiB pages again. The small
profile's IMDB PPO, 2 iterations and its test evaluation (perplexity windows of 1,024 positions:
hundreds of MiB of logits each), took 65 million page faults and 117-139 s of kernel time so,
against under a million and 4-5 s with 1 GiB of freed memory kept (``benchmarks/README.md``).

``keep_freed_memory`` makes glibc serve every block from its heap (``M_MMAP_MAX`` 0) and keep up to
``KEPT_BYTES`` of freed memory at the heap's top (``M_TRIM_THRESHOLD``) instead of handing it back:
the next step reuses pages already mapped. Memory freed inside the heap (below its top) stays
resident too, and blocks of many sizes fragment it: a supervised fit over batches of every length
grows step by step (IWSLT's small-profile fit at 4 rows a step: 3.0 GiB resident after its first
step, 6.0 GiB after its 60th, 3.7 GiB of it free in the heap). So after each optimizer step and
before each evaluation batch (``hand_back_when_short``: an evaluation after a fit has no steps, and
holds the fit's heap while another run grows), while the machine is short of memory
(``memory_is_short``), the heap's free pages go back to the kernel (``malloc_trim``), and the next
steps fault them in again. What is computed does not change (allocation only). With jemalloc or
tcmalloc preloaded (``LD_PRELOAD``, as PyTorch's CPU performance guide recommends) glibc's allocator
is not used and this changes nothing.
A user who tunes glibc's allocator (``MALLOC_MMAP_MAX_``, ``MALLOC_TRIM_THRESHOLD_``,
``MALLOC_MMAP_THRESHOLD_``, ``glibc.malloc.*`` in ``GLIBC_TUNABLES``) keeps their settings.
"""

from __future__ import annotations

import ctypes
import functools
import logging
import os
import platform
import sys
from pathlib import Path

log = logging.getLogger(__name__)

M_TRIM_THRESHOLD = -1
M_MMAP_MAX = -4
"""glibc's ``mallopt`` parameters (``malloc.h``)."""

KEPT_BYTES = 128 << 20
"""Freed memory at the heap's top that glibc keeps before it gives any back: 128 MiB. Measured
(``benchmarks/README.md``): the small profile's IMDB PPO iteration and test evaluation took 3.5
million page faults with 128 MiB kept, 0.5 million with 512 MiB, 65 million (two iterations) under
glibc's default; NarrativeQA's supervised step on 16 x 497 tokens peaked at 3.3 GiB resident with
128 MiB, 5.7 GiB with 512 MiB and 4.5 GiB under glibc's default: more kept holds a fit's transient
peak."""

LOW_MEMORY_FRACTION = 0.25
"""The machine is short of memory when less than this share of it (or of the limit of the process's
cgroup, where one is set) is available."""

USER_SETTINGS = ("MALLOC_MMAP_MAX_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_")
"""Environment variables by which a user sets glibc's allocator (as do ``glibc.malloc.*`` tunables in
``GLIBC_TUNABLES``); any of them set: left alone."""


def keep_freed_memory() -> bool:
    """Set glibc's allocator to reuse freed memory (see the module's docstring) for this process and
    the processes it forks; True when set, False where it does not apply (not Linux with glibc, or
    the user's own allocator settings). Idempotent."""
    if not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc":
        return False
    chosen = [name for name in USER_SETTINGS if name in os.environ]
    if "glibc.malloc." in os.environ.get("GLIBC_TUNABLES", ""):
        chosen.append("GLIBC_TUNABLES")
    if chosen:
        log.debug("glibc's allocator left as the environment sets it (%s)", ", ".join(chosen))
        return False
    libc = ctypes.CDLL(None)
    if not (libc.mallopt(M_MMAP_MAX, 0) == 1 and libc.mallopt(M_TRIM_THRESHOLD, KEPT_BYTES) == 1):
        log.debug("glibc's mallopt refused the settings; its allocator is left as it was")
        return False
    global _hook
    if _hook is None:
        from torch.optim.optimizer import register_optimizer_step_post_hook

        _hook = register_optimizer_step_post_hook(_hand_back_when_short)
    log.debug("glibc serves large blocks from its heap and keeps %d MiB of freed memory", KEPT_BYTES >> 20)
    return True


_hook = None
"""The handle of ``_hand_back_when_short`` on every torch optimizer, once registered."""


def memory_is_short(meminfo: Path = Path("/proc/meminfo"), cgroup: Path | None = None) -> bool:
    """Whether less than ``LOW_MEMORY_FRACTION`` of the machine's memory is available (Linux's
    ``MemAvailable``), or of the limit of the process's cgroup (v2: ``memory.max``) where one is set."""
    fields = dict(line.split(":", 1) for line in meminfo.read_text().splitlines() if ":" in line)
    if "MemAvailable" not in fields:  # Linux before 3.14
        return False
    total, available = (int(fields[name].split()[0]) << 10 for name in ("MemTotal", "MemAvailable"))
    cgroup = cgroup or own_cgroup()
    cap = cgroup / "memory.max" if cgroup else None
    limit = cap.read_text().strip() if cap and cap.is_file() else "max"
    if limit != "max":
        used = int((cgroup / "memory.current").read_text())
        total, available = min(total, int(limit)), min(available, int(limit) - used)
    return available < LOW_MEMORY_FRACTION * total


@functools.cache
def own_cgroup() -> Path | None:
    """The folder of this process's cgroup v2 (``/proc/self/cgroup``'s ``0::`` line), if any."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    unified = [line[3:] for line in lines if line.startswith("0::")]
    return Path("/sys/fs/cgroup" + unified[0]) if unified else None


def hand_back_when_short() -> None:
    """While memory is short, in a process that ``keep_freed_memory`` set: the heap's free pages back
    to the kernel (``KEPT_BYTES`` at its top kept). Anywhere else, nothing."""
    if _hook is not None and memory_is_short():
        ctypes.CDLL(None).malloc_trim(ctypes.c_size_t(KEPT_BYTES))


def _hand_back_when_short(optimizer, args, kwargs) -> None:
    """``hand_back_when_short`` after an optimizer step."""
    hand_back_when_short()
