"""Base pieces for typed configuration: strict models, components chosen by id, merging partial
configs, and args checked against a callable."""

from __future__ import annotations

import copy
import inspect
import logging
from collections.abc import Callable
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, create_model

from grue_bench.errors import Problem

log = logging.getLogger(__name__)


class Strict(BaseModel):
    """A config section: unknown keys are errors, values are validated on assignment too."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True, protected_namespaces=())


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
        raise ValueError(
            f"{value!r} is a string, which RL4LMs would have read as true; write false (no comma)"
        )
    return value


CommaTolerantBool = Annotated[bool, BeforeValidator(_stray_comma)]
"""A boolean that also takes RL4LMs's 'True,' (see ``_stray_comma``)."""


def _loc(loc: tuple[Any, ...]) -> str:
    return ".".join(str(part) for part in loc)


def problems_from(error: ValidationError, prefix: str = "") -> list[Problem]:
    """Turn a pydantic error into our problems, one per failing key, with the full key path."""
    problems = []
    for item in error.errors():
        key = ".".join(p for p in (prefix, _loc(item["loc"])) if p)
        if item["type"] == "extra_forbidden":
            problems.append(Problem("unknown key", key, "remove it or check its spelling"))
        elif item["type"] == "missing":
            problems.append(Problem("required key is missing", key, "add it"))
        else:
            got = item.get("input")
            shown = repr(got) if not isinstance(got, dict) else "a mapping"
            problems.append(Problem(f"{item['msg']} (got {shown})", key, "give a valid value"))
    return problems


def args_model(target: Callable[..., Any], name: str, skip: tuple[str, ...] = ()) -> type[BaseModel]:
    """A strict model of the keyword arguments ``target`` (a class or function) accepts,
    leaving out the parameters named in ``skip`` (those the framework passes itself)."""
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
    return create_model(  # type: ignore[call-overload]
        f"{name}Args", __config__=ConfigDict(extra=extra, arbitrary_types_allowed=True), **fields
    )
