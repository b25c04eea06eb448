"""List what is registered (built in, from task folders, or from plugins' entry points)."""

from __future__ import annotations

import argparse

KINDS = ("tasks", "datapools", "rewards", "metrics", "algorithms", "policies", "post_processors")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("kind", nargs="?", choices=KINDS, help="what to list (default: everything)")


def _describe(kind: str, id: str) -> str:
    # start-up time: `grue <command> --help` imports this module (cli.py)
    from grue_bench import plugins

    registry = plugins.REGISTRIES[kind]
    if kind == "tasks":
        # start-up time: `grue <command> --help` imports this module (cli.py)
        from grue_bench.errors import GrueError

        try:
            task = registry.get(id)
        except GrueError as exc:
            return f"INVALID ({len(exc.problems)} problem(s); see `grue validate {registry.source(id)}`)"
        return f"v{task.version}  {task.name}  [{task.model_type}]  {registry.source(id)}"
    return registry.source(id)


def run(args: argparse.Namespace) -> int:
    # start-up time: `grue <command> --help` imports this module (cli.py)
    from grue_bench import plugins

    for kind in [args.kind] if args.kind else KINDS:
        registry = plugins.REGISTRIES[kind]
        ids = registry.ids()
        print(f"{kind} ({len(ids)}):")
        width = max((len(i) for i in ids), default=0)
        for id in ids:
            print(f"  {id:<{width}}  {_describe(kind, id)}")
    return 0
