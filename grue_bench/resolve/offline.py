"""What an offline profile (tiny, small) changes in a config that names hub models: every hub
model it names is unset, so that the profile's offline counterpart is used, and what has no
offline counterpart is left out; each change is logged. An RL4LMs config then runs here."""

from __future__ import annotations

import copy
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from grue_bench import plugins

log = logging.getLogger(__name__)

OFFLINE_PROFILES = ("tiny", "small")
"""The profiles whose models all work offline: given on the command line with a config, they
replace every hub model the config names."""
BASE_LM_KEYS = ("tokenizer.model_name", "alg.model_name", "alg.policy.args.model_name")
"""Where a config names its base LM; unset, the profile's base LM is used."""
MODEL_ARGS = ("model_name", "tokenizer_id", "tokenizer_name")
"""Reward and metric arguments naming a hub model; unset, each takes its offline default (the
offline classifiers, the policy's own LM and tokenizer for perplexity)."""
OFFLINE_STAND_INS = {"common_gen_preference_model": ("model_type", "offline")}
"""Rewards whose hub model has an offline stand-in chosen by an argument (unless a local
``model_path`` is given): id -> (argument, value)."""
COMPONENT_MODEL_ARGS = {"bert_score": ("model_type",)}
"""Further arguments naming a hub model, per reward or metric id: BERTScore's backbone. (The
perplexity's stride stays: one longer than the scored LM's window is cut to fit it.)"""


def _base_lm(profile: str, task: str) -> str:
    """What replaces a hub base LM under an offline profile, for the log."""
    if profile == "tiny":
        return f"the tiny profile's LM, trained here on task {task}'s texts"
    return "the small profile's LM, SmolLM2-135M-Instruct"


def _named_models(data: dict[str, Any], profile: str, task: str) -> Iterator[tuple[str, dict, str, str]]:
    """(key path, the mapping holding the key, the key, its offline counterpart) of every model
    name in a config."""
    for path in BASE_LM_KEYS:
        node: Any = data
        *parents, key = path.split(".")
        for part in parents:
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, dict) and key in node:
            yield path, node, key, _base_lm(profile, task)
    evaluation = data.get("train_evaluation")
    metrics = evaluation.get("metrics") if isinstance(evaluation, dict) else None
    components = [("reward_fn", data.get("reward_fn"))]
    components += [(f"train_evaluation.metrics.{i}", m) for i, m in enumerate(metrics or [])]
    for where, component in components:
        args = component.get("args") if isinstance(component, dict) else None
        if not isinstance(args, dict):
            continue
        for key in (*MODEL_ARGS, *COMPONENT_MODEL_ARGS.get(component.get("id"), ())):
            if key in args:
                yield f"{where}.args.{key}", args, key, f"{component.get('id')}'s offline default"


def offline_models(data: dict[str, Any], profile: str, task: str) -> dict[str, Any]:
    """``data`` with every hub model it names unset, so that ``profile``'s offline counterpart
    is used: an RL4LMs config then runs offline. Local folders are kept; each change is logged,
    since the run no longer uses the models the config names."""
    data = copy.deepcopy(data)
    replaced = set()
    for path, node, key, counterpart in list(_named_models(data, profile, task)):
        name = node[key]
        if isinstance(name, str) and Path(name).expanduser().exists():
            continue
        del node[key]
        replaced.add(path)
        log.info("%s profile: %s %s -> %s", profile, path, name, counterpart)
    _choose_offline_stand_in(data, profile)
    if replaced & set(BASE_LM_KEYS):
        _drop_context_start_token(data, profile)
    _leave_out_unavailable_metrics(data, profile)
    return data


def _choose_offline_stand_in(data: dict[str, Any], profile: str) -> None:
    """Set the argument choosing the reward's offline stand-in (``OFFLINE_STAND_INS``), unless the
    config gives the reward a local ``model_path``."""
    reward = data.get("reward_fn")
    stand_in = OFFLINE_STAND_INS.get(reward.get("id")) if isinstance(reward, dict) else None
    args = reward.setdefault("args", {}) if stand_in else None
    if stand_in and isinstance(args, dict) and not args.get("model_path"):
        key, value = stand_in
        log.info(
            "%s profile: reward_fn.args.%s %s -> %s (%s's offline stand-in)",
            profile, key, args.get(key, "(default)"), value, reward["id"],
        )  # fmt: skip
        args[key] = value


def _drop_context_start_token(data: dict[str, Any], profile: str) -> None:
    """Drop ``env.args.context_start_token``, a token id of the replaced tokenizer's vocabulary:
    the profile's LM starts its responses as it was built to."""
    env_args = (data.get("env") or {}).get("args")
    if isinstance(env_args, dict) and "context_start_token" in env_args:
        token = env_args.pop("context_start_token")
        log.info(
            "%s profile: env.args.context_start_token %s -> left out: it is a token id of the "
            "replaced tokenizer; the profile's LM starts responses as it was built to",
            profile,
            token,
        )


def _leave_out_unavailable_metrics(data: dict[str, Any], profile: str) -> None:
    """Drop from ``data``'s metric list each metric this machine lacks an asset for and that has
    no offline counterpart (SPICE's CoreNLP jars, a multilingual BERTScore backbone), saying why:
    the run then reports the others, never a made-up score for these."""
    evaluation = data.get("train_evaluation")
    metrics = evaluation.get("metrics") if isinstance(evaluation, dict) else None
    if not isinstance(metrics, list):
        return
    kept = []
    for i, metric in enumerate(metrics):
        known = isinstance(metric, dict) and metric.get("id") in plugins.METRICS
        args = metric.get("args") if known else None
        missing = (
            plugins.METRICS.get(metric["id"]).missing_asset(**(args or {}))
            if known and isinstance(args or {}, dict)
            else None
        )
        if missing is None:
            kept.append(metric)
            continue
        problem = missing.problems[0]
        log.warning(
            "%s profile: train_evaluation.metrics.%d (%s) left out: %s (%s: %s)",
            profile,
            i,
            metric["id"],
            problem.message,
            problem.key,
            problem.fix,
        )
    evaluation["metrics"] = kept
