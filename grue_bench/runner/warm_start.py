"""A chain's supervised warm start (``supervised+ppo``): fitted once, saved, and shared.

A fit is a function of what it starts from and nothing else: the base LM's weights and
tokenizer, the train split, the supervised settings, the seed (its data order), the number of
processes and the random states (dropout draws from them). All of it is hashed into the name of
the folder the fit is saved in (``<output>/<task>/warm_starts/<key>/``), together with the random
states the fit ends in. A run that finds its folder loads the fit and those states, and goes on
exactly as if it had fitted it: ``supervised+ppo`` and ``supervised+nlpo`` of one task and seed
fit once (or not at all, when the ``supervised`` run of that seed saved its fit: ``share_fit``),
and a run killed after its warm start does not fit again; one killed during it goes
on from the fit's last checkpoint (every ``save_steps``). Anything that differs gives
another key, so a fit is never shared where it would not be the same.
"""

from __future__ import annotations

import copy
import hashlib
import json
import logging
import os
import shutil
from pathlib import Path

import torch

from grue_bench.config import hashed_training_args
from grue_bench.errors import GrueError
from grue_bench.models import load_base_lm
from grue_bench.random_states import host_rng_state, set_host_rng_state, set_torch_rng_state, torch_rng_state
from grue_bench.resolve import supervised_args
from grue_bench.rl.adapters import is_adapted, merged
from grue_bench.runner.assemble import Run
from grue_bench.runner.fingerprint import add_torch_random_states, add_weights, tokenizer_definition
from grue_bench.runner.world import world_size

log = logging.getLogger(__name__)

FOLDER = "warm_starts"
FIT_FILE = "fit.json"
RNG_FILE = "rng.pt"
RECORD_FILE = "warm_start.json"
CHECKPOINT_PREFIX = "warm_start_checkpoint-"
"""A fit under way checkpoints in the run's folder ``<prefix><key>``: a run killed during it,
started again, computes the same key and goes on from there (another key's is never read)."""


def _supervised_settings(config) -> dict:
    """The supervised stage's settings as the key hashes them: float32 (no half precision asked
    for) as before precision was a setting, so that earlier fits keep their keys; gradient
    checkpointing, which recomputes what it does not keep and fits the same, and ``save_steps``,
    never."""
    args = supervised_args(config)
    same_fit = {"gradient_checkpointing"} | (set() if args.bf16 or args.fp16 else {"bf16", "fp16"})
    return hashed_training_args(args.model_dump(mode="json", exclude=same_fit))


def fit_key(run: Run, lm) -> str:
    """The hash of everything a supervised fit of ``lm`` on ``run``'s train split depends on, now."""
    config, tokenizer, seed = run.config, run.tokenizer, run.seed
    env = config.env.args
    settings = {
        "task": config.task,
        "model_type": run.model_type,
        "supervised": _supervised_settings(config),
        "lengths": [env.max_prompt_length, env.max_episode_length, env.prompt_truncation_side],
        "tokenizer": [tokenizer_definition(tokenizer), tokenizer.padding_side],
        "seed": seed,
        "processes": world_size(),
        **host_rng_state(),
    }
    digest = hashlib.sha256(json.dumps(settings, sort_keys=True).encode())
    for sample in run.pools["train"]:
        digest.update(json.dumps([sample.prompt_or_input_text, list(sample.references)]).encode())
    add_weights(digest, lm)
    add_torch_random_states(digest)
    return digest.hexdigest()[:16]


def warm_start(run: Run, lm, out: Path, device) -> tuple:
    """The warm-started LM, its supervised losses and optimizer steps, for the run whose folder is
    ``out``: loaded from the folder of its fit key if an earlier run saved it (a chain's, or a
    supervised run's of the same key: ``share_fit``), else fitted and saved there; the random
    states are left as the fit left them. The run records the key it used (``warm_start.json``): a
    resumed run, whose random states come from its checkpoint, loads that fit."""
    record = out / RECORD_FILE
    key = recorded_key(run, lm, out)
    folder = fit_folder(out, key)
    if (folder / FIT_FILE).is_file():
        log.info("warm start: loading the supervised fit saved in %s", folder)
        fit = json.loads((folder / FIT_FILE).read_text())
        set_torch_rng_state(torch.load(folder / RNG_FILE, weights_only=True))
        set_host_rng_state(fit)
        lm = load_base_lm(run.model_type, model_name=str(folder)).model.to(device)
        lm.train(fit["training"])  # in the mode the fit left it, as if just fitted
    elif record.is_file():
        raise GrueError(
            f"the supervised warm start this run started from is gone: {folder}",
            source=str(record),
            fix="run it again from the start (grue run ... --force)",
        )
    else:
        lm, stage = run.warm_started(lm, checkpoints=out / f"{CHECKPOINT_PREFIX}{key}")
        fit = _save_fit(folder, lm, run.tokenizer, stage)
        for checkpoint in out.glob(f"{CHECKPOINT_PREFIX}*"):  # this fit's, and any of another key
            shutil.rmtree(checkpoint, ignore_errors=True)
    record_key(run, out, key)
    return lm, fit["losses"], fit["optimizer_steps"]


def recorded_key(run: Run, lm, out: Path) -> str:
    """The fit key the run in ``out`` recorded, else that of a fit of ``lm`` starting now."""
    record = out / RECORD_FILE
    return json.loads(record.read_text())["key"] if record.is_file() else fit_key(run, lm)


def record_key(run: Run, out: Path, key: str) -> None:
    """Record in the run's folder the key of its fit, with the supervised settings it was made with."""
    settings = supervised_args(run.config).model_dump(mode="json")
    (out / RECORD_FILE).write_text(json.dumps({"key": key, "training_args": settings}))


def fit_folder(out: Path, key: str) -> Path:
    """Where the fit of ``key`` is kept for the runs of the task whose run folder is ``out``."""
    return out.parents[1] / FOLDER / key


def share_fit(out: Path, key: str, stage, tokenizer) -> None:
    """A supervised run's fit (``stage``, just ended), saved where the chains of its key look for
    their warm start: the same task, seed, settings and random states make the same fit, so they
    load it instead of fitting again. Its adapter, if any, is merged into a copy (the run goes on
    with its own model)."""
    lm = merged(copy.deepcopy(stage.model)) if is_adapted(stage.model) else stage.model
    _save_fit(fit_folder(out, key), lm, tokenizer, stage)


def _save_fit(folder: Path, lm, tokenizer, stage) -> dict:
    """Save ``lm`` as the fit ``stage`` made, with the random states as the fit left them (now);
    returns what ``fit.json`` holds."""
    fit = {"losses": stage.losses, "optimizer_steps": stage.iteration, "training": lm.training}
    fit.update(host_rng_state())
    _save(folder, lm, tokenizer, fit)
    log.info("warm start: supervised fit saved in %s", folder)
    return fit


def _save(folder: Path, lm, tokenizer, fit: dict) -> None:
    """Write the fit to a folder of this process, then rename it into place; a run of the same key
    that saved first keeps its own (the same fit)."""
    scratch = folder.with_name(f"{folder.name}.{os.getpid()}.tmp")
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    lm.save_pretrained(scratch)
    tokenizer.save_pretrained(scratch)  # a folder load_base_lm reads, as any model folder
    torch.save(torch_rng_state(), scratch / RNG_FILE)
    (scratch / FIT_FILE).write_text(json.dumps(fit))  # written last: the folder is complete
    try:
        scratch.rename(folder)
    except OSError:  # saved meanwhile by a run of the same key
        shutil.rmtree(scratch, ignore_errors=True)
