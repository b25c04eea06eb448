"""A run's process reuses the memory it frees: a large block freed and asked for again costs no new
page faults (glibc's default maps and unmaps it, and faults in every page again); while the machine is
short of memory, an optimizer step (or an evaluation batch) hands the heap's free pages back."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys

import pytest

from grue_bench.runner.host_memory import memory_is_short

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc", reason="glibc's allocator"
)

PROBE = """
import ctypes, json, resource
from grue_bench.runner.host_memory import keep_freed_memory

kept = keep_freed_memory()
libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = [ctypes.c_void_p]
size = 64 << 20  # over glibc's largest mmap threshold (32 MiB)
faults = []
for _ in range(2):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    block = libc.malloc(size)
    ctypes.memset(block, 1, size)
    libc.free(block)
    faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
print(json.dumps({"kept": kept, "faults": faults}))
"""

PAGES = (64 << 20) // 4096


def probe(*args: str, code: str = PROBE, **env: str) -> dict:
    """``code`` run in a fresh interpreter with ``args``, without the caller's allocator settings
    (plus ``env``); its JSON line."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("MALLOC_", "GLIBC_TUNABLES"))}
    done = subprocess.run(
        [sys.executable, "-c", code, *args], env={**clean, **env}, capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout)


def test_a_freed_block_is_reused_without_page_faults():
    result = probe()
    assert result["kept"] is True
    first, second = result["faults"]
    assert first >= PAGES // 2  # the first use maps new pages
    assert second < PAGES // 100  # the second reuses them


@pytest.mark.parametrize(
    "setting",
    [{"MALLOC_MMAP_MAX_": "65536"}, {"GLIBC_TUNABLES": "glibc.malloc.mmap_max=65536"}],  # glibc's default
    ids=["MALLOC_MMAP_MAX_", "GLIBC_TUNABLES"],
)
def test_the_users_own_allocator_settings_are_left_alone(setting):
    result = probe(**setting)
    assert result["kept"] is False
    assert all(faults >= PAGES // 2 for faults in result["faults"])  # mapped, unmapped, mapped again


def test_tunables_of_other_parts_of_glibc_do_not_stop_it():
    assert probe(GLIBC_TUNABLES="glibc.cpu.hwcap_mask=0")["kept"] is True


HOLE = """
import ctypes, json, os, sys
import torch
from grue_bench.runner import host_memory

assert host_memory.keep_freed_memory()
host_memory.LOW_MEMORY_FRACTION = 0.0  # never short of memory
weight = torch.nn.Parameter(torch.ones(1))
optimizer = torch.optim.SGD([weight], lr=0.1)
weight.sum().backward()
optimizer.step()  # its first step's imports and state, before the hole is made
libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = [ctypes.c_void_p]

def resident_mib():
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") >> 20

hole = libc.malloc(256 << 20)
ctypes.memset(hole, 1, 256 << 20)
above = libc.malloc(8 << 20)  # above the hole: the heap's top cannot shrink past it
ctypes.memset(above, 1, 8 << 20)
libc.free(hole)
freed = resident_mib()
host_memory.LOW_MEMORY_FRACTION = float(sys.argv[1])  # 1.0: always short of memory; 0.0: never
optimizer.step() if sys.argv[2] == "step" else host_memory.hand_back_when_short()
print(json.dumps({"freed": freed, "after_step": resident_mib()}))
"""


@pytest.mark.parametrize("by", ["step", "call"], ids=["an optimizer step", "an evaluation batch's call"])
@pytest.mark.parametrize("short", [True, False], ids=["short of memory", "memory to spare"])
def test_the_heaps_free_pages_are_handed_back_only_when_memory_is_short(short, by):
    result = probe("1.0" if short else "0.0", by, code=HOLE)
    if short:
        assert result["after_step"] < result["freed"] - 240  # the 256 MiB hole handed back
    else:
        assert result["after_step"] >= result["freed"] - 8  # still resident, for the next step


def test_a_process_that_did_not_keep_freed_memory_hands_nothing_back(monkeypatch):
    from grue_bench.runner import host_memory

    monkeypatch.setattr(host_memory, "_hook", None)
    monkeypatch.setattr(host_memory, "memory_is_short", lambda: pytest.fail("memory read without need"))
    host_memory.hand_back_when_short()  # neither reads memory nor trims (glibc's own settings stand)


def fake_proc(tmp_path, total_kib: int, available_kib: int, limit: str | None = None, used: int = 0):
    meminfo = tmp_path / "meminfo"
    meminfo.write_text(f"MemTotal: {total_kib} kB\nMemFree: 1 kB\nMemAvailable: {available_kib} kB\n")
    cgroup = tmp_path / "cgroup"
    cgroup.mkdir()
    if limit is not None:
        (cgroup / "memory.max").write_text(limit + "\n")
        (cgroup / "memory.current").write_text(f"{used}\n")
    return meminfo, cgroup


@pytest.mark.parametrize(
    ("available_kib", "limit", "used", "short"),
    [
        (6 << 20, None, 0, False),  # 6 of 16 GiB available: 37.5%
        (3 << 20, None, 0, True),  # 3 of 16: 18.75%
        (6 << 20, "max", 0, False),  # a cgroup without a limit
        (6 << 20, str(8 << 30), 5 << 30, False),  # 3 of the cgroup's 8 GiB left: 37.5%
        (6 << 20, str(8 << 30), 7 << 30, True),  # 1 of 8 left, though the machine has 6 GiB
    ],
)
def test_memory_is_short_under_a_quarter_of_the_machine_or_of_its_cgroups_limit(
    tmp_path, available_kib, limit, used, short
):
    meminfo, cgroup = fake_proc(tmp_path, 16 << 20, available_kib, limit, used)
    assert memory_is_short(meminfo, cgroup) is short


def test_a_kernel_without_memavailable_is_never_short(tmp_path):
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal: 16777216 kB\nMemFree: 1 kB\n")
    assert memory_is_short(meminfo, tmp_path) is False
