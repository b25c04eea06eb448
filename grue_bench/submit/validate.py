"""Every check of a submission folder, with all problems collected and reported at once.

Nothing in a submission is ever executed: ``submission.yaml`` is read with a safe loader that
refuses Python tags and aliases (``metadata.py``), the generations are JSON lines checked with the
same ``load_predictions`` as ``grue eval`` (``generations.py``), and every path stays inside the
folder (``files.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from grue_bench import plugins
from grue_bench.data import Sample
from grue_bench.datapools import TaskPool
from grue_bench.errors import GrueError, Problem
from grue_bench.submit import files, metadata
from grue_bench.submit.format import (
    GENERATIONS_SUFFIX,
    METADATA_FILE,
    MIN_SEEDS,
    OPTIONAL_FILES,
    Submission,
    TaskEntry,
    generation_files,
)
from grue_bench.submit.generations import SeedGenerations, check_generations
from grue_bench.submit.problems import FORMAT_FIX


@dataclass
class TaskGenerations:
    """One task of a submission: its test samples and every seed's generations."""

    task: str
    task_version: int
    samples: list[Sample]
    seeds: dict[int, SeedGenerations] = field(default_factory=dict)


@dataclass
class ValidSubmission:
    """A submission that passed every check."""

    root: Path
    meta: Submission
    tasks: dict[str, TaskGenerations]


def validate(path: str | Path) -> ValidSubmission:
    """Check a submission folder (or its submission.yaml); GrueError listing every problem otherwise."""
    root = _root(Path(path))
    problems: list[Problem] = []
    listing = files.list_folder(root)
    problems += listing.problems
    data = metadata.read_metadata(root, listing, problems)
    tasks: dict[str, TaskGenerations] = {}
    meta = None
    if data is not None:
        meta = metadata.parse(data, problems)
        # Even when some keys are wrong, every task entry that parses is checked: all problems at once.
        entries = dict(meta.tasks) if meta is not None else metadata.task_entries(data)
        problems += metadata.check_identity(root, data)
        raw_tasks = data.get("tasks")
        unparsed = {str(t) for t in raw_tasks} - set(entries) if isinstance(raw_tasks, dict) else None
        problems += _check_layout(entries, listing, unparsed)
        for task_id, entry in entries.items():
            task = _check_task(root, task_id, entry, listing, problems)
            if task is not None:
                tasks[task_id] = task
    if problems:
        raise GrueError.many(problems, str(root))
    assert meta is not None
    return ValidSubmission(root, meta, tasks)


def _root(path: Path) -> Path:
    if path.name == METADATA_FILE and path.is_file():
        path = path.parent
    if not path.is_dir():
        raise GrueError(
            "submission folder not found" if not path.exists() else "is not a folder",
            source=str(path),
            fix=f"give the folder holding {METADATA_FILE} (baselines/<name>/)",
        )
    return path.resolve()


def _check_layout(
    entries: dict[str, TaskEntry], listing: files.Listing, unparsed: set[str] | None
) -> list[Problem]:
    """Declared paths stay inside the folder, no file serves two seeds, no undeclared file (files of
    ``unparsed`` task entries, or of all when ``tasks`` itself is broken, may be declared there)."""
    problems = []
    declared = generation_files(entries)
    owners: dict[str, list[str]] = {}
    for (task, seed), rel in declared.items():
        owners.setdefault(rel, []).append(f"{task} seed {seed}")
        key = f"{METADATA_FILE}: tasks.{task}.files.{seed}"
        why = files.check_relative(rel)
        if why is not None:
            fix = f"give a path such as {task}/seed{seed}.jsonl"
            problems.append(Problem(f"path '{rel}' {why}", key, fix))
        elif not rel.endswith(GENERATIONS_SUFFIX):
            problems.append(Problem(f"path '{rel}' must end with {GENERATIONS_SUFFIX}", key, FORMAT_FIX))
    for rel, users in owners.items():
        if len(users) > 1:
            problems.append(
                Problem(f"is declared for {' and '.join(users)}", rel, "give every seed its own file")
            )
    for task, entry in entries.items():
        for what, keys in (("files", entry.files), ("scores", entry.scores)):
            for seed in sorted(set(keys or {}) - set(entry.seeds)):
                problems.append(
                    Problem(
                        f"seed {seed} is not among the task's seeds {entry.seeds}",
                        f"{METADATA_FILE}: tasks.{task}.{what}.{seed}",
                        "add the seed to 'seeds' or remove this entry",
                    )
                )
    allowed = {METADATA_FILE, *OPTIONAL_FILES, *declared.values()}
    for rel in sorted(set(listing.files) - allowed):
        if unparsed is None or rel.split("/")[0] in unparsed:
            continue
        problems.append(
            Problem(
                "is not part of the submission (not declared in submission.yaml)",
                rel,
                "remove it, or declare it as a seed's generations under tasks.<id>.files",
            )
        )
    return problems


def _check_task(
    root: Path, task_id: str, entry: TaskEntry, listing: files.Listing, problems: list[Problem]
) -> TaskGenerations | None:
    """The task's samples and checked generations, or None (with the reasons among ``problems``)."""

    key = f"{METADATA_FILE}: tasks.{task_id}"
    if task_id not in plugins.TASKS:
        problems.append(plugins.TASKS.unknown(task_id, key=key).problems[0])
        return None
    spec = plugins.TASKS.get(task_id)
    found = len(problems)
    if spec.data is None:
        problems.append(Problem("has no shipped test split to score against", key, "submit a data task"))
        return None
    if entry.task_version != spec.version:
        problems.append(
            Problem(
                f"task_version {entry.task_version} was submitted, but task '{task_id}' is at version "
                f"{spec.version}: scores of another version are not comparable",
                f"{key}.task_version",
                f"generate for version {spec.version} of the task and set task_version: {spec.version}",
            )
        )
    repeated = sorted({seed for seed in entry.seeds if entry.seeds.count(seed) > 1})
    if repeated:
        problems.append(
            Problem(f"seed(s) {repeated} are listed twice", f"{key}.seeds", "list each seed once")
        )
    if len(set(entry.seeds)) < MIN_SEEDS:
        problems.append(
            Problem(
                f"{len(set(entry.seeds))} seed(s) given {entry.seeds}; at least {MIN_SEEDS} are needed "
                "(the leaderboard never ranks on fewer)",
                f"{key}.seeds",
                f"train and submit at least {MIN_SEEDS} seeds",
            )
        )
    samples = list(TaskPool.prepare("test", task=task_id))
    task = TaskGenerations(task_id, spec.version, samples)
    declared = generation_files({task_id: entry})
    for seed in dict.fromkeys(entry.seeds):
        rel = declared[(task_id, seed)]
        if files.check_relative(rel) is not None:
            continue  # reported by _check_layout
        seed_file = check_generations(root, rel, seed, samples, listing, problems)
        if seed_file is not None:
            task.seeds[seed] = seed_file
    return task if len(problems) == found else None
