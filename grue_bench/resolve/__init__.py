"""Resolving a run config: ids and component arguments against the registries.

Loading happens in two passes, both collecting every problem before failing once:
1. structure and types (``grue_bench.config``'s schema, unknown keys are errors);
2. ids against the registries, and each component's ``args`` against what it accepts.

A task's profiles are run configs too: ``task_config`` composes one for an algorithm, and
``check_task`` checks every profile under every algorithm (once per task: by the grid and
``grue validate``).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from grue_bench import plugins, tasks
from grue_bench.config import AlgConfig, RunConfig, TrainEvaluationConfig
from grue_bench.errors import GrueError, Problem
from grue_bench.plugins.components import arg_problems
from grue_bench.rl.hparams import GenerationKwargs, PolicyArgs, SupervisedArgs
from grue_bench.schema import Component, Strict, deep_merge, problems_from
from grue_bench.tasks import TaskSpec
from grue_bench.yamlio import parse_yaml, read_yaml_mapping


def _check_component(kind: str, component: Component, key: str, problems: list[Problem]) -> None:
    registry = plugins.REGISTRIES[kind]
    if component.id not in registry:
        problems.extend(registry.unknown(component.id, key=f"{key}.id").problems)
        return
    problems.extend(arg_problems(kind, component.id, component.args, f"{key}.args"))


def _check_alg(alg: AlgConfig, problems: list[Problem]) -> None:
    if alg.id not in plugins.ALGORITHMS:
        problems.extend(plugins.ALGORITHMS.unknown(alg.id, key="alg.id").problems)
        return
    hparams = plugins.ALGORITHMS.get(alg.id).Args
    if hparams.needs_policy:
        try:
            hparams.model_validate(alg.args)
        except ValidationError as exc:
            problems.extend(problems_from(exc, "alg.args"))
        for key in ("training_args", "model_type", "model_name", "generation_kwargs"):
            if getattr(alg, key) is not None:
                problems.append(
                    Problem(
                        f"'{key}' belongs to the supervised trainer, not to '{alg.id}'",
                        f"alg.{key}",
                        "remove it (RL algorithms take alg.args and alg.policy)",
                    )
                )
    else:
        try:
            hparams.model_validate({**alg.args, **(alg.training_args or {})})
        except ValidationError as exc:
            problems.extend(problems_from(exc, "alg.training_args"))
    if alg.policy is None:
        return
    if alg.policy.id not in plugins.POLICIES:
        problems.extend(plugins.POLICIES.unknown(alg.policy.id, key="alg.policy.id").problems)
        return
    policy_args: type[PolicyArgs] = plugins.POLICIES.get(alg.policy.id)
    try:
        policy_args.model_validate(alg.policy.args)
    except ValidationError as exc:
        problems.extend(problems_from(exc, "alg.policy.args"))
    compiled = alg.policy.args.get("compile_sampler") is True
    if compiled and policy_args.model_type == "seq2seq":
        problems.append(
            Problem(
                "compile_sampler serves causal LMs; this policy is seq2seq",
                "alg.policy.args.compile_sampler",
                "remove compile_sampler (or set it to false) for a seq2seq policy",
            )
        )
    if hparams.masked_sampling and not policy_args.maskable:
        problems.append(
            Problem(
                f"'{alg.id}' samples through a mask and needs a maskable policy, got '{alg.policy.id}'",
                "alg.policy.id",
                "use maskable_causal_lm_actor_critic_policy or maskable_seq2seq_lm_actor_critic_policy",
            )
        )


def _check_post_processor(kwargs: GenerationKwargs | None, key: str, problems: list[Problem]) -> None:
    """A named post-processor must be registered: a typo would otherwise fail only at evaluation."""
    if kwargs is None or kwargs.post_processing_fn is None:
        return
    id = kwargs.post_processing_fn.id
    if id not in plugins.POST_PROCESSORS:
        problems.extend(plugins.POST_PROCESSORS.unknown(id, key=f"{key}.post_processing_fn.id").problems)


def _parsed(model: type[Strict], data: Any) -> Any:
    """``data`` as ``model`` if it is structurally valid, else None (the structural pass reports it)."""
    try:
        return model.model_validate(data)
    except ValidationError:
        return None


def _semantic_problems(data: dict[str, Any]) -> list[Problem]:
    """Ids and component args, section by section, so that one broken section hides no others."""
    problems: list[Problem] = []
    task = data.get("task")
    if isinstance(task, str) and task not in plugins.TASKS:
        problems.extend(plugins.TASKS.unknown(task, key="task").problems)
    for kind, key in (("datapools", "datapool"), ("rewards", "reward_fn")):
        component = _parsed(Component, data.get(key))
        if component is not None:
            _check_component(kind, component, key, problems)
    evaluation = data.get("train_evaluation")
    metrics = evaluation.get("metrics") if isinstance(evaluation, dict) else None
    for i, metric in enumerate(metrics if isinstance(metrics, list) else []):
        component = _parsed(Component, metric)
        if component is not None:
            _check_component("metrics", component, f"train_evaluation.metrics.{i}", problems)
    alg = _parsed(AlgConfig, data.get("alg"))
    if alg is not None:
        _check_alg(alg, problems)
        _check_post_processor(alg.generation_kwargs, "alg.generation_kwargs", problems)
    te = _parsed(TrainEvaluationConfig, evaluation or {})
    if te is not None:
        _check_post_processor(te.generation_kwargs, "train_evaluation.generation_kwargs", problems)
    tokenizer = data.get("tokenizer") if isinstance(data.get("tokenizer"), dict) else {}
    if alg is not None and alg.id != "supervised" and "max_length" in tokenizer:
        problems.append(
            Problem(
                f"tokenizer.max_length is read by the supervised trainer only, not by '{alg.id}' "
                "(RL4LMs ignores it there too)",
                "tokenizer.max_length",
                "remove it; env.args.max_prompt_length sets the prompt width of RL algorithms",
            )
        )
    if task is None and data.get("datapool") is None:
        problems.append(
            Problem("neither 'task' nor 'datapool' is set", "task", "add task: <id> (see `grue ls tasks`)")
        )
    return problems


AUTO_PRECISION = "auto"
"""``bf16: auto`` (the small profile's): bfloat16 where this machine runs it natively, else float32."""


def with_precision_decided(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` with ``bf16: auto`` (in ``alg.args`` or ``alg.training_args``) made the boolean it
    is on this machine's default device, so that a run's config, and its key, say what it ran in."""
    alg = data.get("alg")
    sections = [
        name
        for name in ("args", "training_args")
        if isinstance(alg, dict) and isinstance(alg.get(name), dict)
    ]
    if not any(alg[name].get("bf16") == AUTO_PRECISION for name in sections):
        return data
    # start-up time: the check imports torch; only a config asking for 'auto' needs it
    from grue_bench.rl.precision import bf16_supported, default_device

    native = bf16_supported(default_device())
    decided = {
        name: {**alg[name], "bf16": native} for name in sections if alg[name].get("bf16") == AUTO_PRECISION
    }
    return {**data, "alg": {**alg, **decided}}


def build_config(data: dict[str, Any], source: str) -> RunConfig:
    """Validate plain data as a run config (``bf16: auto`` decided first: ``with_precision_decided``);
    every problem is reported at once."""
    data = with_precision_decided(data)
    problems: list[Problem] = []
    config = None
    try:
        config = RunConfig.model_validate(data)
    except ValidationError as exc:
        problems.extend(problems_from(exc))
    problems.extend(_semantic_problems(data))
    if problems:
        raise GrueError.many(problems, source)
    return config


def load_config(path: str | Path | None, overrides: list[str] = (), base: dict | None = None) -> RunConfig:
    """Read a config file (or start from ``base``), apply ``--set`` overrides and validate."""
    data = deep_merge(base or {}, read_yaml_mapping(path) if path else {})
    for assignment in overrides:
        apply_override(data, assignment)
    source = str(path) if path else "command-line config"
    if overrides:
        source += " (with --set overrides)"
    return build_config(data, source)


def apply_override(data: dict[str, Any], assignment: str) -> None:
    """Apply ``a.b.c=value`` (value parsed as YAML) to nested ``data`` in place; a number addresses
    an item of a list (``train_evaluation.metrics.2.args.stride=256``, RL4LMs keeps metrics in one)."""
    key, sep, raw = assignment.partition("=")
    key = key.strip()
    if not sep or not key or any(not part for part in key.split(".")):
        raise GrueError(
            f"override '{assignment}' is not of the form key.path=value",
            source="--set",
            fix="write e.g. --set alg.args.learning_rate=1e-5",
        )
    value = parse_yaml(raw, f"--set {key}") if raw.strip() else None
    node: Any = data
    parts = key.split(".")
    for i, part in enumerate(parts):
        where = ".".join(parts[: i + 1])
        last = i == len(parts) - 1
        if isinstance(node, list):
            index = _list_index(node, part, key, where)
            if last:
                node[index] = value
            else:
                node = node[index]
            continue
        if not isinstance(node, dict):
            raise GrueError(
                f"cannot set '{key}': '{'.'.join(parts[:i])}' is a value, not a section",
                source="--set",
                fix="override the section's key itself",
            )
        if last:
            node[part] = value
        else:
            if node.get(part) is None:
                node[part] = {}
            node = node[part]


def _list_index(items: list[Any], part: str, key: str, where: str) -> int:
    """The list position ``part`` names, or a GrueError saying which positions there are."""
    if not part.isdigit() or int(part) >= len(items):
        raise GrueError(
            f"cannot set '{key}': '{where}' is not an item of a list of {len(items)}",
            source="--set",
            fix=f"address an item by its position, 0 to {len(items) - 1}" if items else "the list is empty",
        )
    return int(part)


def extended_metrics(task_metrics: list[dict[str, Any]], profile_metrics: list[Any]) -> list[dict[str, Any]]:
    """A task's metric suite as a profile's ``metrics`` extends it: an entry naming a metric the task
    has merges its ``args`` over that metric's, in its place; any other is added at the end."""
    merged = [dict(metric) for metric in task_metrics]
    for entry in profile_metrics:
        at = next((m for m in merged if isinstance(entry, dict) and m["id"] == entry.get("id")), None)
        if at is None:
            merged.append(entry)
        else:
            at["args"] = {**(at.get("args") or {}), **(entry.get("args") or {})}
    return merged


def profile_model_type(spec: TaskSpec, profile: str, model_type: Any) -> str:
    """The policy family a profile's ``model_type`` names (the task's when it names none)."""
    if model_type not in ("causal", "seq2seq"):
        raise GrueError(
            f"task '{spec.id}': profile '{profile}' gives model_type {model_type!r}",
            key=f"profiles.{profile}.model_type",
            fix="use causal or seq2seq, or leave it out (the task's own, " + spec.model_type + ")",
        )
    return model_type


def task_config(spec: TaskSpec, alg_id: str, profile: str) -> dict[str, Any]:
    """The run config (plain data) task ``spec`` gives ``alg_id`` under ``profile``: a copy, which
    the caller may change (overrides) without changing the task."""
    if profile not in spec.profiles:
        raise GrueError(
            f"task '{spec.id}' has no profile '{profile}'",
            key="profile",
            fix=f"use one of: {', '.join(spec.profiles) or '(none)'}",
        )
    partial = copy.deepcopy(spec.profiles[profile])
    per_alg = partial.pop("algs", {}) or {}
    shared_alg = partial.pop("alg", {}) or {}
    model_type = profile_model_type(spec, profile, partial.pop("model_type", spec.model_type))
    hparams = plugins.ALGORITHMS.get(alg_id).Args
    if hparams.needs_policy:
        alg = deep_merge(shared_alg, per_alg.get(alg_id, {}))
        alg.setdefault("policy", {}).setdefault("id", plugins.default_policy(alg_id, model_type))
    else:
        alg = {"model_type": model_type, **per_alg.get(alg_id, {})}
    metrics = extended_metrics([m.model_dump() for m in spec.metrics], partial.pop("metrics", []) or [])
    partial["train_evaluation"] = {"metrics": metrics, **(partial.get("train_evaluation") or {})}
    return {
        "task": spec.id,
        "profile": profile,
        "reward_fn": spec.reward_fn.model_dump(),
        **({"datapool": spec.datapool.model_dump()} if spec.datapool else {}),
        **partial,
        "alg": {**alg, "id": alg_id},
    }


def warm_start_training_args(config: RunConfig) -> dict[str, Any]:
    """The supervised settings of a chain's warm start (``supervised+ppo``): its task profile's
    ``algs.supervised.training_args``, which the chain's config (its RL stage's) does not hold."""
    if config.task is None:
        return {}
    profile = plugins.TASKS.get(config.task).profiles.get(config.profile, {})
    return profile.get("algs", {}).get("supervised", {}).get("training_args", {})


def supervised_args(config: RunConfig) -> SupervisedArgs:
    """The supervised stage's arguments: a supervised run's ``alg.args`` and
    ``alg.training_args``, a warm start's those of its task profile in its RL stage's precision
    (``alg.args.bf16``/``fp16``)."""
    settings = warm_start_training_args(config)
    if config.alg.id == "supervised":
        settings = {**config.alg.args, **(config.alg.training_args or {})}
    else:
        precision = {key: config.alg.args[key] for key in ("bf16", "fp16") if key in config.alg.args}
        settings = {**settings, **precision}
    return SupervisedArgs.model_validate(settings)


def check_task(spec: TaskSpec) -> list[Problem]:
    """Every profile of ``spec`` under every algorithm gives a valid run config (the same problem,
    as it usually shows under every algorithm, reported once, naming the algorithms), and its
    headline names one key of its metric."""
    seen: dict[tuple[str, str, str], list[str]] = {}
    for profile in spec.profiles:
        for alg_id in plugins.ALGORITHMS.ids():
            try:
                build_config(task_config(spec, alg_id, profile), f"profiles.{profile}")
            except GrueError as exc:
                for p in exc.problems:
                    key = f"profiles.{profile}.{p.key}".rstrip(".")
                    seen.setdefault((key, p.message, p.fix), []).append(alg_id)
    every = plugins.ALGORITHMS.ids()
    problems = []
    for (key, message, fix), algs in seen.items():
        suffix = "" if algs == every else f" (with algorithm {', '.join(algs)})"
        problems.append(Problem(message + suffix, key, fix))
    if spec.headline is not None:
        try:
            plugins.headline_key(spec)
        except GrueError as exc:
            problems.extend(exc.problems)
    return problems


def load_task(path: str | Path) -> TaskSpec:
    """A task folder or ``task.yaml`` loaded and checked: its structure and files
    (``tasks.load_task``), then its profiles as run configs."""
    spec = tasks.load_task(path)
    problems = check_task(spec)
    if problems:
        raise GrueError.many(problems, str(tasks.task_yaml(path)))
    return spec
