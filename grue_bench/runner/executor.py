"""Executing a grid of runs: in this process, in local worker processes, or as Ray tasks.

This process is the store's one writer. Workers send what their runs record as messages; a
run's final results and its 'finished' status are written in one transaction. A failing run is
recorded as failed with its error and the grid goes on. The grid holds its runs in the store while
it lives (``grue_bench.store.claims``): a run another live grid holds is left to it and reported.
"""

from __future__ import annotations

import logging
import multiprocessing
import multiprocessing.queues
import os
import queue as queue_module
import shutil
import signal
import sqlite3
import sys
import threading
import traceback
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from tqdm.auto import tqdm

from grue_bench import plugins
from grue_bench.classifiers.judges import CURRENT_JUDGES
from grue_bench.resolve.grid import RunSpec
from grue_bench.runner.prepare import asset_key, error_text, prepare_here, prepare_in
from grue_bench.runner.recorder import MessageRecorder, Recorder, StoreRecorder, apply_message
from grue_bench.runner.run import RunOutcome, execute, spec_dir
from grue_bench.store import Store
from grue_bench.store.claims import HEARTBEAT_S, Owner

log = logging.getLogger(__name__)


@dataclass
class GridReport:
    """What happened to each run of the grid."""

    finished: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    durations: dict[str, float] = field(default_factory=dict)
    elsewhere: dict[str, str] = field(default_factory=dict)
    """Runs left to another live process that holds them: label -> that process (pid and host)."""


def _guarded(
    spec: RunSpec, recorder: Recorder, output_root: Path
) -> tuple[str, RunOutcome | None, str | None]:
    """Execute a run; any failure becomes an error text (recorded as a failed run; the grid goes on)."""
    try:
        return spec.label, execute(spec, recorder, output_root), None
    except Exception as exc:
        log.debug("%s failed:\n%s", spec.label, traceback.format_exc())
        return spec.label, None, error_text(exc)


_DIED = (
    "its worker process died twice while running it (killed by the operating system, e.g. out of "
    "memory); run the same command again to resume it, or give it more memory or fewer --jobs"
)

_MESSAGES: multiprocessing.queues.Queue | None = None
"""In a worker process: the queue to the writer (handed over when the worker starts)."""


def _init_worker(
    log_level: int, messages: multiprocessing.queues.Queue, threads: int, writer_pid: int
) -> None:
    """Pool initializer: keep the writer's queue, log like the writer, share the cores (``jobs``
    workers with every core each would oversubscribe them); and on Linux, die when the writer
    dies (even by SIGKILL), so no orphan keeps writing into a run folder the next attempt resumes."""
    global _MESSAGES
    _MESSAGES = messages
    import torch

    torch.set_num_threads(threads)
    logging.basicConfig(
        level=log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s", datefmt="%H:%M:%S"
    )
    if sys.platform.startswith("linux"):
        import ctypes

        pr_set_pdeathsig = 1
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)
        if os.getppid() != writer_pid:  # the writer died before the signal was armed
            os._exit(1)


def _worker(
    spec: RunSpec, output_root: str, send: Callable[[tuple], None], live: bool = True
) -> tuple[str, RunOutcome | None, str | None]:
    """Run one spec away from the writer; what it records goes back to the writer as messages."""
    return _guarded(spec, MessageRecorder(key=spec.label, send=send, live=live), Path(output_root))


def _process_task(spec: RunSpec, output_root: str) -> tuple[str, RunOutcome | None, str | None]:
    """A run in a pool worker. Its last message says it has sent everything (a queue is FIFO per
    sender), so the writer records the outcome only after every row of the run."""
    result = _worker(spec, output_root, _MESSAGES.put)
    _MESSAGES.put((spec.label, "end", ()))
    return result


class GridExecutor:
    """Starts or resumes every run of a grid and records the results."""

    def __init__(self, store: Store, output_root: Path, force: bool = False) -> None:
        self.store = store
        self.output_root = output_root
        self.force = force
        self.report = GridReport()
        self.run_ids: dict[str, int] = {}

    def _start(self, spec: RunSpec) -> bool:
        """Register and claim the run; False when it is already done (skipped) or another live
        process holds it (left to that process). A run the store starts afresh (new to it, or
        ``--force``) starts in an empty folder: what an earlier run left in it (a checkpoint, a
        warm start) would otherwise be resumed."""
        record = self.store.start_run(
            task=spec.task,
            task_version=plugins.TASKS.get(spec.task).version,
            alg=spec.alg,
            seed=spec.seed,
            profile=spec.config.profile,
            model=None,
            config=spec.recorded_config,
            config_hash=spec.config_hash,
            output_dir=str(self.output_root),
            force=self.force,
            judges=CURRENT_JUDGES,
        )
        if record.done:
            self.report.skipped.append(spec.label)
            return False
        holder = record.owner
        if holder is not None and holder != Owner.current():
            self.report.elsewhere[spec.label] = holder.describe()
            return False
        if record.afresh:
            self._empty_folder(spec)
        self.run_ids[spec.label] = record.id
        return True

    def _empty_folder(self, spec: RunSpec) -> None:
        folder = spec_dir(self.output_root, spec)
        if folder.is_dir() and any(folder.iterdir()):
            log.info("%s: starting afresh, the files an earlier run left in %s removed", spec.label, folder)
            shutil.rmtree(folder)

    def _record(self, label: str, outcome: RunOutcome | None, error: str | None) -> None:
        run_id = self.run_ids[label]
        if outcome is None:
            self.store.fail_run(run_id, error or "unknown error")
            self.report.failed[label] = error or "unknown error"
            log.error("run %s failed: %s", label, error)
            return
        self.store.finish_run(
            run_id,
            iteration=outcome.final_iteration,
            final_metrics=outcome.final_metrics,
            generations=outcome.final_generations,
            model=outcome.model_name,
            skipped_metrics=outcome.skipped_metrics,
        )
        self.report.finished.append(label)
        self.report.durations[label] = outcome.duration_s

    def run(
        self, specs: Sequence[RunSpec], jobs: int = 1, executor: str = "local", ray_address: str | None = None
    ) -> GridReport:
        """Execute the runs not done and not held by another live process; the runs this grid
        holds are kept alive by a heartbeat while it lives, and let go if it stops early."""
        with self.holding():
            return self._run(specs, jobs, executor, ray_address)

    @contextmanager
    def holding(self) -> Iterator[None]:
        """Keep this grid's runs alive by a heartbeat while the block runs; let them go after."""
        with keep_alive(self.store.path):
            try:
                yield
            finally:
                self.store.release_runs()

    def claim(self, specs: Sequence[RunSpec]) -> list[RunSpec]:
        """The runs this grid executes: those not done and not held by another live process."""
        todo = [spec for spec in specs if self._start(spec)]
        if self.report.skipped:
            log.info("skipping %d finished run(s); use --force to run them again", len(self.report.skipped))
        if self.report.elsewhere:
            log.warning(
                "leaving %d run(s) to the other live processes executing them: %s",
                len(self.report.elsewhere),
                ", ".join(f"{label} ({holder})" for label, holder in self.report.elsewhere.items()),
            )
        return todo

    def _run(self, specs: Sequence[RunSpec], jobs: int, executor: str, ray_address: str | None) -> GridReport:
        todo = self.claim(specs)
        if not todo:
            return self.report
        with tqdm(total=len(todo), desc="grid", unit="run") as bar:
            if executor == "ray":
                self._run_ray(self.set_up(todo, prepare_here(todo), bar), bar, ray_address)
            elif jobs > 1:
                self._run_processes(todo, bar, jobs)
            else:
                self._run_here(todo, bar)
        return self.report

    def set_up(self, todo: Sequence[RunSpec], errors: dict[str, str], bar) -> list[RunSpec]:
        """The runs whose assets are ready; the runs of a group whose assets failed (a hub model
        offline, ...) are recorded failed with its error, never left queued."""
        ready = []
        for spec in todo:
            error = errors.get(asset_key(spec))
            if error is None:
                ready.append(spec)
            else:
                self._record(spec.label, None, error)
                bar.update(1)
        return ready

    def _run_here(self, todo: Sequence[RunSpec], bar) -> None:
        for spec in todo:
            self.execute_here(spec)
            bar.update(1)

    def execute_here(self, spec: RunSpec) -> bool:
        """Execute a claimed run in this process, recording into the store; False if it failed."""
        recorder = StoreRecorder(self.store, self.run_ids[spec.label])
        label, outcome, error = _guarded(spec, recorder, self.output_root)
        self._record(label, outcome, error)
        return outcome is not None

    def _apply(self, message: tuple) -> None:
        label, method, args = message
        apply_message(StoreRecorder(self.store, self.run_ids[label]), method, args)

    def _run_processes(self, todo: Sequence[RunSpec], bar, jobs: int) -> None:
        """Runs in ``jobs`` worker processes. If a worker dies (killed by the OS, e.g. out of
        memory), the pool breaks: runs that had not started go to a fresh pool, runs that were
        executing are retried once (resuming from their checkpoint), then recorded as failed."""
        context = multiprocessing.get_context("spawn")
        messages = context.Queue()
        init = (
            logging.getLogger().getEffectiveLevel(),
            messages,
            max(1, (multiprocessing.cpu_count() or 1) // jobs),
            os.getpid(),
        )
        interrupted: dict[str, int] = {}
        pending, prepared = list(todo), False
        while pending:
            with ProcessPoolExecutor(jobs, context, initializer=_init_worker, initargs=init) as pool:
                if not prepared:
                    pending = self.set_up(pending, prepare_in(pool, todo), bar)
                    prepared = True
                lost = self._drain(pool, pending, messages, bar)
            pending = []
            for spec, began in lost:
                if began:
                    interrupted[spec.label] = interrupted.get(spec.label, 0) + 1
                    if interrupted[spec.label] > 1:
                        self._record(spec.label, None, _DIED)
                        bar.update(1)
                        continue
                pending.append(spec)

    def _drain(self, pool, specs: Sequence[RunSpec], messages, bar) -> list[tuple[RunSpec, bool]]:
        """Submit ``specs`` and record their outcomes; on a broken pool, return the runs left
        with whether each had begun executing."""
        futures = {
            spec.label: (spec, pool.submit(_process_task, spec, str(self.output_root))) for spec in specs
        }
        begun: set[str] = set()
        ended: set[str] = set()
        broken = False
        while futures:
            self._take_messages(messages, begun, ended, wait=0.5)
            for label in [label for label, (_, future) in futures.items() if future.done()]:
                future = futures[label][1]
                if isinstance(future.exception(), BrokenProcessPool):
                    broken = True
                elif label in ended:
                    del futures[label]
                    self._record(*future.result())
                    bar.update(1)
            if broken:  # every message that will ever come is applied: what is left is lost
                self._take_messages(messages, begun, ended, wait=0.2)
                for label in [
                    label
                    for label, (_, future) in futures.items()
                    if label in ended and future.done() and not future.exception()
                ]:
                    self._record(*futures.pop(label)[1].result())
                    bar.update(1)
                return [(spec, spec.label in begun) for spec, _ in futures.values()]
        return []

    def _take_messages(self, messages, begun: set[str], ended: set[str], wait: float) -> None:
        """Wait up to ``wait`` seconds for a message, then apply it and every one queued behind it."""
        while True:
            try:
                label, method, args = messages.get(timeout=wait)
            except queue_module.Empty:
                return
            if method == "end":
                ended.add(label)
            else:
                begun.add(label)
                self._apply((label, method, args))
            wait = 0.01

    def _run_ray(self, todo: Sequence[RunSpec], bar, ray_address: str | None) -> None:
        import ray

        if not ray.is_initialized():
            if ray_address:
                ray.init(address=ray_address)
            else:
                ray.init(
                    num_cpus=max(1, multiprocessing.cpu_count()), include_dashboard=False, log_to_driver=False
                )
        remote = ray.remote(num_cpus=1)(_ray_task)
        futures = {remote.remote(spec, str(self.output_root)): spec.label for spec in todo}
        while futures:
            done, _ = ray.wait(list(futures), num_returns=1)
            for future in done:
                futures.pop(future)
                messages, (label, outcome, error) = ray.get(future)
                for message in messages:
                    self._apply(message)
                self._record(label, outcome, error)
                bar.update(1)


@contextmanager
def keep_alive(store_path: Path, every: float = HEARTBEAT_S) -> Iterator[None]:
    """While the block runs, a thread refreshes the heartbeat of the runs this process holds, so a
    grid on another host does not take them over; a thread, because a run executing here may not
    come back to the grid's loop for longer than the lease."""
    stop = threading.Event()
    beating = threading.Thread(
        target=_beat, args=(store_path, every, stop), name="grue-heartbeat", daemon=True
    )
    beating.start()
    try:
        yield
    finally:
        stop.set()
        beating.join()


def _beat(store_path: Path, every: float, stop: threading.Event) -> None:
    """The heartbeat loop, on its own connection (a SQLite connection belongs to its thread); a
    beat that fails (the store locked for long) is logged, the next one may succeed."""

    with Store(store_path) as store:
        while not stop.wait(every):
            try:
                store.heartbeat()
            except sqlite3.Error as error:
                log.warning(
                    "could not refresh the heartbeat of this grid's runs in %s: %s", store_path, error
                )


def _ray_task(spec: RunSpec, output_root: str) -> tuple[list, tuple]:
    """A run as a Ray task: its messages come back with its result to the one writer."""
    recorder_messages: list = []
    result = _worker(spec, output_root, recorder_messages.append, live=False)
    return recorder_messages, result
