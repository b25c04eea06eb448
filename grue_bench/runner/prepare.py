"""Preparing a grid's shared assets once per group of runs (base LM, reward, metrics), before the
runs start in parallel; otherwise every worker would pretrain the same model at the same time."""

from __future__ import annotations

import logging
import traceback
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed

from tqdm.auto import tqdm

from grue_bench.plugins.components import build
from grue_bench.resolve.grid import RunSpec
from grue_bench.runner.assemble import build_reward, load_base

log = logging.getLogger(__name__)


def error_text(exc: BaseException) -> str:
    """An exception as the one line a failed run records."""
    return f"{type(exc).__name__}: {exc}"


def asset_key(spec: RunSpec) -> str:
    """(task, profile, policy): what decides which base model and metric assets a run needs."""
    policy = spec.config.alg.policy.id if spec.config.alg.policy else ""
    return f"{spec.task}|{spec.config.profile}|{policy}"


def asset_groups(specs: Sequence[RunSpec]) -> list[RunSpec]:
    """One spec per asset key: the runs that share a base model and metric assets."""
    groups: dict[str, RunSpec] = {}
    for spec in specs:
        groups.setdefault(asset_key(spec), spec)
    return list(groups.values())


PREPARING = "preparing base models and metrics"


def prepare_here(todo: Sequence[RunSpec]) -> dict[str, str]:
    """Prepare each asset group in this process; the error text of each group that failed."""
    groups = asset_groups(todo)
    errors = (prepare_guarded(spec) for spec in groups)
    done = zip(groups, tqdm(errors, total=len(groups), desc=PREPARING, unit="task"), strict=True)
    return {asset_key(spec): error for spec, error in done if error}


def prepare_in(pool: ProcessPoolExecutor, todo: Sequence[RunSpec]) -> dict[str, str]:
    """Prepare the asset groups in ``pool``'s workers; the error text of each group that failed."""
    groups = asset_groups(todo)
    futures = {pool.submit(prepare_guarded, spec): spec for spec in groups}
    done = tqdm(as_completed(futures), total=len(groups), desc=PREPARING, unit="task")
    return {asset_key(futures[future]): future.result() for future in done if future.result()}


def prepare_guarded(spec: RunSpec) -> str | None:
    """``prepare_assets``, a failure as its error text: the group's runs are recorded failed with
    it (a run failing to set up is a failed run, like one failing later)."""
    try:
        prepare_assets(spec)
    except Exception as exc:
        log.debug("preparing %s failed:\n%s", spec.label, traceback.format_exc())
        return error_text(exc)
    return None


def prepare_assets(spec: RunSpec) -> str:
    """Build (or find in the cache) the base LM, reward and metric assets of ``spec``'s group.
    Done once per group before runs start in parallel; otherwise every worker would pretrain the
    same model at the same time. Caches are written atomically, so groups build in parallel."""
    load_base(spec.config)
    build_reward(spec.config)
    for i, metric in enumerate(spec.config.train_evaluation.metrics):
        build("metrics", metric.id, metric.args, f"train_evaluation.metrics.{i}.args")
    return spec.task
