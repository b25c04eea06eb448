"""The house as docs/ARCHITECTURE.md draws it: every import of grue_bench (function-local ones
included) runs down the floors table and keeps the narrower rules; no import cycle; an import
kept inside a function says why (start-up time); task hooks import nothing of grue_bench."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "ARCHITECTURE.md"
PACKAGE = "grue_bench"
START_UP = "start-up"


@dataclass(frozen=True)
class Import:
    importer: str  # module name
    imported: str  # module name
    path: Path
    line: int
    local: bool  # inside a function


def _table(text: str, heading: str) -> list[list[str]]:
    """The rows of the markdown table under ``## heading``, cells split."""
    section = text.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("|")]
    return [[cell.strip() for cell in row.strip("|").split("|")] for row in rows[2:]]


def _paths(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


def floors(text: str) -> dict[str, int]:
    """Room path (a file, or a folder ending in /) -> floor."""
    return {path: int(row[0]) for row in _table(text, "Floors") for path in _paths(row[1])}


def narrower_rules(text: str) -> dict[str, set[str]]:
    """Room -> the rooms it may import from."""
    return {_paths(row[0])[0]: set(_paths(row[1])) for row in _table(text, "Narrower rules")}


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def room_of(module: str, rooms: dict[str, int], root: Path) -> str | None:
    """The room holding ``module``: its file, or the deepest listed folder around it."""
    relative = module.replace(".", "/")
    candidates = [f"{relative}.py", f"{relative}/__init__.py"]
    for candidate in candidates:
        if candidate in rooms:
            return candidate
    if (root / f"{relative}/__init__.py").is_file() and f"{relative}/" in rooms:
        return f"{relative}/"
    folders = [room for room in rooms if room.endswith("/") and f"{relative}/".startswith(room)]
    return max(folders, key=len, default=None)


def _resolve(node: ast.ImportFrom, importer: str, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    base = importer.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def imports_of(root: Path, package: str = PACKAGE) -> list[Import]:
    """Every import of ``package`` in its files, with where it stands."""
    found = []
    for path in sorted((root / package).rglob("*.py")):
        importer = module_name(path, root)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        local_lines = {
            sub.lineno
            for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            for sub in ast.walk(node)
            if isinstance(sub, ast.Import | ast.ImportFrom)
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                module = _resolve(node, importer, path.name == "__init__.py")
                # "from package import submodule" imports the submodule
                targets = [
                    f"{module}.{alias.name}"
                    if (root / f"{module.replace('.', '/')}/{alias.name}").is_dir()
                    or (root / f"{module.replace('.', '/')}/{alias.name}.py").is_file()
                    else module
                    for alias in node.names
                ]
            else:
                continue
            for target in targets:
                if target == package or target.startswith(f"{package}."):
                    found.append(Import(importer, target, path, node.lineno, node.lineno in local_lines))
    return found


def violations(root: Path, doc_text: str, package: str = PACKAGE) -> list[str]:
    """What breaks the floors, the narrower rules or the start-up rule, one line each."""
    rooms, rules = floors(doc_text), narrower_rules(doc_text)
    problems = []
    for path in sorted((root / package).rglob("*.py")):
        if room_of(module_name(path, root), rooms, root) is None:
            problems.append(f"{path.relative_to(root)}: in no room of the floors table")
    for found in imports_of(root, package):
        where = f"{found.path.relative_to(root)}:{found.line}"
        source = room_of(found.importer, rooms, root)
        target = room_of(found.imported, rooms, root)
        if found.local and not _says_start_up(found.path, found.line):
            problems.append(
                f"{where}: a function-local import of {found.imported} without a {START_UP!r} comment"
            )
        if source is None or target is None or source == target:
            continue
        if rooms[target] >= rooms[source]:
            problems.append(
                f"{where}: {source} (floor {rooms[source]}) imports {target} (floor {rooms[target]})"
            )
        if source in rules and target not in rules[source]:
            problems.append(f"{where}: {source} may import only {sorted(rules[source])}, not {target}")
        if found.local and not _says_start_up(found.path, found.line):
            problems.append(
                f"{where}: a function-local import of {found.imported} without a '{START_UP}' comment"
            )
    return problems


def _says_start_up(path: Path, line: int) -> bool:
    """A comment naming start-up time on the import's line, or above it in the same block of
    imports and comments."""
    lines = path.read_text(encoding="utf-8").splitlines()
    index = line - 1
    while index >= 0:
        text = lines[index].strip()
        if START_UP in text and "#" in text:
            return True
        if index < line - 1 and not (text.startswith(("#", "from ", "import ")) or text == ")"):
            return False
        index -= 1
    return False


def cycles(root: Path, package: str = PACKAGE) -> list[list[str]]:
    """Import cycles between modules (function-local imports included)."""
    graph: dict[str, set[str]] = {}
    modules = {module_name(path, root) for path in (root / package).rglob("*.py")}
    for found in imports_of(root, package):
        target = found.imported
        while target not in modules and "." in target:
            target = target.rsplit(".", 1)[0]
        if target != found.importer and target in modules:
            graph.setdefault(found.importer, set()).add(target)
    loops, state = [], {}

    def visit(node: str, stack: list[str]) -> None:
        state[node] = "open"
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                loops.append([*stack[stack.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt, [*stack, nxt])
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    return loops


def test_every_import_runs_down_the_floors_and_keeps_the_narrower_rules():
    assert violations(ROOT, DOC.read_text(encoding="utf-8")) == []


def test_there_is_no_import_cycle():
    assert cycles(ROOT) == []


def test_task_hooks_import_nothing_of_grue_bench():
    offenders = []
    for hooks in sorted((ROOT / "tasks").glob("*/hooks.py")):
        tree = ast.parse(hooks.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = (
                [alias.name for alias in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            offenders += [
                f"{hooks.relative_to(ROOT)}:{node.lineno}" for name in names if name.startswith(PACKAGE)
            ]
    assert offenders == []


TOY_DOC = """## Floors
| floor | rooms | job |
|---|---|---|
| 3 | `toy/top.py` | top |
| 2 | `toy/mid/` | middle |
| 1 | `toy/low.py`, `toy/__init__.py` | ground |

## Narrower rules
| room | imports of `toy` only from |
|---|---|
| `toy/mid/` | `toy/__init__.py` |
"""


@pytest.fixture
def toy(tmp_path: Path) -> Path:
    files = {
        "toy/__init__.py": "",
        "toy/top.py": "from toy import low\nfrom toy.mid import a\n",
        "toy/mid/__init__.py": "",
        "toy/mid/a.py": "from toy.mid import b\n",
        "toy/mid/b.py": "import toy\n",
        "toy/low.py": "X = 1\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return tmp_path


def test_a_clean_toy_house_passes(toy: Path):
    assert violations(toy, TOY_DOC, "toy") == [] and cycles(toy, "toy") == []


def test_the_checks_catch_an_upward_import_a_broken_rule_a_bare_local_import_and_a_cycle(toy: Path):
    (toy / "toy/low.py").write_text("def f():\n    from toy import top\n")
    (toy / "toy/mid/b.py").write_text("from toy import low\nfrom toy.mid import a\n")
    found = violations(toy, TOY_DOC, "toy")
    assert "toy/low.py:2: toy/low.py (floor 1) imports toy/top.py (floor 3)" in found
    assert "toy/low.py:2: a function-local import of toy.top without a 'start-up' comment" in found
    assert "toy/mid/b.py:1: toy/mid/ may import only ['toy/__init__.py'], not toy/low.py" in found
    assert ["toy.mid.a", "toy.mid.b", "toy.mid.a"] in cycles(toy, "toy")
    assert ["toy.low", "toy.top", "toy.low"] in cycles(toy, "toy")


def test_a_local_import_that_says_start_up_time_is_kept(toy: Path):
    (toy / "toy/top.py").write_text("def f():\n    # start-up time: heavy\n    from toy import low\n")
    assert violations(toy, TOY_DOC, "toy") == []


def test_the_store_and_the_algorithm_are_typed_where_the_runner_and_the_loop_meet_them():
    import typing

    from grue_bench.rl.algorithm import OnPolicyAlgorithm
    from grue_bench.rl.supervised import Supervised
    from grue_bench.rl.trainer import Algorithm, Trainer
    from grue_bench.runner.executor import GridExecutor
    from grue_bench.runner.recorder import StoreRecorder
    from grue_bench.store import Store

    assert typing.get_type_hints(Trainer.__init__)["algorithm"] is Algorithm
    assert typing.get_type_hints(GridExecutor.__init__)["store"] is Store
    assert typing.get_type_hints(StoreRecorder)["store"] is Store
    # the loop's protocol is what both kinds of stage offer
    for stage in (OnPolicyAlgorithm, Supervised):
        assert callable(stage.step) and isinstance(stage.model, property), stage
    members = set(dir(Algorithm)) | set(Algorithm.__annotations__)
    assert {"iteration", "accelerator", "model", "step"} <= members
