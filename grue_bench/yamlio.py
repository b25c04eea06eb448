"""Safe YAML reading (no Python tags, no duplicate keys, YAML 1.2 numbers) with errors that name the file."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from grue_bench.errors import GrueError


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate keys instead of silently keeping the last one."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    seen: dict[Any, Any] = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(None, None, f"duplicate key '{key}'", key_node.start_mark)
        seen[key] = loader.construct_object(value_node, deep=deep)
    return seen


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)

# PyYAML resolves plain scalars by YAML 1.1, whose floats need a dot and a signed exponent:
# 1e-5, 5e3 and 1.0e5 would stay strings, so `--set alg.args.learning_rate=1e-5` would change the
# config (and its hash) against `learning_rate: 0.00001`. YAML 1.2 reads them as numbers; so do we,
# for every file and override read through this module. Quoted scalars stay strings.
_EXPONENT_FLOAT = re.compile(r"^[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)[eE][-+]?[0-9]+$")
_StrictLoader.add_implicit_resolver("tag:yaml.org,2002:float", _EXPONENT_FLOAT, list("-+.0123456789"))


def parse_yaml(text: str, source: str) -> Any:
    """Parse YAML text safely; ``source`` names it in errors."""
    try:
        return yaml.load(text, Loader=_StrictLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise GrueError(
            f"not valid YAML{where}: {problem}",
            source=source,
            fix="correct the YAML syntax; Python tags (!!python/...) are never accepted",
        ) from exc


def _read_utf8(path: Path) -> str:
    """The text of a UTF-8 file; any other encoding is a GrueError naming where the first foreign
    byte is (Latin-1 and UTF-16 files from Windows editors are the usual cause), not a traceback."""
    raw = path.read_bytes()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise GrueError(
            f"not UTF-8 text: byte 0x{raw[exc.start]:02x} at line {line} (byte offset {exc.start})",
            source=str(path),
            fix="save the file as UTF-8 (e.g. `iconv -f latin1 -t utf-8`, or your editor's encoding menu)",
        ) from exc


def read_yaml_mapping(path: str | Path) -> dict[str, Any]:
    """Read a YAML file whose top level must be a mapping."""
    path = Path(path)
    if not path.is_file():
        raise GrueError(
            "file not found" if not path.exists() else "not a file",
            source=str(path),
            fix="check the path",
        )
    data = parse_yaml(_read_utf8(path), str(path))
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise GrueError(
            f"the top level must be a mapping of keys, not {type(data).__name__}",
            source=str(path),
            fix="write the config as 'key: value' lines",
        )
    return data


def dump_yaml(data: Any) -> str:
    """YAML text in a stable key order."""
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, default_flow_style=False)
