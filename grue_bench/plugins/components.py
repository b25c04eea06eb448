"""Registered components built from config: each one's declared arguments checked (the same check
for ``grue validate`` and for a run), then handed to it; and the argument types that name other
registered components (a reward's ``shaping_fn``, the metric of the ``metric`` reward).

A datapool's arguments are those of its ``prepare(split, **args)``; a post-processor takes none.
"""

from __future__ import annotations

import difflib
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ValidationError

from grue_bench import plugins
from grue_bench.errors import GrueError, Problem
from grue_bench.schema import ArgProblems, Strict, args_model, problems_from

_SKIPPED = {"datapools": ("split",)}
"""Parameters the framework passes itself, by kind."""


def args_of(kind: str, id: str) -> type[BaseModel]:
    """The strict model of the arguments of the registered ``kind`` component ``id``."""
    target = plugins.REGISTRIES[kind].get(id)  # an unknown id is an error here
    if kind == "post_processors":
        return Strict
    if kind == "datapools":
        target = target.prepare
    if kind == "algorithms":
        return target.Args
    return args_model(target, id, _SKIPPED.get(kind, ()))


def arg_problems(kind: str, id: str, args: Any, key: str) -> list[Problem]:
    """What is wrong with ``args`` for the registered ``id`` (the id itself is the caller's to check);
    ``key`` is where the args are in the config (``reward_fn.args``)."""
    try:
        _checked(kind, id, args, key)
    except GrueError as exc:
        return [Problem(p.message, p.key or key, p.fix) for p in exc.problems]
    return []


def checked_args(kind: str, id: str, args: dict[str, Any] | None, key: str) -> dict[str, Any]:
    """``args`` checked as ``grue validate`` checks them, ready for the component: the values as the
    declaration reads them (YAML's ``'True,'`` as true, ``'5'`` as 5), defaults left to the component."""
    if id not in plugins.REGISTRIES[kind]:
        raise plugins.REGISTRIES[kind].unknown(id, key=key)
    checked = _checked(kind, id, args or {}, key)
    given = {name: getattr(checked, name) for name in checked.model_fields_set}
    return {**given, **(checked.model_extra or {})}


def _checked(kind: str, id: str, args: Any, key: str) -> BaseModel:
    """``args`` as the model of ``id``'s arguments, or a GrueError with every problem; an unknown
    key's fix names the arguments there are (and the likeliest one meant)."""
    model = args_of(kind, id)
    try:
        return model.model_validate(args)
    except ValidationError as exc:
        problems = problems_from(exc, key)
    names = list(model.model_fields)
    for i, problem in enumerate(problems):
        given = problem.key.removeprefix(f"{key}.")
        if problem.message == "unknown key" and "." not in given:
            close = difflib.get_close_matches(given, names, n=1)
            hint = f"did you mean '{close[0]}'? " if close else ""
            known = f"'{id}' takes {', '.join(names)}" if names else f"'{id}' takes no arguments"
            problems[i] = Problem(problem.message, problem.key, f"{hint}remove it or rename it: {known}")
    raise GrueError.many(problems)


def build(kind: str, id: str, args: dict[str, Any] | None, key: str) -> Any:
    """The registered ``kind`` component ``id`` made with ``args`` once they pass the check (a
    datapool is prepared per split: ``DATAPOOLS.get(id).prepare(split, **checked_args(...))``)."""
    values = checked_args(kind, id, args, key)
    target = plugins.REGISTRIES[kind].get(id)
    return target(**values)


def _registered(kind: str, *, takes_no_args: bool = False) -> AfterValidator:
    """A validator that an id names a registered ``kind`` component (with no required argument,
    when it is built without any)."""
    registry = plugins.REGISTRIES[kind]

    def check(id: str) -> str:
        if id not in registry:
            raise ArgProblems(*registry.unknown(id).problems)
        if takes_no_args:
            required = [name for name, field in args_of(kind, id).model_fields.items() if field.is_required()]
            if required:
                raise ArgProblems(
                    Problem(
                        f"'{id}' needs the argument(s) {', '.join(required)}, but is built with none here",
                        fix=f"use a {registry.singular} that needs no arguments",
                    )
                )
        return id

    return AfterValidator(check)


MetricId = Annotated[str, _registered("metrics")]
"""The id of a registered metric."""
RewardId = Annotated[str, _registered("rewards")]
"""The id of a registered reward function."""
ShapingRewardId = Annotated[str, _registered("rewards", takes_no_args=True)]
"""The id of a registered reward function built with no arguments (RL4LMs's ``shaping_fn``)."""
TaskId = Annotated[str, _registered("tasks")]
"""The id of a registered task."""


def check_nested(kind: str, id: str, args: dict[str, Any] | None, key: str) -> None:
    """Raise ``ArgProblems`` (keys under ``key``) when ``args`` do not suit the ``kind`` component
    ``id``: the check of a component whose arguments name another component and that one's args."""
    problems = arg_problems(kind, id, args or {}, key)
    if problems:
        raise ArgProblems(*problems)
