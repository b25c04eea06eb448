"""A run's process reuses the memory it frees: a large block freed and asked for again costs no new
page faults (glibc's default maps and unmaps it, and faults in every page again)."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys

import pytest

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


def probe(**env: str) -> dict:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("MALLOC_", "GLIBC_TUNABLES"))}
    done = subprocess.run(
        [sys.executable, "-c", PROBE], env={**clean, **env}, capture_output=True, text=True, check=True
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
