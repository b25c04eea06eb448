"""Reading and checking ``submission.yaml``: safe YAML (no Python tags, no aliases), the strict schema,
and what the schema alone cannot say (the name is the folder's, configs are plain data)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from grue_bench.errors import GrueError, Problem
from grue_bench.schema import problems_from
from grue_bench.submit import files
from grue_bench.submit.format import (
    MAX_CONFIG_DEPTH,
    MAX_METADATA_BYTES,
    METADATA_FILE,
    Submission,
    TaskEntry,
    plain_text,
)
from grue_bench.submit.problems import FORMAT_FIX, clip, keyed, shorten
from grue_bench.yamlio import parse_yaml


def read_metadata(root: Path, listing: files.Listing, problems: list[Problem]) -> dict[str, Any] | None:
    """The data of submission.yaml, or None (with the reason among ``problems``)."""
    if METADATA_FILE not in listing.files:
        if METADATA_FILE not in listing.refused:
            problems.append(Problem("missing", METADATA_FILE, f"add {METADATA_FILE}; {FORMAT_FIX}"))
        return None
    try:
        raw = files.read_bounded(root, METADATA_FILE, MAX_METADATA_BYTES)
        text = raw.decode("utf-8")
    except (OSError, UnicodeDecodeError) as error:
        problems.append(Problem(f"cannot be read: {error}", METADATA_FILE, "write it as a UTF-8 text file"))
        return None
    try:
        if _has_alias(text):
            problems.append(
                Problem(
                    "uses YAML aliases (*name), which are not accepted",
                    METADATA_FILE,
                    "write every value out in full",
                )
            )
            return None
        data = parse_yaml(text, METADATA_FILE)
    except GrueError as error:
        problems += error.problems if error.problems[0].key else [keyed(error.problems[0], METADATA_FILE)]
        return None
    except RecursionError:
        problems.append(Problem("is nested too deeply", METADATA_FILE, FORMAT_FIX))
        return None
    if not isinstance(data, dict):
        problems.append(Problem("the top level must be a mapping of keys", METADATA_FILE, FORMAT_FIX))
        return None
    return data


def parse(data: dict[str, Any], problems: list[Problem]) -> Submission | None:
    """The typed submission, or None with one problem per wrong key."""
    try:
        return Submission.model_validate(data)
    except ValidationError as error:
        found = problems_from(error)
        problems += [shorten(keyed(_with_fix(p), METADATA_FILE)) for p in found]
        return None


def _with_fix(problem: Problem) -> Problem:
    """Point the generic fix of a schema problem at the format's description."""
    if problem.fix == "give a valid value":
        return Problem(problem.message, problem.key, f"give a valid value; {FORMAT_FIX}")
    return problem


def task_entries(data: dict[str, Any]) -> dict[str, TaskEntry]:
    """The task entries that parse on their own (the others are among the schema's problems)."""
    entries = {}
    raw = data.get("tasks")
    for task_id, entry in (raw if isinstance(raw, dict) else {}).items():
        try:
            if isinstance(task_id, str):
                entries[task_id] = TaskEntry.model_validate(entry)
        except ValidationError:
            continue
    return entries


def _has_alias(text: str) -> bool:
    try:
        return any(isinstance(event, yaml.AliasEvent) for event in yaml.parse(text, Loader=yaml.SafeLoader))
    except yaml.YAMLError:
        return False  # parse_yaml reports the syntax error with its line


def check_identity(root: Path, data: dict[str, Any]) -> list[Problem]:
    """The name is the folder's; every config is plain data; every task has a training config."""
    problems = []
    name = data.get("name")
    if isinstance(name, str) and root.name != name:
        problems.append(
            Problem(
                f"is '{clip(name)}' but the folder is named '{root.name}'",
                f"{METADATA_FILE}: name",
                "name the folder baselines/<name>/ after it (or change the name)",
            )
        )
    tasks = data.get("tasks") if isinstance(data.get("tasks"), dict) else {}
    configs = [("config", data.get("config"))] + [
        (f"tasks.{task}.config", entry.get("config"))
        for task, entry in tasks.items()
        if isinstance(entry, dict)
    ]
    for key, config in configs:
        if config is not None:
            problems += [keyed(p, METADATA_FILE) for p in _check_config(config, key)]
    shared = data.get("config")
    lacking = [
        task
        for task, entry in tasks.items()
        if not shared and not (isinstance(entry, dict) and entry.get("config"))
    ]
    if lacking:
        problems.append(
            Problem(
                f"no training config is given for {', '.join(map(str, lacking))}",
                f"{METADATA_FILE}: config",
                "add the training config under 'config' (or under each task's 'config')",
            )
        )
    return problems


def _check_config(value: Any, path: str = "", depth: int = 0) -> list[Problem]:
    """Only plain data (mappings with string keys, lists, strings, numbers, booleans, null)."""
    if depth > MAX_CONFIG_DEPTH:
        return [Problem(f"is nested deeper than {MAX_CONFIG_DEPTH} levels", path, "flatten the config")]
    if isinstance(value, dict):
        problems = []
        for key, item in value.items():
            if not isinstance(key, str):
                problems.append(Problem(f"key {key!r} is not a string", path, "quote the key"))
                continue
            problems += _check_config(item, f"{path}.{key}" if path else key, depth + 1)
        return problems
    if isinstance(value, list):
        return [p for i, item in enumerate(value) for p in _check_config(item, f"{path}[{i}]", depth + 1)]
    if isinstance(value, str):
        try:
            plain_text(value)
        except ValueError as error:
            return [Problem(str(error), path, "remove the special characters")]
        return []
    if value is None or isinstance(value, (bool, int, float)):
        return []
    return [
        Problem(
            f"holds a {type(value).__name__}; a config holds only plain data",
            path,
            "write it as a string, number, boolean, list or mapping",
        )
    ]
