"""One generic registry for every extension point, with lazy "module:attr" entries.

Built-in entries are strings, imported only when used, so the CLI starts fast. Third-party
plugins register through the Python entry-point group ``grue_bench.<kind>`` (for example
``grue_bench.rewards``); the entry point's name is the id.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable, Iterator
from importlib.metadata import entry_points
from pathlib import PurePath
from typing import Any, Generic, TypeVar

from grue_bench.errors import GrueError

T = TypeVar("T")


def import_object(spec: str) -> Any:
    """Import ``"package.module:attr.sub"`` and return the attribute."""
    module_name, _, attr_path = spec.partition(":")
    if not module_name or not attr_path:
        raise GrueError(
            f"'{spec}' is not a 'module:attribute' reference",
            fix="write it as 'package.module:name', e.g. 'my_pkg.rewards:MyReward'",
        )
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise GrueError(
            f"cannot import module '{module_name}' (from '{spec}'): {exc}",
            fix="install the package that provides it or correct the reference",
        ) from exc
    for part in attr_path.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError as exc:
            raise GrueError(
                f"module '{module_name}' has no attribute '{attr_path}' (from '{spec}')",
                fix="correct the reference",
            ) from exc
    return obj


class Registry(Generic[T]):
    """Maps ids to objects of one kind; entries load on first use."""

    def __init__(
        self,
        kind: str,
        builtins: dict[str, str] | None = None,
        *,
        loader: Callable[[Any], T] | None = None,
    ) -> None:
        self.kind = kind
        self.entry_point_group = f"grue_bench.{kind}"
        self._targets: dict[str, Any] = dict(builtins or {})
        self._loaded: dict[str, T] = {}
        self._loader = loader
        self._plugins_scanned = False
        self._discoverers: list[Callable[[], dict[str, Any]]] = []

    def register(self, id: str, target: Any = None) -> Any:
        """Register ``target`` (an object or a "module:attr" string) as ``id``; usable as decorator."""
        if target is None:

            def decorator(obj: Any) -> Any:
                self.register(id, obj)
                return obj

            return decorator
        self._targets[id] = target
        self._loaded.pop(id, None)
        return target

    def add_discoverer(self, discover: Callable[[], dict[str, Any]]) -> None:
        """Add a function that finds entries lazily (e.g. task folders on disk)."""
        self._discoverers.append(discover)
        self._plugins_scanned = False

    def _scan(self) -> None:
        if self._plugins_scanned:
            return
        self._plugins_scanned = True
        for discover in self._discoverers:
            for id, target in discover().items():
                self._targets.setdefault(id, target)
        for ep in entry_points(group=self.entry_point_group):
            self._targets.setdefault(ep.name, ep)

    def ids(self) -> list[str]:
        """All registered ids, sorted."""
        self._scan()
        return sorted(self._targets)

    def __contains__(self, id: object) -> bool:
        self._scan()
        return id in self._targets

    def __iter__(self) -> Iterator[str]:
        return iter(self.ids())

    def source(self, id: str) -> str:
        """Where an entry comes from, for listings."""
        target = self._target(id)
        if isinstance(target, (str, PurePath)):
            return str(target)
        if hasattr(target, "value") and hasattr(target, "group"):  # an entry point
            dist = getattr(target, "dist", None)
            return f"{target.value} (plugin {dist.name})" if dist else target.value
        name = getattr(target, "__qualname__", None) or type(target).__name__
        return f"{getattr(target, '__module__', '?')}:{name}"

    def _target(self, id: str) -> Any:
        self._scan()
        if id not in self._targets:
            raise self.unknown(id)
        return self._targets[id]

    @property
    def singular(self) -> str:
        """The kind of one entry: 'policy' for the registry of policies."""
        if self.kind.endswith("ies"):
            return self.kind[:-3] + "y"
        return self.kind[:-1] if self.kind.endswith("s") else self.kind

    def unknown(self, id: str, *, source: str | None = None, key: str = "") -> GrueError:
        """The error for an unknown id, with close matches and the full list."""
        known = self.ids()
        close = difflib.get_close_matches(id, known, n=3, cutoff=0.6)
        hint = f"Did you mean {' or '.join(repr(c) for c in close)}? " if close else ""
        return GrueError(
            f"unknown {self.singular} id '{id}'. {hint}Available: {', '.join(known) or '(none)'}",
            source=source,
            key=key,
            fix=f"use one of the registered ids (see `grue ls {self.kind}`) or register a plugin",
        )

    def get(self, id: str) -> T:
        """The object registered as ``id``, loaded on first use."""
        if id in self._loaded:
            return self._loaded[id]
        target = self._target(id)
        if isinstance(target, str):
            obj = import_object(target)
        elif hasattr(target, "load") and hasattr(target, "group"):  # an entry point
            obj = target.load()
        else:
            obj = target
        if self._loader is not None:
            obj = self._loader(obj)
        self._loaded[id] = obj
        return obj
