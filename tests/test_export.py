"""`grue export`: a finished run's model as a Hugging Face folder with its card, loadable with
transformers; clear errors for a wrong key, an unfinished run, missing artifacts and an offline hub;
the upload call, proved without the network."""

import shutil

import pytest
from huggingface_hub import ModelCard
from transformers import AutoModelForCausalLM, AutoTokenizer

from grue_bench.errors import GrueError
from grue_bench.runner import export
from grue_bench.store import Store


@pytest.fixture(scope="module")
def run_key(tiny_finished_run) -> str:
    with Store(tiny_finished_run / "s.sqlite") as store:
        (record,) = store.runs()
    return record.key


def final_test_metrics(store_path) -> dict[str, float]:
    with Store(store_path) as store:
        (record,) = store.runs()
        curves = store.curves(record.id, "test")
    last = max(points[-1][0] for points in curves.values())
    return {name: points[-1][1] for name, points in curves.items() if points[-1][0] == last}


def test_export_writes_a_loadable_model_with_the_stores_scores(
    run_grue, tiny_finished_run, run_key, tmp_path
):
    store = tiny_finished_run / "s.sqlite"
    out = tmp_path / "exported"
    code, stdout, stderr = run_grue("export", run_key[:10], "--store", str(store), "--out", str(out))
    assert code == 0, stderr
    assert stdout.strip() == str(out)
    card = ModelCard.load(out / "README.md")
    assert {r.metric_type: r.metric_value for r in card.data.eval_results} == final_test_metrics(store)
    model = AutoModelForCausalLM.from_pretrained(out)
    tokenizer = AutoTokenizer.from_pretrained(out)
    assert model.config.vocab_size >= len(tokenizer) > 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["exported"]  # no staging folder left


def test_an_unknown_or_ambiguous_key_is_an_error(run_grue, tiny_finished_run, tmp_path):
    store = str(tiny_finished_run / "s.sqlite")
    code, _, stderr = run_grue("export", "zzzz", "--store", store, "--out", str(tmp_path / "m"))
    assert code == 2 and "no run with key 'zzzz'" in stderr and "grue runs" in stderr
    code, _, stderr = run_grue("export", "", "--store", store, "--out", str(tmp_path / "m"))
    assert code == 2 and "no run with key ''" in stderr
    assert not (tmp_path / "m").exists()


def test_an_ambiguous_prefix_is_an_error(tmp_path):
    with Store(tmp_path / "s.sqlite") as store:
        for seed in range(40):  # 40 keys: two share a first hex digit
            store.start_run(
                task="imdb",
                task_version=1,
                alg="ppo",
                seed=seed,
                profile="tiny",
                model=None,
                config={},
                config_hash="h",
            )
        keys = [record.key for record in store.runs()]
        prefix = next(k[0] for k in keys if sum(other.startswith(k[0]) for other in keys) > 1)
        with pytest.raises(GrueError, match=f"'{prefix}' is ambiguous") as caught:
            export.find_run(store, prefix)
    assert "give more characters" in str(caught.value)


def test_an_unfinished_run_and_missing_artifacts_are_errors(run_grue, tiny_finished_run, run_key, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(tiny_finished_run, copy)
    store = copy / "s.sqlite"
    with Store(store) as opened:
        opened.db["runs"].update(
            opened.get_run(run_key).id, {"status": "failed", "output_dir": str(copy / "runs")}
        )
    code, _, stderr = run_grue("export", run_key[:10], "--store", str(store), "--out", str(tmp_path / "m"))
    assert code == 2 and f"run {run_key[:10]}" in stderr and "is failed" in stderr and "grue run" in stderr
    with Store(store) as opened:
        opened.db["runs"].update(opened.get_run(run_key).id, {"status": "finished"})
    shutil.rmtree(copy / "runs")
    code, _, stderr = run_grue("export", run_key[:10], "--store", str(store), "--out", str(tmp_path / "m"))
    assert code == 2 and "holds no model" in stderr and "restore the run's output folder" in stderr
    assert not (tmp_path / "m").exists()


def test_an_existing_folder_and_no_destination_are_errors(run_grue, tiny_finished_run, run_key, tmp_path):
    store = str(tiny_finished_run / "s.sqlite")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "keep.txt").write_text("mine")
    code, _, stderr = run_grue("export", run_key, "--store", store, "--out", str(tmp_path / "full"))
    assert code == 2 and "not an empty folder" in stderr
    assert [p.name for p in (tmp_path / "full").iterdir()] == ["keep.txt"]
    code, _, stderr = run_grue("export", run_key, "--store", store)
    assert code == 2 and "--out DIR, --push-to-hub REPO_ID" in stderr
    code, _, stderr = run_grue("export", run_key, "--store", str(tmp_path / "nope.sqlite"), "--out", "x")
    assert code == 2 and "store not found" in stderr


def test_push_to_hub_offline_says_how_to_fix_and_writes_nothing(
    run_grue, tiny_finished_run, run_key, tmp_path
):
    store = str(tiny_finished_run / "s.sqlite")
    out = tmp_path / "m"
    code, _, stderr = run_grue(
        "export", run_key, "--store", store, "--out", str(out), "--push-to-hub", "me/model"
    )
    assert code == 2 and "offline" in stderr and "HF_TOKEN" in stderr and "hf auth login" in stderr
    assert not out.exists()


class FakeHub:
    """Records what would be created and uploaded (and what the uploaded folder held then)."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def create_repo(self, repo_id, **kwargs):
        self.calls.append(("create_repo", repo_id, kwargs))
        return f"https://huggingface.co/{repo_id}"

    def upload_folder(self, *, repo_id, folder_path, **kwargs):
        names = sorted(p.name for p in folder_path.iterdir())
        self.calls.append(("upload_folder", repo_id, folder_path, names, kwargs))


def test_push_to_hub_creates_the_repo_and_uploads_the_folder(
    run_grue, tiny_finished_run, run_key, tmp_path, monkeypatch
):
    monkeypatch.setattr(export, "hub_offline", lambda: False)
    monkeypatch.setattr(export, "get_token", lambda: "hf_test")
    hub = FakeHub()
    monkeypatch.setattr(export, "HfApi", lambda: hub)
    out = tmp_path / "m"
    args = ("export", run_key[:12], "--store", str(tiny_finished_run / "s.sqlite"))
    code, stdout, stderr = run_grue(*args, "--out", str(out), "--push-to-hub", "me/model", "--private")
    assert code == 0, stderr
    assert stdout.splitlines() == [str(out), "https://huggingface.co/me/model"]
    (create, upload) = hub.calls
    assert create == ("create_repo", "me/model", {"repo_type": "model", "private": True, "exist_ok": True})
    assert upload[:3] == ("upload_folder", "me/model", out)
    assert {"README.md", "config.json", "model.safetensors"} <= set(upload[3])
    hub.calls.clear()
    code, stdout, stderr = run_grue(*args, "--push-to-hub", "me/other")  # no --out: a temporary folder
    assert code == 0, stderr
    (_, upload) = hub.calls
    assert upload[1] == "me/other" and "README.md" in upload[3] and not upload[2].exists()
