"""Which process holds a run of the store, and whether that process is still alive.

A grid claims each of its runs for its own process when it registers them, so a second grid on
the same store leaves them alone while that process lives, and takes them over (resuming from
their checkpoint) once it has died. On the holder's own host, "alive" is exact: the pid exists
and is the same process (Linux: the same start time, so a pid reused after a crash does not
count). Another host cannot see the process; there the holder's heartbeat, refreshed every
``HEARTBEAT_S`` while it lives, must be younger than ``LEASE_S`` (the hosts' clocks are assumed
to agree within minutes).
"""

from __future__ import annotations

import functools
import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

HEARTBEAT_S = 30.0
"""How often a grid refreshes the heartbeat of the runs it holds."""
LEASE_S = 300.0
"""How long a heartbeat keeps a run for its holder, seen from another host (ten missed beats)."""
OWNER_COLUMNS = {
    "owner_host": "TEXT",
    "owner_pid": "INTEGER",
    "owner_started": "TEXT",
    "heartbeat_at": "TEXT",
}
"""The ``runs`` columns (with their SQL types) that record who holds a run, and its heartbeat."""
NO_OWNER = dict.fromkeys(OWNER_COLUMNS)
"""Those columns for a run no process holds."""


def _proc_stat(pid: int) -> list[str] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name (state first), or None when
    there is no such process or no ``/proc`` (the name may hold spaces and parentheses)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text[text.rfind(")") + 2 :].split()


_STATE, _START_TICKS = 0, 19
"""Indexes in ``_proc_stat``: the state ('Z' for a zombie), the start time in clock ticks since
boot (unlike a wall-clock start time, never moved by a clock adjustment)."""


def _pid_exists(pid: int) -> bool:
    """Whether some process has this pid (without ``/proc``: signal 0 delivers nothing)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


@dataclass(frozen=True)
class Owner:
    """A process that holds runs: its host, pid and start time (None without ``/proc``)."""

    host: str
    pid: int
    started: str | None

    @classmethod
    def current(cls) -> Owner:
        """This process."""
        return _current(os.getpid())

    @classmethod
    def of(cls, pid: int) -> Owner:
        """The process with this pid, as it is now."""
        fields = _proc_stat(pid)
        return cls(socket.gethostname(), pid, None if fields is None else fields[_START_TICKS])

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Owner | None:
        """The owner recorded in a ``runs`` row, or None when no process holds it."""
        if row["owner_pid"] is None:
            return None
        return cls(row["owner_host"], row["owner_pid"], row["owner_started"])

    def as_row(self) -> dict[str, Any]:
        """The ``runs`` columns that record this owner."""
        return {"owner_host": self.host, "owner_pid": self.pid, "owner_started": self.started}

    def describe(self) -> str:
        return f"pid {self.pid} on host {self.host}"

    def is_alive(self, heartbeat_at: str | None, now: datetime) -> bool:
        """Whether this process still lives: checked directly on its own host, by the age of its
        heartbeat (an ISO time) from another."""
        if self.host == socket.gethostname():
            return self._alive_here()
        if heartbeat_at is None:
            return False
        return (now - datetime.fromisoformat(heartbeat_at)).total_seconds() < LEASE_S

    def _alive_here(self) -> bool:
        if self.started is None:
            return _pid_exists(self.pid)
        fields = _proc_stat(self.pid)
        return fields is not None and fields[_STATE] != "Z" and fields[_START_TICKS] == self.started


@functools.cache
def _current(pid: int) -> Owner:
    """Read once per process; keyed by pid, so a forked child is its own owner."""
    return Owner.of(pid)
