"""A tokenizer cutting on a given side for one block of calls."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any


@contextlib.contextmanager
def truncating_on(tokenizer: Any, side: str) -> Iterator[Any]:
    """``tokenizer`` cuts on ``side`` inside the block; its own side (the config's
    ``tokenizer.truncation_side``) is restored after, as RL4LMs does, so that its other users (and a
    shared test's key, which reads it) keep it."""
    own = tokenizer.truncation_side
    tokenizer.truncation_side = side
    try:
        yield tokenizer
    finally:
        tokenizer.truncation_side = own
