"""The `grue` command: help for every subcommand, light start-up, listings, exit codes."""

import subprocess
import sys

import pytest

from grue_bench.cli import SUBCOMMANDS


@pytest.mark.parametrize("command", [[], *[[name] for name in SUBCOMMANDS]])
def test_help_answers_without_importing_heavy_libraries(command):
    # `grue --help` must be fast: torch, transformers and pandas load only inside a command, and
    # a command line imports the module of the command it names and no other
    code = (
        "import sys\n"
        "from grue_bench.cli import main\n"
        "try:\n"
        f"    main({['--log-level', 'DEBUG', *command, '--help']!r})\n"
        "except SystemExit as exit:\n"
        "    assert exit.code == 0\n"
        "heavy = ('torch', 'transformers', 'pandas', 'datasets', 'matplotlib')\n"
        "heavy = [m for m in heavy if m in sys.modules]\n"
        "assert not heavy, heavy\n"
        "print(sorted(m for m in sys.modules if m.startswith('grue_bench.commands.')))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert "usage: grue" in result.stdout
    assert result.stdout.splitlines()[-1] == str([f"grue_bench.commands.{name}" for name in command])


def test_python_m_grue_bench_runs_the_cli_of_this_interpreter():
    import grue_bench

    result = subprocess.run(
        [sys.executable, "-m", "grue_bench", "--version"], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"grue-bench {grue_bench.__version__}\n"
    usage_error = subprocess.run(
        [sys.executable, "-m", "grue_bench", "frobnicate"], capture_output=True, text=True, check=False
    )
    assert usage_error.returncode == 2
    assert usage_error.stderr.startswith("usage: grue ")


def test_a_reader_that_stops_early_is_no_error():
    """``grue ls | head -1``: the pipe closes before grue writes; no traceback, SIGPIPE's status."""
    listing = subprocess.Popen(
        [sys.executable, "-m", "grue_bench", "ls"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    listing.stdout.close()  # the reader stopped before anything was written
    stderr = listing.stderr.read()
    assert listing.wait() == 141
    assert stderr == ""


def test_ls_lists_every_kind(run_grue):
    code, out, _ = run_grue("ls")
    assert code == 0
    for kind in ("tasks", "datapools", "rewards", "metrics", "algorithms", "policies", "post_processors"):
        assert f"\n{kind} (" in "\n" + out
    for id in ("ppo", "nlpo", "a2c", "trpo", "supervised", "maskable_seq2seq_lm_actor_critic_policy"):
        assert f"  {id} " in out


def test_unknown_subcommand_is_a_usage_error(capsys):
    from grue_bench.cli import main

    with pytest.raises(SystemExit) as info:
        main(["frobnicate"])
    assert info.value.code == 2
    assert "invalid choice: 'frobnicate'" in capsys.readouterr().err
