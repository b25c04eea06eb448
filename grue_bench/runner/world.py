"""How many processes this run is one of (the launcher's ``WORLD_SIZE``, 1 when run alone) and
whether this one leads (``RANK`` 0: it records, evaluates and saves).

A leaf module, so that what depends on the number of processes (the launch checks, a warm
start's key) reads it one way without importing the launch machinery.
"""

from __future__ import annotations

import os


def world_size() -> int:
    """The number of processes a distributed launcher (``accelerate launch``, torchrun) started
    this one among; 1 outside a launch."""
    return int(os.environ.get("WORLD_SIZE", "1"))


def is_lead_process() -> bool:
    """Whether this process leads its run: the first of a launch (``RANK`` 0), or the only one."""
    return int(os.environ.get("RANK", "0")) == 0
