"""A finished run's final model out of the store's artifacts: its ``model/`` folder copied, its card
(re)written from the store's numbers, and uploaded to the Hugging Face hub if asked."""

from __future__ import annotations

import logging
import shutil
import tempfile
from pathlib import Path

from huggingface_hub import HfApi, get_token
from huggingface_hub.errors import HfHubHTTPError

from grue_bench.errors import GrueError
from grue_bench.models.hub import hub_offline
from grue_bench.resolve.grid import recorded_run_config
from grue_bench.runner.model_card import TrainedRun, write_model_card
from grue_bench.store import RunRecord, Store

log = logging.getLogger(__name__)

MODEL_FILES = ("config.json", "adapter_config.json")
"""A model folder holds one of these: a full model, or a PEFT adapter."""


def find_run(store: Store, prefix: str) -> RunRecord:
    """The one run whose key starts with ``prefix`` (``grue runs`` shows 10 characters)."""
    matches = [record for record in store.runs() if record.key.startswith(prefix.strip().lower())]
    if not prefix.strip() or not matches:
        raise GrueError(
            f"no run with key '{prefix}' in the store",
            source=str(store.path),
            key="RUN_KEY",
            fix="list the runs and their keys with `grue runs --store STORE`",
        )
    if len(matches) > 1:
        keys = ", ".join(record.key[:16] for record in matches[:5])
        raise GrueError(
            f"run key '{prefix}' is ambiguous: {len(matches)} runs start with it ({keys})",
            source=str(store.path),
            key="RUN_KEY",
            fix="give more characters of the key",
        )
    return matches[0]


def final_test_metrics(store: Store, record: RunRecord) -> dict[str, float]:
    """The run's test scores at its last evaluated iteration."""
    curves = store.curves(record.id, "test")
    last = max((points[-1][0] for points in curves.values()), default=None)
    return {name: points[-1][1] for name, points in curves.items() if points[-1][0] == last}


def model_folder(record: RunRecord) -> Path:
    """The run's ``model/`` folder; a GrueError when the run is not finished or the folder is gone."""
    label = f"run {record.key[:10]} ({record.task}/{record.alg}/seed{record.seed})"
    if record.status != "finished":
        raise GrueError(
            f"{label} is {record.status}: only a finished run has a final model",
            key="RUN_KEY",
            fix="finish it first (`grue run` resumes it), or pick a finished run in `grue runs`"
            if record.source != "submission"
            else "a submitted baseline has no model; pick a run trained with `grue run`",
        )
    if record.artifacts is None:
        raise GrueError(
            f"{label} records no output folder", key="RUN_KEY", fix="run it again with `grue run`"
        )
    folder = record.artifacts / "model"
    if not any((folder / name).is_file() for name in MODEL_FILES):
        raise GrueError(
            f"{label}: its model folder holds no model (no {' or '.join(MODEL_FILES)})",
            source=str(folder),
            fix="the artifacts were moved or deleted; restore the run's output folder, "
            "or run it again with `grue run --force`",
        )
    return folder


def export_model(store_path: Path, key: str, out: Path) -> Path:
    """Copy run ``key``'s final model to the new folder ``out`` with its card; returns ``out``.

    The copy is made beside ``out`` and renamed into place, so a failure leaves nothing behind."""
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise GrueError(
            "already exists and is not an empty folder",
            source=str(out),
            key="--out",
            fix="give a new folder, or remove this one",
        )
    with Store(store_path, reader=True) as store:
        record = find_run(store, key)
        folder = model_folder(record)
        metrics = final_test_metrics(store, record)
    trained = TrainedRun(
        record.task,
        record.alg,
        record.seed,
        record.model or "unknown",
        recorded_run_config(record.config),
        metrics,
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}-", dir=out.parent))
    try:
        copy = staging / "model"
        shutil.copytree(folder, copy)
        write_model_card(copy, trained)
        if out.exists():
            out.rmdir()  # empty (checked above)
        copy.rename(out)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    log.info("exported run %s to %s", record.key[:10], out)
    return out


def check_hub_access() -> None:
    """A GrueError unless the hub is reachable and a token is set (both needed to upload)."""
    fix = (
        "connect to the network, unset HF_HUB_OFFLINE, and log in: `hf auth login` "
        "(`huggingface-cli login` with an older huggingface_hub) or set HF_TOKEN"
    )
    if hub_offline():
        raise GrueError(
            "cannot push to the Hugging Face hub: it is offline "
            "(HF_HUB_OFFLINE/TRANSFORMERS_OFFLINE is set or huggingface.co cannot be reached)",
            key="--push-to-hub",
            fix=fix,
        )
    if get_token() is None:
        raise GrueError("cannot push to the Hugging Face hub: no token", key="--push-to-hub", fix=fix)


def push_to_hub(folder: Path, repo_id: str, private: bool = False) -> str:
    """Upload ``folder`` as the model repository ``repo_id`` (created if missing); returns its URL."""
    api = HfApi()
    try:
        url = api.create_repo(repo_id, repo_type="model", private=private, exist_ok=True)
        api.upload_folder(
            repo_id=repo_id, folder_path=folder, repo_type="model", commit_message="grue export"
        )
    except HfHubHTTPError as exc:
        raise GrueError(
            f"upload to the Hugging Face hub failed: {exc}",
            key="--push-to-hub",
            fix="check the repo id (user/name), that your token may write to it (`hf auth login`), "
            "and the network",
        ) from exc
    log.info("pushed %s to %s", folder, url)
    return str(url)
