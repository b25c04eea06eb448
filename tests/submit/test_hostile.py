"""Malformed and hostile submissions: each is rejected with a clear message (exit 2), and the results
store stays byte-for-byte unchanged. None of these reach the (slow) re-scoring."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.submit.conftest import TASK, TASK_VERSION, fingerprint, split_samples, write_jsonl

Mutation = Callable[[Path], None]


def edit_meta(change: Callable[[dict[str, Any]], None]) -> Mutation:
    """Change submission.yaml's data."""

    def mutate(folder: Path) -> None:
        path = folder / "submission.yaml"
        meta = yaml.safe_load(path.read_text())
        change(meta)
        path.write_text(yaml.safe_dump(meta, sort_keys=False))

    return mutate


def task_entry(meta: dict[str, Any]) -> dict[str, Any]:
    return meta["tasks"][TASK]


def seed_file(folder: Path, seed: int = 0) -> Path:
    return folder / TASK / f"seed{seed}.jsonl"


def rows(folder: Path, seed: int = 0) -> list[dict[str, Any]]:
    return [json.loads(line) for line in seed_file(folder, seed).read_text().splitlines()]


def missing_seed_file(folder: Path) -> None:
    seed_file(folder, 2).unlink()


def duplicate_id(folder: Path) -> None:
    found = rows(folder)
    write_jsonl(seed_file(folder), [*found, found[0]])


def ids_of_another_split(folder: Path) -> None:
    from grue_bench.datapools import TaskPool

    validation = list(TaskPool.prepare("validation", task=TASK))
    write_jsonl(seed_file(folder), [{"id": s.id, "text": "x"} for s in validation])


def text_not_a_string(folder: Path) -> None:
    found = rows(folder)
    found[0]["text"] = 5
    write_jsonl(seed_file(folder), found)


def extra_key_in_line(folder: Path) -> None:
    found = rows(folder)
    found[1]["score"] = 0.9
    write_jsonl(seed_file(folder), found)


def huge_file(folder: Path) -> None:
    with seed_file(folder).open("r+b") as handle:  # sparse: 25 MB on paper, nothing on disk
        handle.truncate(25_000_000)


def huge_text(folder: Path) -> None:
    found = rows(folder)
    found[0]["text"] = "word " * 5_000
    write_jsonl(seed_file(folder), found)


def not_utf8(folder: Path) -> None:
    seed_file(folder).write_bytes(b'{"id": "\xff\xfe", "text": "x"}\n')


def deeply_nested_json(folder: Path) -> None:
    seed_file(folder).write_text("[" * 200_000 + "\n")


def symlink_out(folder: Path) -> None:
    outside = folder.parent.parent / "secret.jsonl"
    outside.write_text("{}\n")
    seed_file(folder).unlink()
    seed_file(folder).symlink_to(outside)


def symlinked_folder_out(folder: Path) -> None:
    outside = folder.parent.parent / "elsewhere"
    (folder / TASK).rename(outside)
    (folder / TASK).symlink_to(outside, target_is_directory=True)


def fifo_file(folder: Path) -> None:
    seed_file(folder).unlink()
    os.mkfifo(seed_file(folder))  # reading it would block forever


def undeclared_file(folder: Path) -> None:
    (folder / "model.pkl").write_bytes(b"\x80\x04K\x01.")


def python_tag_yaml(folder: Path) -> None:
    text = (folder / "submission.yaml").read_text()
    marker = folder.parent.parent / "pwned"
    payload = f'description: !!python/object/apply:os.system ["touch {marker}"]\n'
    (folder / "submission.yaml").write_text(
        "\n".join(line for line in text.splitlines() if not line.startswith("description")) + "\n" + payload
    )


def yaml_aliases(folder: Path) -> None:
    bomb = 'a: &a ["x","x","x","x","x","x","x","x","x"]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n'
    bomb += "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
    text = (folder / "submission.yaml").read_text()
    (folder / "submission.yaml").write_text(
        text + "config_bomb:\n" + "".join("  " + ln + "\n" for ln in bomb.splitlines())
    )


def yaml_duplicate_key(folder: Path) -> None:
    path = folder / "submission.yaml"
    path.write_text(path.read_text() + "name: other-name\n")


def no_metadata(folder: Path) -> None:
    (folder / "submission.yaml").unlink()


def set_key(*path: str, value: Any) -> Mutation:
    def change(meta: dict[str, Any]) -> None:
        target = meta
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return edit_meta(change)


CASES = [
    pytest.param(
        missing_seed_file, ["totto/seed2.jsonl", "no generations for seed 2"], id="missing-seed-file"
    ),
    pytest.param(set_key("tasks", TASK, "seeds", value=[0, 1]), ["at least 3 are needed"], id="two-seeds"),
    pytest.param(set_key("tasks", TASK, "seeds", value=[0, 1, 1, 2]), ["listed twice"], id="repeated-seed"),
    pytest.param(
        duplicate_id, [f"seed0.jsonl line {len(split_samples()) + 1}", "predicted twice"], id="duplicate-id"
    ),
    pytest.param(ids_of_another_split, ["is not in this split", "have no prediction"], id="other-split-ids"),
    pytest.param(text_not_a_string, ["line 1", "needs string fields 'id' and 'text'"], id="text-not-string"),
    pytest.param(extra_key_in_line, ["line 2", "'score' besides 'id' and 'text'"], id="extra-key-in-line"),
    pytest.param(
        set_key("tasks", TASK, "task_version", value="1"), ["task_version", "valid integer"], id="quoted-int"
    ),
    pytest.param(
        set_key("tasks", TASK, "seeds", value="0,1,2"), ["seeds", "valid list"], id="seeds-not-list"
    ),
    pytest.param(set_key("format", value=2), ["format", "Input should be 1"], id="format-version"),
    pytest.param(set_key("surprise", value=1), ["surprise: unknown key"], id="unknown-key"),
    pytest.param(
        set_key("tasks", "totoo", value={"task_version": 1, "seeds": [0, 1, 2]}),
        ["unknown task id 'totoo'", "Did you mean 'totto'"],
        id="unknown-task",
    ),
    pytest.param(
        set_key("tasks", TASK, "task_version", value=7),
        [f"is at version {TASK_VERSION}", "not comparable"],
        id="task-version",
    ),
    pytest.param(huge_file, ["25,000,000 bytes", "limit of 20,000,000"], id="huge-file"),
    pytest.param(huge_text, ["25,000 characters long", "limit of 20,000"], id="huge-text"),
    pytest.param(not_utf8, ["is not UTF-8 text"], id="not-utf8"),
    pytest.param(deeply_nested_json, ["line 1", "nested too deeply"], id="deep-json"),
    pytest.param(
        set_key("tasks", TASK, "files", value={0: "../team-b/seed0.jsonl"}),
        ["must not contain '..'"],
        id="dotdot-path",
    ),
    pytest.param(
        set_key("tasks", TASK, "files", value={0: "/etc/passwd.jsonl"}), ["not absolute"], id="absolute-path"
    ),
    pytest.param(
        symlink_out,
        ["totto/seed0.jsonl", "symbolic link (leading outside the submission folder)"],
        id="symlink-out",
    ),
    pytest.param(symlinked_folder_out, ["totto: is a symbolic link (leading outside"], id="symlinked-folder"),
    pytest.param(fifo_file, ["not a regular file"], id="fifo"),
    pytest.param(undeclared_file, ["model.pkl: is not part of the submission"], id="undeclared-pickle"),
    pytest.param(python_tag_yaml, ["not valid YAML", "python/object/apply:os.system"], id="python-tag"),
    pytest.param(yaml_aliases, ["aliases (*name), which are not accepted"], id="yaml-alias-bomb"),
    pytest.param(yaml_duplicate_key, ["duplicate key 'name'"], id="yaml-duplicate-key"),
    pytest.param(no_metadata, ["submission.yaml: missing"], id="no-metadata"),
    pytest.param(
        set_key("name", value="<script>alert(1)</script>"),
        ["name", "should match pattern"],
        id="script-in-name",
    ),
    pytest.param(
        set_key("algorithm", value='ppo<img src=x onerror="alert(1)">'),
        ["algorithm", "pattern"],
        id="markup-in-label",
    ),
    pytest.param(
        set_key("authors", value=[{"name": "<b>Eve</b>"}]),
        ["authors.0.name", "without '<' or '>'"],
        id="markup-in-author",
    ),
    pytest.param(
        set_key("authors", value=[{"name": "Eve\u202egnp.exe"}]),
        ["bidirectional-override"],
        id="bidi-in-author",
    ),
    pytest.param(set_key("link", value="javascript:alert(1)"), ["link", "http:// or https://"], id="js-link"),
    pytest.param(
        set_key("config", value={"when": "2020-01-01", "f": {"x": b"\x00"}}),
        ["config.f.x", "bytes"],
        id="config-not-plain-data",
    ),
    pytest.param(
        set_key("algorithm", value="ppo"),
        ["run(s) of algorithm 'ppo' on totto", "pool their seeds"],
        id="label-used-by-own-runs",
    ),
]


@pytest.mark.parametrize(("mutate", "expected"), CASES)
def test_rejected_with_a_clear_message_and_store_unchanged(
    make_submission, store_path: Path, run_grue, mutate: Mutation, expected: list[str]
):
    folder = make_submission()
    mutate(folder)
    before = fingerprint(store_path)
    code, out, err = run_grue("submit", str(folder), "--store", str(store_path))
    assert code == 2, err
    assert out == ""
    for text in expected:
        assert text in err, f"{text!r} not in:\n{err}"
    assert "fix:" in err
    assert fingerprint(store_path) == before
    assert not (folder.parent.parent / "pwned").exists()


def test_every_problem_is_reported_at_once(make_submission, tmp_path: Path, run_grue):
    folder = make_submission()
    set_key("link", value="ftp://example.org")(folder)
    missing_seed_file(folder)
    duplicate_id(folder)
    undeclared_file(folder)
    store = tmp_path / "new" / "grue.db"
    code, _, err = run_grue("submit", str(folder), "--store", str(store))
    assert code == 2
    assert "4 problems in" in err
    for text in ("link", "no generations for seed 2", "predicted twice", "model.pkl"):
        assert text in err
    assert not store.exists()  # validation fails before any store is opened


def test_ids_of_a_file_are_checked_against_the_task_split(make_submission, run_grue, store_path):
    # a file for another task's split: every id unknown, every test id missing
    folder = make_submission()
    write_jsonl(seed_file(folder), [{"id": f"imdb-test-{i}", "text": "x"} for i in range(30)])
    code, _, err = run_grue("submit", str(folder), "--store", str(store_path))
    assert code == 2
    assert "... and" in err  # capped, not 30+ lines of the same problem
    assert f"{len(split_samples())} id(s) of the split have no prediction" in err


def test_declared_files_may_live_in_nested_folders(make_submission):
    from grue_bench.submit.validate import validate

    folder = make_submission()
    nested = folder / "generations" / "run-a" / "zero.jsonl"
    nested.parent.mkdir(parents=True)
    seed_file(folder).rename(nested)
    set_key("tasks", TASK, "files", value={0: "generations/run-a/zero.jsonl"})(folder)
    submission = validate(folder)
    assert submission.tasks[TASK].seeds[0].path == "generations/run-a/zero.jsonl"
    assert len(submission.tasks[TASK].seeds[0].texts) == len(split_samples())
