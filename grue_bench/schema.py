"""Base pieces for typed configuration: strict models, components chosen by id, merging partial
configs, and args checked against a callable.

A component declares its arguments' constraints in its signature (``Annotated[int, Field(gt=0)]``,
``Literal`` enums) and, for rules across arguments, in a ``check_args(args)`` static method that raises
``ArgProblems``: ``args_model`` turns both into one strict model, which ``grue validate`` and the
builder of a run share."""

from __future__ import annotations

import copy
import functools
import inspect
import logging
import re
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    create_model,
    model_validator,
)

from grue_bench.errors import Problem

log = logging.getLogger(__name__)


class Strict(BaseModel):
    """A config section: unknown keys are errors, values are validated on assignment too."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True, protected_namespaces=())


class Output(Strict):
    """A key a metric reports and how the leaderboard shows it: what a metric declares in its
    ``outputs``, and what a leaderboard schema file overrides, key by key."""

    display: str = Field(min_length=1)
    """Column title, e.g. 'ROUGE-L'."""
    higher_is_better: bool | None = True
    """Direction; None for a key with no better side (e.g. mean length): never ranked."""
    naturalness: bool = False
    """Shown with the naturalness metrics (fluency, diversity) rather than with the task's own."""
    decimals: int = Field(default=3, ge=0, le=6)
    """Digits after the decimal point."""
    description: str = ""
    """Tooltip text."""


class Component(Strict):
    """A registered component chosen by id, with its arguments."""

    id: str
    args: dict[str, Any] = Field(default_factory=dict)


def deep_merge(base: dict[str, Any], update: dict[str, Any]) -> dict[str, Any]:
    """``update`` over ``base``, recursively for mappings (lists and values replace).

    A component given with another ``id`` replaces the base's whole component: the arguments
    of one component mean nothing to another.
    """
    merged = copy.deepcopy(base)
    for key, value in update.items():
        old = merged.get(key)
        if (
            isinstance(value, dict)
            and isinstance(old, dict)
            and value.get("id", old.get("id")) == old.get("id")
        ):
            merged[key] = deep_merge(old, value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


class ArgProblems(ValueError):
    """Raised by a validator (a component's ``check_args``, an id check) with problems whose keys are
    relative to where the validator runs, so that ``problems_from`` can give each its full key path."""

    def __init__(self, *problems: Problem) -> None:
        self.problems = list(problems)
        super().__init__("; ".join(p.message for p in problems))


def _stray_comma(value: Any) -> Any:
    """RL4LMs's NarrativeQA configs write ``apply_best: True,``: YAML reads the string 'True,',
    which RL4LMs hands to py-rouge, which only tests its truth. So 'True,' is read as true; and
    'False,' is refused, since RL4LMs would have read that (a non-empty string) as true too."""
    if not (isinstance(value, str) and value.rstrip().endswith(",")):
        return value
    word = value.rstrip()[:-1].strip().lower()
    if word == "true":
        log.warning("read %r as true: a YAML boolean with a stray comma (RL4LMs read it so)", value)
        return True
    if word == "false":
        raise ArgProblems(
            Problem(
                f"{value!r} is a string, which RL4LMs would have read as true", fix="write false (no comma)"
            )
        )
    return value


CommaTolerantBool = Annotated[bool, BeforeValidator(_stray_comma)]
"""A boolean that also takes RL4LMs's 'True,' (see ``_stray_comma``)."""

UnitInterval = Annotated[float, Field(ge=0, le=1)]
"""A number from 0 to 1: a probability, or the weight of one of two terms."""


def text_check(accepts: Callable[[str], object], problem: Callable[[str], str], fix: str) -> AfterValidator:
    """A validator of a text argument: one that ``accepts`` refuses is a problem, ``problem(value)``,
    with ``fix``."""

    def check(value: str) -> str:
        if not accepts(value):
            raise ArgProblems(Problem(problem(value), fix=fix))
        return value

    return AfterValidator(check)


Device = Annotated[
    str,
    text_check(
        re.compile(r"(cpu|cuda|mps|xpu)(:\d+)?").fullmatch,
        lambda value: f"{value!r} is not a torch device",
        fix="use cpu, cuda, cuda:N, mps or xpu (or leave it unset: cuda when there is one, else cpu)",
    ),
]
"""A torch device name (``cuda:1``), checked without importing torch."""

ExistingPath = Annotated[
    str,
    text_check(
        lambda value: Path(value).expanduser().exists(),
        lambda value: f"{value!r} does not exist (resolved to {Path(value).expanduser().resolve()})",
        fix="give the path of an existing file or folder (relative paths start where grue runs)",
    ),
]
"""The path of a file or folder that exists."""


def _loc(loc: tuple[Any, ...]) -> str:
    return ".".join(str(part) for part in loc)


_FIXES = {
    "greater_than": "give a number greater than {gt}",
    "greater_than_equal": "give a number of at least {ge}",
    "less_than": "give a number less than {lt}",
    "less_than_equal": "give a number of at most {le}",
    "literal_error": "use one of: {expected}",
    "int_parsing": "give a whole number",
    "int_type": "give a whole number",
    "int_from_float": "give a whole number",
    "float_parsing": "give a number",
    "float_type": "give a number",
    "bool_parsing": "give true or false",
    "bool_type": "give true or false",
    "string_type": "give a text (in quotes, if YAML would read it as something else)",
    "list_type": "give a list",
    "dict_type": "give a mapping",
    "too_short": "give at least {min_length} item(s)",
}
"""The fix for each kind of pydantic error, filled in from the error's context."""


def problems_from(error: ValidationError, prefix: str = "") -> list[Problem]:
    """Turn a pydantic error into our problems, one per failing key, with the full key path."""
    problems = []
    for item in error.errors():
        key = ".".join(p for p in (prefix, _loc(item["loc"])) if p)
        cause = (item.get("ctx") or {}).get("error")
        if isinstance(cause, ArgProblems):
            problems.extend(
                Problem(p.message, ".".join(part for part in (key, p.key) if part), p.fix)
                for p in cause.problems
            )
        elif item["type"] == "extra_forbidden":
            problems.append(Problem("unknown key", key, "remove it or check its spelling"))
        elif item["type"] == "missing":
            problems.append(Problem("required key is missing", key, "add it"))
        else:
            got = item.get("input")
            shown = repr(got) if not isinstance(got, dict) else "a mapping"
            fix = _FIXES.get(item["type"], "give a valid value").format(**(item.get("ctx") or {}))
            problems.append(Problem(f"{item['msg']} (got {shown})", key, fix))
    return problems


@functools.cache
def args_model(target: Callable[..., Any], name: str, skip: tuple[str, ...] = ()) -> type[BaseModel]:
    """A strict model of the keyword arguments ``target`` (a class, function or bound method)
    accepts, leaving out the parameters named in ``skip`` (those the framework passes itself),
    with the ``check_args`` declared beside that signature run on the checked arguments."""
    if isinstance(target, type) and issubclass(target, BaseModel):
        return target
    schema = getattr(target, "args_schema", None)
    if callable(schema):
        return schema()
    fields: dict[str, Any] = {}
    open_kwargs = False
    try:
        signature = inspect.signature(target, eval_str=True)
    except (NameError, TypeError):  # annotations that cannot be resolved: check keys, not types
        signature = inspect.signature(target)
    for param in signature.parameters.values():
        if param.kind is param.VAR_KEYWORD:
            open_kwargs = True
            continue
        if param.kind is param.VAR_POSITIONAL or param.name == "self" or param.name in skip:
            continue
        annotation = Any if param.annotation is inspect.Parameter.empty else param.annotation
        if isinstance(annotation, str):
            annotation = Any
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[param.name] = (annotation, default)
    extra = "allow" if open_kwargs else "forbid"
    check = _own_check(target)
    validators = {} if check is None else {"check_args": model_validator(mode="after")(_checked_by(check))}
    return create_model(  # type: ignore[call-overload]
        f"{name}Args",
        __config__=ConfigDict(extra=extra, arbitrary_types_allowed=True),
        __validators__=validators,
        **fields,
    )


def _own_check(target: Callable[..., Any]) -> Callable[[Any], None] | None:
    """The ``check_args`` declared beside the signature that ``args_model`` reads: in the class that
    defines ``__init__`` (``target`` a class) or ``target`` (a bound method). A subclass that declares
    arguments of its own so inherits no check written for others."""
    if isinstance(target, type):
        owner, name = target, "__init__"
    else:
        owner, name = getattr(target, "__self__", None), getattr(target, "__name__", "")
    if not isinstance(owner, type):
        return None
    definer = next((cls for cls in owner.__mro__ if name in cls.__dict__), None)
    return definer.check_args if definer and "check_args" in definer.__dict__ else None


def _checked_by(check: Callable[[Any], None]) -> Callable[[BaseModel], BaseModel]:
    """A model validator running ``check`` (which raises ``ArgProblems``) on the checked arguments."""

    def validate(args: BaseModel) -> BaseModel:
        check(args)
        return args

    return validate
