"""One run, end to end: test before training (iteration -1), a supervised warm start if asked
(tested at iteration 0), RL with validation every ``eval_every`` and a checkpoint every
``save_every``, then validation and test after the last iteration n. Resumes from the last
checkpoint.

Artifacts on disk, as RL4LMs writes them: ``config.yaml``, ``rollout_info.jsonl``,
``training_info.jsonl``, ``validation_metrics.jsonl``, ``test_metrics.jsonl``, predictions per
evaluation (``predictions/<split>_<iteration>.json``), ``checkpoint/`` and ``model/``.
"""

from __future__ import annotations

import json
import logging
import math
import random
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from grue_bench.runner.grid import RunSpec
from grue_bench.runner.recorder import Recorder
from grue_bench.store import BEFORE_TRAINING

WARM_START = 0
"""The iteration at which a supervised+RL run records its test scores after the supervised stage."""

log = logging.getLogger(__name__)


class RunFailure(Exception):
    """A run that cannot go on (non-finite reward or loss, ...); recorded as failed."""


@dataclass
class RunOutcome:
    """What the writer stores when the run is finished, in the same transaction."""

    final_iteration: int
    final_metrics: dict[str, dict[str, float]]
    final_generations: dict[str, list[dict[str, Any]]]
    model_name: str
    duration_s: float
    skipped_metrics: dict[str, str] = field(default_factory=dict)


def run_dir(root: Path, spec: RunSpec) -> Path:
    """Where a run's artifacts go."""
    return root / spec.task / spec.alg / f"seed{spec.seed}-{spec.config_hash}"


def _append_jsonl(path: Path, row: dict[str, Any]) -> None:
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(row) + "\n")


def _check_finite(stats: dict[str, float], iteration: int) -> None:
    bad = {k: v for k, v in stats.items() if not math.isfinite(v)}
    if bad:
        raise RunFailure(f"non-finite values at iteration {iteration}: {bad}")


class RunExecution:
    """State of one run while it executes (kept small: the loop is in ``execute``)."""

    def __init__(self, spec: RunSpec, recorder: Recorder, out: Path) -> None:
        self.spec = spec
        self.recorder = recorder
        self.out = out
        (out / "predictions").mkdir(parents=True, exist_ok=True)

    def evaluate(self, lm, tokenizer, model_type, samples, split, iteration, device) -> tuple[dict, list]:
        from grue_bench.runner.evaluate import evaluate

        scores, rows = evaluate(lm, tokenizer, model_type, self.spec.config, samples, split, device)
        table = scores.corpus()
        _append_jsonl(self.out / f"{split}_metrics.jsonl", {"iteration": iteration, **table})
        (self.out / "predictions" / f"{split}_{iteration}.json").write_text(json.dumps(rows, indent=1))
        self.skipped = scores.skipped
        return table, rows

    def supervised_logger(self, tokenizer, model_type, pools, device):
        """``on_log`` of a supervised run: the loss as ``train/loss`` and a validation
        evaluation, at the optimizer step."""

        def on_log(step: int, loss: float, lm) -> None:
            self.recorder.metrics(step, "train", {"train/loss": loss})
            samples = pools["validation"]
            table, rows = self.evaluate(lm, tokenizer, model_type, samples, "validation", step, device)
            self.recorder.metrics(step, "validation", table)
            self.recorder.generations(step, "validation", rows)
            lm.train()

        return on_log


def _supervised_steps(out: Path) -> int:
    """The optimizer steps of the run's supervised stage, from its ``training_info.jsonl``."""
    rows = [json.loads(line) for line in (out / "training_info.jsonl").read_text().splitlines()]
    return [row for row in rows if row.get("stage") == "supervised"][-1]["optimizer_steps"]


def execute(spec: RunSpec, recorder: Recorder, output_root: Path, position: int = 0) -> RunOutcome:
    """Run ``spec`` (resuming from its checkpoint if one exists) and return its final results."""
    from grue_bench.rl.checkpoint import (
        CHECKPOINT,
        discard_staged,
        load_checkpoint,
        save_checkpoint,
        staged_dir,
    )
    from grue_bench.rl.trainer import (
        build_reward,
        load_base,
        load_pool,
        make_rl_algorithm,
        set_seed,
        supervised_fit,
    )

    recorder.begin()
    started = time.perf_counter()
    config = spec.config
    out = run_dir(output_root, spec)
    run = RunExecution(spec, recorder, out)
    (out / "config.yaml").write_text(config.to_yaml())
    set_seed(spec.seed)
    base = load_base(config)
    lm, tokenizer, model_type = base.model, base.tokenizer, base.model_type
    pools = {split: list(load_pool(config, split)) for split in ("train", "validation", "test")}
    n_iters = config.train_evaluation.n_iters
    checkpoint_dir = out / CHECKPOINT
    resuming = (checkpoint_dir / "meta.json").is_file()
    discard_staged(out)

    import torch

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    lm.to(device)
    if not resuming:
        table, _ = run.evaluate(lm, tokenizer, model_type, pools["test"], "test", BEFORE_TRAINING, device)
        recorder.metrics(BEFORE_TRAINING, "test", table)

    if spec.warm_start or spec.alg == "supervised":
        warm = out / "warm_start"
        if (warm / "config.json").is_file():
            lm = type(lm).from_pretrained(warm).to(device)
        else:
            # a supervised run is evaluated every logging_steps optimizer steps, as RL4LMs does
            supervised = spec.alg == "supervised"
            on_log = run.supervised_logger(tokenizer, model_type, pools, device) if supervised else None
            lm, losses, steps = supervised_fit(config, lm, tokenizer, model_type, spec.seed, on_log=on_log)
            info = {"stage": "supervised", "losses": losses, "optimizer_steps": steps}
            _append_jsonl(out / "training_info.jsonl", info)
            lm.save_pretrained(warm)
        if spec.alg == "supervised":  # its iterations are optimizer steps
            steps = _supervised_steps(out)
            outcome = _finish(run, lm, tokenizer, model_type, pools, steps, base.name, started, device)
            shutil.rmtree(warm)  # model/ holds it now: one checkpoint kept (save_total_limit)
            return outcome
        if not resuming:  # the warm start's own score: what RL has to improve on
            table, _ = run.evaluate(lm, tokenizer, model_type, pools["test"], "test", WARM_START, device)
            recorder.metrics(WARM_START, "test", table)

    algorithm = make_rl_algorithm(config, lm, tokenizer, model_type, build_reward(config), seed=spec.seed)
    rng = random.Random(spec.seed)
    saved_rng = load_checkpoint(checkpoint_dir, algorithm) if resuming else None
    if saved_rng is not None:
        rng.setstate(saved_rng)
        log.info("%s: resuming after iteration %d", spec.label, algorithm.iteration)
    every_eval = config.train_evaluation.eval_every
    every_save = config.train_evaluation.save_every or every_eval
    bar = tqdm(
        total=n_iters,
        initial=algorithm.iteration,
        desc=spec.label,
        unit="iter",
        position=position,
        leave=False,
    )
    while algorithm.iteration < n_iters:
        stats = algorithm.step(pools["train"], rng)
        iteration = algorithm.iteration
        _check_finite(stats, iteration)
        recorder.metrics(iteration, "rollout", {k: v for k, v in stats.items() if not k.startswith("train/")})
        recorder.metrics(iteration, "train", {k: v for k, v in stats.items() if k.startswith("train/")})
        _append_jsonl(out / "rollout_info.jsonl", {"iteration": iteration, **stats})
        bar.update(1)
        kl = stats.get("train/kl_to_ref_per_token")
        kl = "n/a (beta 0)" if kl is None else f"{kl:.4f}/token"
        bar.set_postfix(reward=f"{stats['rollout/reward']:.3f}", kl=kl)
        if iteration % every_eval == 0 and iteration < n_iters:
            table, rows = run.evaluate(
                algorithm.unwrapped.lm,
                tokenizer,
                model_type,
                pools["validation"],
                "validation",
                iteration,
                device,
            )
            recorder.metrics(iteration, "validation", table)
            recorder.generations(iteration, "validation", rows)
        if iteration % every_save == 0 and iteration < n_iters:
            save_checkpoint(staged_dir(out, iteration), algorithm, rng.getstate())
            if not recorder.live:  # nothing is promoted before the run ends: keep only the newest
                discard_staged(out, keep=iteration)
            recorder.checkpoint(iteration, str(out))  # promoted by the writer, after this run's rows
    bar.close()
    return _finish(
        run, algorithm.unwrapped.lm, tokenizer, model_type, pools, n_iters, base.name, started, device
    )


def _finish(
    run: RunExecution, lm, tokenizer, model_type, pools, n_iters, model_name, started, device
) -> RunOutcome:
    """Final validation and test evaluations, the final model on disk; results for the writer."""
    final: dict[str, dict[str, float]] = {}
    generations: dict[str, list[dict[str, Any]]] = {}
    for split in ("validation", "test"):
        final[split], generations[split] = run.evaluate(
            lm, tokenizer, model_type, pools[split], split, n_iters, device
        )
    lm.save_pretrained(run.out / "model")
    tokenizer.save_pretrained(run.out / "model")
    return RunOutcome(n_iters, final, generations, model_name, time.perf_counter() - started, run.skipped)
