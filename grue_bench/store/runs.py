"""The ``runs`` table: a run's lifecycle, the process holding it, and ``RunRecord``.

``start_run`` registers a run as 'queued' (a grid registers all its runs up front) and claims it
for the calling process (see ``grue_bench.store.claims``); ``mark_executing`` makes it 'running'
when a worker takes it up; ``finish_run``/``fail_run`` end it and release the claim. A run is only
marked finished together with its final rows, in one transaction.

``start_run`` on a key already stored returns a run another live process holds unchanged (the
caller leaves it to that process, even with ``force=True``), queues a 'queued', 'running' (its
process died) or 'failed' run again for a resume (its rows, provenance, checkpoint and the time
its attempts ran are kept: a finished run's duration is that of all its attempts),
returns a finished one unchanged (the caller skips it), and with ``force=True`` deletes the run's
metrics and generations and starts it afresh. The record it returns says whether the run starts
afresh (``RunRecord.afresh``): then nothing an earlier attempt left on disk may be resumed.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from sqlite_utils import Database

from grue_bench.paths import run_dir
from grue_bench.store.claims import NO_OWNER, Owner
from grue_bench.store.provenance import environment_info
from grue_bench.store.rows import Generation, checked_metrics, write_generations, write_metrics
from grue_bench.store.schema import timestamp, transaction

log = logging.getLogger(__name__)

DONE = ("finished", "submitted")
"""Statuses of a run whose results are complete: re-running skips it."""


@dataclass(frozen=True)
class RunRecord:
    """One row of ``runs``, with its JSON columns parsed."""

    id: int
    key: str
    task: str
    task_version: int | None
    alg: str
    seed: int
    profile: str
    model: str | None
    config: dict[str, Any]
    config_hash: str
    status: str
    source: str
    git_commit: str | None
    versions: dict[str, Any]
    started_at: str
    finished_at: str | None
    duration_s: float | None
    """Seconds its attempts ran: all of them once it has ended; the earlier ones while it runs again."""
    error: str | None
    output_dir: str | None
    last_checkpoint_iteration: int | None
    submission: dict[str, Any] | None
    owner_host: str | None
    owner_pid: int | None
    owner_started: str | None
    heartbeat_at: str | None
    skipped_metrics: dict[str, str]
    """The metrics the run could not compute, each with the reason (empty when none)."""
    afresh: bool = field(default=False, compare=False)
    """Not a column, nor compared: true only on the record ``start_run`` returns when it inserted
    the run or restarted it (``force``), so that nothing an earlier attempt left may be resumed."""

    @property
    def artifacts(self) -> Path | None:
        """The run's artifact folder (``paths.run_dir`` under its output folder), None when the
        run records no output folder (a submitted baseline)."""
        if not self.output_dir:
            return None
        return run_dir(Path(self.output_dir), self.task, self.alg, self.seed, self.config_hash)

    @property
    def done(self) -> bool:
        """Whether the run's results are complete (re-running skips it)."""
        return self.status in DONE

    @property
    def owner(self) -> Owner | None:
        """The process holding the run (its grid queued or is executing it), or None."""
        return Owner.from_row(vars(self))

    @classmethod
    def from_row(cls, row: Mapping[str, Any], *, afresh: bool = False) -> RunRecord:
        """Build from a ``runs`` row."""
        values = {f.name: row[f.name] for f in fields(cls) if f.name != "afresh"}
        for name in ("config", "versions", "submission", "skipped_metrics"):
            if values[name] is not None:
                values[name] = json.loads(values[name])
        values["skipped_metrics"] = values["skipped_metrics"] or {}
        return cls(**values, afresh=afresh)


def run_key(task: str, alg: str, seed: int, config_hash: str) -> str:
    """The identity of a run: sha256 of ``task|alg|seed|config_hash``."""
    return hashlib.sha256(f"{task}|{alg}|{seed}|{config_hash}".encode()).hexdigest()


class RunsTable:
    """The ``runs`` table of a store (a mixin of ``Store``)."""

    db: Database
    path: Path

    def start_run(
        self,
        *,
        task: str,
        task_version: int | None,
        alg: str,
        seed: int,
        profile: str,
        model: str | None,
        config: dict[str, Any],
        config_hash: str,
        output_dir: str | Path | None = None,
        source: str = "run",
        submission: dict[str, Any] | None = None,
        force: bool = False,
        judges: dict[str, str] | None = None,
    ) -> RunRecord:
        """Insert a 'queued' run held by this process; one with the same key is queued again for
        a resume (and claimed), or returned as is if done or held by another live process.
        ``judges`` (kind -> name) are the offline judges that score it, kept in its ``versions``."""
        key = run_key(task, alg, seed, config_hash)
        environment = environment_info()
        if judges is not None:
            environment["offline_judges"] = judges
        row = {
            "key": key,
            "task": task,
            "task_version": task_version,
            "alg": alg,
            "seed": seed,
            "profile": profile,
            "model": model,
            "config": json.dumps(config, sort_keys=True),
            "config_hash": config_hash,
            "status": "queued",
            "source": source,
            "git_commit": environment.pop("git_commit"),
            "versions": json.dumps(environment, sort_keys=True),
            "started_at": timestamp(),
            "finished_at": None,
            "duration_s": None,
            "error": None,
            "output_dir": None if output_dir is None else str(output_dir),
            "last_checkpoint_iteration": None,
            "submission": None if submission is None else json.dumps(submission, sort_keys=True),
            "skipped_metrics": None,
        }
        with transaction(self.db):  # the check and the claim in one: of two racing processes, one wins
            existing = self._run_row("key", key)
            holder = None if existing is None else _live_holder(existing)
            claim = {**Owner.current().as_row(), "heartbeat_at": timestamp()}
            if existing is None:
                self.db["runs"].insert({**row, **claim})
                log.info("run %s started: %s %s seed %d", key[:10], task, alg, seed)
            elif holder is not None:
                log.info(
                    "run %s is %s in another process (%s): left to it",
                    key[:10],
                    existing["status"],
                    holder.describe(),
                )
                return RunRecord.from_row(existing)
            elif force:
                self.db["metrics"].delete_where("run_id = ?", [existing["id"]])
                self.db["generations"].delete_where("run_id = ?", [existing["id"]])
                self.db["runs"].update(existing["id"], {**row, **claim})
                log.info("run %s restarted (force): earlier rows deleted", key[:10])
            elif existing["status"] in DONE:
                log.info("run %s is %s: skipped", key[:10], existing["status"])
                return RunRecord.from_row(existing)
            else:
                # Resume: keep the provenance, the checkpoint and the time spent so far (the run's
                # duration adds this attempt's when it ends); started_at is reset when it executes.
                spent = _time_spent(existing)
                resumed = {"status": "queued", "error": None, "finished_at": None, "duration_s": spent}
                self.db["runs"].update(existing["id"], {**resumed, **claim})
                _log_takeover(existing)
                log.info(
                    "run %s resumed (was %s, checkpoint %s)",
                    key[:10],
                    existing["status"],
                    existing["last_checkpoint_iteration"],
                )
            record = self._run_row("key", key)
        assert record is not None
        return RunRecord.from_row(record, afresh=existing is None or force)

    def get_run(self, key: str) -> RunRecord | None:
        """The run with this key, or None."""
        row = self._run_row("key", key)
        return None if row is None else RunRecord.from_row(row)

    def runs(
        self, task: str | None = None, alg: str | None = None, status: str | None = None
    ) -> list[RunRecord]:
        """Runs matching every filter given, ordered by task, alg, seed."""
        given = {
            column: value for column, value in (("task", task), ("alg", alg), ("status", status)) if value
        }
        where = " AND ".join(f"{column} = :{column}" for column in given)
        rows = self.db["runs"].rows_where(where or None, given or None, order_by="task, alg, seed, id")
        return [RunRecord.from_row(row) for row in rows]

    def mark_executing(self, run_id: int) -> None:
        """The run (or this attempt at it) starts executing now: 'running', its duration counted
        from here, not from the time its grid queued it (it may wait behind others)."""
        with transaction(self.db):
            self.db["runs"].update(run_id, {"status": "running", "started_at": timestamp()})

    def heartbeat(self) -> int:
        """Refresh the heartbeat of the runs this process holds, which keeps them from a grid on
        another host (it cannot see this process); returns how many there are."""
        where, params = _held_here()
        with transaction(self.db):
            beat = self.db.execute(f"UPDATE runs SET heartbeat_at = ? WHERE {where}", [timestamp(), *params])
        return beat.rowcount

    def release_runs(self) -> None:
        """Let go of the runs this process still holds (its grid stops before they end, e.g. on
        an error), so the next grid takes them over even while this process lives on."""
        where, params = _held_here()
        assignments = ", ".join(f"{name} = NULL" for name in NO_OWNER)
        with transaction(self.db):
            self.db.execute(f"UPDATE runs SET {assignments} WHERE {where}", params)

    def set_checkpoint(self, run_id: int, iteration: int) -> None:
        """Record the last iteration whose checkpoint is saved (where a resume starts)."""
        with transaction(self.db):
            self.db["runs"].update(run_id, {"last_checkpoint_iteration": iteration})

    def finish_run(
        self,
        run_id: int,
        *,
        iteration: int | None = None,
        final_metrics: Mapping[str, Mapping[str, float]] | None = None,
        generations: Mapping[str, Sequence[Generation]] | None = None,
        model: str | None = None,
        skipped_metrics: Mapping[str, str] | None = None,
    ) -> None:
        """Write the final rows (per split, at ``iteration``) and mark the run done, atomically;
        ``model`` records what was trained (known once the run has loaded it), ``skipped_metrics``
        the metrics it could not compute, each with the reason."""
        if (final_metrics or generations) and iteration is None:
            raise ValueError("finish_run needs iteration= to write final metrics or generations")
        checked = {
            split: checked_metrics(run_id, iteration, split, values)
            for split, values in (final_metrics or {}).items()
        }
        with transaction(self.db):
            for split, values in checked.items():
                write_metrics(self.db, run_id, iteration, split, values)
            for split, rows in (generations or {}).items():
                write_generations(self.db, run_id, iteration, split, rows)
            row = self._require_run(run_id)
            if model is not None:
                self.db["runs"].update(run_id, {"model": model})
            if skipped_metrics:
                self.db["runs"].update(run_id, {"skipped_metrics": json.dumps(dict(skipped_metrics))})
            status = "submitted" if row["source"] == "submission" else "finished"
            self._set_status(row, status)
        log.info("run %s %s", row["key"][:10], status)

    def fail_run(self, run_id: int, error: str) -> None:
        """Mark a run failed with its error (a later start resumes it)."""
        with transaction(self.db):
            row = self._require_run(run_id)
            self._set_status(row, "failed", error=error)
        log.warning("run %s failed: %s", row["key"][:10], _first_line(error))

    def _run_row(self, column: str, value: object) -> dict[str, Any] | None:
        return next(self.db["runs"].rows_where(f"{column} = ?", [value]), None)

    def _require_run(self, run_id: int) -> dict[str, Any]:
        row = self._run_row("id", run_id)
        if row is None:
            raise KeyError(f"no run with id {run_id} in {self.path}")
        return row

    def _set_status(self, row: Mapping[str, Any], status: str, error: str | None = None) -> None:
        finished = datetime.now(timezone.utc)
        attempt = (finished - datetime.fromisoformat(row["started_at"])).total_seconds()
        duration = (row["duration_s"] or 0.0) + attempt  # with the earlier attempts' of a resumed run
        changes = {
            "status": status,
            "error": error,
            "finished_at": timestamp(finished),
            "duration_s": duration,
            **NO_OWNER,  # an ended run is no process's: a later start may take it up
        }
        self.db["runs"].update(row["id"], changes)


def _time_spent(row: Mapping[str, Any]) -> float | None:
    """The seconds a run's attempts so far ran, for its resume: a failed attempt recorded its own
    (with the earlier ones); one whose process died ran until its last heartbeat (``HEARTBEAT_S``
    apart, so up to that much is missed); one never executed ran none."""
    spent = row["duration_s"] or 0.0
    if row["status"] == "running" and row["heartbeat_at"]:
        span = datetime.fromisoformat(row["heartbeat_at"]) - datetime.fromisoformat(row["started_at"])
        spent += max(span.total_seconds(), 0.0)
    return spent or None


def _live_holder(row: Mapping[str, Any]) -> Owner | None:
    """The other process holding this run, if it is alive: the run is that process's to execute."""
    owner = Owner.from_row(row)
    if owner is None or owner == Owner.current():
        return None
    return owner if owner.is_alive(row["heartbeat_at"], datetime.now(timezone.utc)) else None


def _log_takeover(row: Mapping[str, Any]) -> None:
    """Say so when a run is taken from a process that died holding it."""
    owner = Owner.from_row(row)
    if owner is not None and owner != Owner.current():
        log.warning("run %s: %s held it and is gone; taking it over", row["key"][:10], owner.describe())


def _held_here() -> tuple[str, list[Any]]:
    """A WHERE clause (and its parameters) for the runs this process holds."""
    owner = Owner.current().as_row()
    return " AND ".join(f"{name} IS ?" for name in owner), list(owner.values())


def _first_line(text: str | None) -> str:
    return (text or "").strip().splitlines()[0] if (text or "").strip() else ""
