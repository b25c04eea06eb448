"""Where a run's results go while it runs: straight into the store, or to the one writer process.

The store has a single writer. A run executed in the writer's own process records directly;
a run in a worker process (``--jobs``) or a Ray task sends messages the writer applies.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from grue_bench.rl.checkpoint import promote_checkpoint
from grue_bench.store import Store


class Recorder(Protocol):
    live: bool
    """Whether the writer applies what is recorded while the run goes on (not only at its end)."""

    def begin(self) -> None: ...

    def metrics(self, iteration: int, split: str, values: dict[str, float]) -> None: ...

    def generations(self, iteration: int, split: str, rows: list[dict[str, Any]]) -> None: ...

    def checkpoint(self, iteration: int, run_dir: str) -> None: ...


@dataclass
class StoreRecorder:
    """Writes to the store now (the run runs in the writer process)."""

    store: Store
    run_id: int
    live: bool = True

    def begin(self) -> None:
        self.store.mark_executing(self.run_id)

    def metrics(self, iteration: int, split: str, values: dict[str, float]) -> None:
        self.store.log_metrics(self.run_id, iteration, split, values)

    def generations(self, iteration: int, split: str, rows: list[dict[str, Any]]) -> None:
        self.store.add_generations(self.run_id, iteration, split, rows)

    def checkpoint(self, iteration: int, run_dir: str) -> None:
        """Every row the run sent before this is stored: its staged checkpoint becomes the resume point."""

        if promote_checkpoint(Path(run_dir), iteration):
            self.store.set_checkpoint(self.run_id, iteration)


@dataclass
class MessageRecorder:
    """Turns what a run records into ``(key, method, args)`` messages for the writer; ``send``
    forwards each (a queue's put, or a list's append for a Ray task)."""

    key: str
    send: Callable[[tuple], None]
    live: bool = True
    """False when the messages reach the writer only after the run has ended (a Ray task's)."""

    def _emit(self, method: str, *args: Any) -> None:
        self.send((self.key, method, args))

    def begin(self) -> None:
        self._emit("begin")

    def metrics(self, iteration: int, split: str, values: dict[str, float]) -> None:
        self._emit("metrics", iteration, split, values)

    def generations(self, iteration: int, split: str, rows: list[dict[str, Any]]) -> None:
        self._emit("generations", iteration, split, rows)

    def checkpoint(self, iteration: int, run_dir: str) -> None:
        self._emit("checkpoint", iteration, run_dir)


def apply_message(recorder: Recorder, method: str, args: tuple) -> None:
    """Replay a worker's message on the writer's recorder."""
    getattr(recorder, method)(*args)
