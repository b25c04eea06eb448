"""Task plugins: a folder with ``task.yaml`` (data, prompt format, reward, metrics, profiles).

A task is mostly data. Python hooks, where a task needs them, are referenced by
``"module:attr"``; a module name ``hooks`` (or any ``name``) is first looked up as
``<task folder>/<name>.py``, so a task folder is self-contained.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, PositiveInt, ValidationError, field_validator

from grue_bench.errors import GrueError, Problem
from grue_bench.paths import task_dirs
from grue_bench.registry import import_object
from grue_bench.schema import Component, Strict, deep_merge, problems_from
from grue_bench.yamlio import read_yaml_mapping

SPLITS = ("train", "validation", "test")


class HubSource(Strict):
    """Where the full dataset lives on the Hugging Face hub."""

    path: str
    name: str | None = None
    splits: dict[str, str] = Field(default_factory=dict)
    """Our split name -> the hub's split expression, e.g. test: 'validation[:5000]'."""
    converter: str | None = None
    """'module:function(row, index)' giving our row schema (id, prompt, references, meta), or a list."""


class DataSpec(Strict):
    files: dict[Literal["train", "validation", "test"], str]
    """The shipped subset, JSON Lines paths relative to the task folder."""
    hub: HubSource | None = None
    source_notes: str = "data/SOURCE.md"

    @field_validator("files")
    @classmethod
    def _all_splits(cls, files: dict[str, str]) -> dict[str, str]:
        missing = [s for s in SPLITS if s not in files]
        if missing:
            raise ValueError(f"missing split(s) {', '.join(missing)}; give train, validation and test")
        return files


class PromptSpec(Strict):
    prefix: str = ""
    suffix: str = ""
    max_length: PositiveInt = 512
    """Prompt tokens kept (the run config's env.args.max_prompt_length overrides it)."""
    truncation_side: Literal["left", "right"] = "left"
    formatter: str | None = None
    """Optional 'module:function(row) -> str' that builds the prompt text from a row."""


class HeadlineSpec(Strict):
    """The metric that ranks algorithms on the task's leaderboard."""

    metric: str = Field(min_length=1)
    """The id of one of the task's metrics, e.g. 'rouge'."""
    output: str | None = None
    """Which of its keys, e.g. 'lexical/rouge_rougeL', when the metric reports several. Its direction
    (higher is better or not) is the metric's own (``Metric.outputs``)."""


class CrowdSpec(Strict):
    """How the human-evaluation forms show the task's samples (its Likert form is ``crowd.html``)."""

    output_label: str = Field(min_length=1)
    """What the output is called, e.g. 'Summary'."""
    criteria: str = Field(min_length=1)
    """The pairwise form's question: which of two outputs is better, and by what."""
    blocks: str
    """'module:function(prompt, meta) -> list of blocks', what a worker reads of a sample: each block
    a dict with 'name' (the Likert form's column), 'label', and 'text' or 'table' (rows of cells)."""


class FloorsSpec(Strict):
    """How the task's trivial baselines are made (the leaderboard's ``floor:*`` rows)."""

    copy_input: str
    """'module:function(row) -> str': the task's natural copy of its input, from a data row
    (``id``, ``prompt``, ``references``, ``meta``): e.g. a dialogue's last utterance."""


class TaskSpec(Strict):
    """A task plugin's definition, read from its ``task.yaml``."""

    id: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    version: PositiveInt
    """Bump whenever a change can move scores."""
    name: str
    description: str
    model_type: Literal["causal", "seq2seq"]
    """The GRUE paper's policy family for this task (gpt2-style or t5-style). A profile may name its
    own (``model_type`` in it): the small profile runs every task on a causal LM."""
    grue_order: PositiveInt | None = None
    """The task's place among GRUE's seven, in the paper's order: ``--task all`` runs the tasks
    that have one, and the leaderboard lists them first, in this order. None: a task run by name
    (the synthetic checks, a user's task)."""
    rl4lms_datapools: list[str] = Field(default_factory=list)
    """RL4LMs datapool ids that read this task's data under another id (``cnn_daily_mail``): a
    config naming one is this task's. A datapool id equal to the task's id needs no entry."""
    data: DataSpec | None = None
    datapool: Component | None = None
    """For generated tasks (the synthetic ones): a registered datapool instead of files."""
    corpus: str | None = None
    """For generated tasks: 'module:function() -> list of texts', the tiny base LM's pretraining
    corpus (a task with data files pretrains on its train prompts and references)."""
    prompt: PromptSpec = Field(default_factory=PromptSpec)
    reward_fn: Component
    metrics: list[Component]
    headline: HeadlineSpec | None = None
    """None: the leaderboard shows the task but ranks no algorithm on it."""
    crowd: CrowdSpec | None = None
    """None: the crowd forms show the prompt as the input (and the task has no Likert form)."""
    floors: FloorsSpec | None = None
    """None: the task has no ``floor:copy`` row (the other floors need no hook)."""
    profiles: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """Per profile (tiny, small, paper): a partial run config (tokenizer, env, datapool, alg,
    train_evaluation) whose ``alg`` holds what all algorithms share, plus ``model_type`` (the
    profile's policy family, when not the task's), ``algs``: per
    algorithm id, an ``alg`` section merged over it, and ``metrics``: entries that extend the
    task's suite (a metric the task has gets these arguments; another is added). A
    ``train_evaluation.metrics`` list replaces the suite instead."""
    directory: Path = Field(default=Path("."), exclude=True)

    def headline_metric(self) -> Component | None:
        """The metric of the task's suite that its headline names (None: no headline, or none)."""
        if self.headline is None:
            return None
        return next((metric for metric in self.metrics if metric.id == self.headline.metric), None)

    def data_path(self, split: str) -> Path:
        """Shipped JSONL file for ``split``."""
        if self.data is None:
            raise GrueError(f"task '{self.id}' has no data files", key="data")
        return self.directory / self.data.files[split]

    def resolve(self, ref: str) -> Any:
        """Import a 'module:attr' hook, preferring ``<task folder>/<module>.py``."""
        module_name, _, attr = ref.partition(":")
        local = self.directory / f"{module_name.replace('.', '/')}.py"
        if local.is_file():
            qualified = f"grue_task_{self.id}_{module_name.replace('.', '_')}"
            module = sys.modules.get(qualified)
            if module is None:
                spec = importlib.util.spec_from_file_location(qualified, local)
                module = importlib.util.module_from_spec(spec)
                sys.modules[qualified] = module
                spec.loader.exec_module(module)
            obj: Any = module
            for part in attr.split("."):
                obj = getattr(obj, part)
            return obj
        return import_object(ref)


def load_task(target: Any) -> TaskSpec:
    """Load a task from a task folder, a ``task.yaml`` path, or a callable returning one."""
    if callable(target) and not isinstance(target, (str, Path)):
        target = target()
    path = task_yaml(target)
    data = _with_includes(path, read_yaml_mapping(path), seen=(path.resolve(),))
    try:
        spec = TaskSpec.model_validate({**data, "directory": path.parent})
    except ValidationError as exc:
        raise GrueError.many(problems_from(exc), str(path)) from None
    problems = task_problems(spec)
    if problems:
        raise GrueError.many(problems, str(path))
    return spec


def task_yaml(target: str | Path) -> Path:
    """The ``task.yaml`` of a task folder, or the file itself."""
    path = Path(target)
    return path / "task.yaml" if path.is_dir() else path


def _with_includes(path: Path, data: dict[str, Any], seen: tuple[Path, ...]) -> dict[str, Any]:
    """Merge ``include:`` files (paths relative to the including file) under ``data``."""
    include = data.pop("include", None)
    if include is None:
        return data
    base: dict[str, Any] = {}
    for rel in [include] if isinstance(include, str) else include:
        included = (path.parent / rel).resolve()
        if included in seen:
            raise GrueError(
                f"include cycle through {included}",
                source=str(path),
                key="include",
                fix="remove the circular include",
            )
        base = deep_merge(base, _with_includes(included, read_yaml_mapping(included), (*seen, included)))
    return deep_merge(base, data)


def task_problems(spec: TaskSpec) -> list[Problem]:
    """Problems beyond structure: data files exist, the id is the folder's name. (Profiles are
    checked as run configs by ``grue_bench.resolve.check_task``.)"""
    problems: list[Problem] = []
    if spec.data is None and spec.datapool is None:
        problems.append(Problem("a task needs 'data' files or a 'datapool'", "data", "add one"))
    if spec.data is not None:
        for split, rel in spec.data.files.items():
            if not (spec.directory / rel).is_file():
                problems.append(
                    Problem(f"data file '{rel}' not found", f"data.files.{split}", "ship it or fix the path")
                )
    if spec.headline is not None and spec.headline_metric() is None:
        ids = ", ".join(metric.id for metric in spec.metrics)
        problems.append(
            Problem(
                f"headline metric '{spec.headline.metric}' is not one of the task's metrics ({ids})",
                "headline.metric",
                "name the id of one of the task's metrics",
            )
        )
    if spec.directory.name != spec.id:
        problems.append(
            Problem(
                f"id '{spec.id}' differs from the folder name '{spec.directory.name}'",
                "id",
                "make the folder name and the id the same",
            )
        )
    return problems


def discover_tasks() -> dict[str, Path]:
    """Task folders found on disk: ``<tasks dir>/<id>/task.yaml``; a duplicate id is an error."""
    found: dict[str, Path] = {}
    for root in task_dirs():
        if not root.is_dir():
            continue
        for task_yaml in sorted(root.glob("*/task.yaml")):
            task_id = task_yaml.parent.name
            if task_id in found:
                raise GrueError(
                    f"task id '{task_id}' is defined twice: {found[task_id]} and {task_yaml}",
                    fix="rename one of the task folders",
                )
            found[task_id] = task_yaml
    return found
