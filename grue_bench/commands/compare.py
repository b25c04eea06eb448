"""Compare reference baselines with the RL4LMs paper: per task, the headline re-scored per sample
from the generations (mean with a 95% interval over seeds and test samples), the task's floors and
human ceiling, the stated perplexity (seeds only) and collapse flags; one line per step of the
paper's ordering with our paired verdict (better, worse, tie), the paper's own direction and
whether we agree, and for a tie what would resolve it. A profile's baselines are the folders
<profile>-zero-shot, -supervised, -ppo, -nlpo, -supervised-ppo, -supervised-nlpo; tiny is a smoke
profile (no paper column, nothing counted)."""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--profile", required=True, help="profiles, comma-separated (tiny,small): one section each"
    )
    parser.add_argument(
        "--baselines", type=Path, default=Path("baselines"), help="the baselines folder (default baselines/)"
    )
    parser.add_argument("--out", type=Path, help="write the Markdown here (default: print it)")


def run(args: argparse.Namespace) -> int:
    # start-up time: `grue <command> --help` imports this module (cli.py)
    from grue_bench.errors import GrueError
    from grue_bench.submit.compare import compare_profile, load_paper, render_markdown

    if args.out is not None and not args.out.parent.is_dir():
        raise GrueError(
            "its folder does not exist", source=str(args.out), key="--out", fix="create the folder first"
        )
    paper = load_paper()
    profiles = [p.strip() for p in args.profile.split(",") if p.strip()]
    command = f"grue compare --profile {','.join(profiles)}"
    sections = [f"# Reference baselines beside the RL4LMs paper\n\nWritten by `{command}`.\n"]
    sections += [render_markdown(p, compare_profile(args.baselines, p, paper)) for p in profiles]
    text = "\n".join(sections)
    if args.out is None:
        print(text, end="")
        return 0
    with tempfile.NamedTemporaryFile("w", dir=args.out.parent, delete=False, suffix=".tmp") as tmp:
        tmp.write(text)
    os.replace(tmp.name, args.out)
    print(args.out)
    return 0
