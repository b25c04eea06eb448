"""One run, end to end: test before training (iteration -1), a supervised warm start if asked
(tested at iteration 0), RL with validation every ``eval_every`` and a checkpoint every
``save_every``, then validation and test after the last iteration n. Resumes from the last
checkpoint.

Artifacts on disk, as RL4LMs writes them: ``config.yaml``, ``rollout_info.jsonl``,
``training_info.jsonl``, ``validation_metrics.jsonl``, ``test_metrics.jsonl``, predictions per
evaluation (``predictions/<split>_<iteration>.json``), ``checkpoint/`` and ``model/`` (with a
PEFT adapter, peft's adapter folder; with ``peft.merge``, the merged weights).
"""

from __future__ import annotations

import json
import random
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from grue_bench.models import load_base_lm
from grue_bench.paths import run_dir
from grue_bench.rl.adapters import merged
from grue_bench.rl.checkpoint import CHECKPOINT, discard_staged
from grue_bench.rl.trainer import Trainer
from grue_bench.runner.assemble import (
    assemble,
    build_reward,
    final_peft,
    make_rl_algorithm,
    supervised_fit,
)
from grue_bench.runner.callbacks import (
    AcrossProcesses,
    CheckpointEvery,
    Evaluations,
    RecordStats,
    Resume,
    final_evaluation,
)
from grue_bench.runner.evaluate import Evaluator, append_jsonl
from grue_bench.runner.grid import RunSpec
from grue_bench.runner.model_card import TrainedRun, write_model_card
from grue_bench.runner.recorder import Recorder
from grue_bench.runner.trackers import Trackers, TrackingRecorder
from grue_bench.runner.warm_start import warm_start
from grue_bench.store import BEFORE_TRAINING

WARM_START = 0
"""The iteration at which a supervised+RL run records its test scores after the supervised stage."""


@dataclass
class RunOutcome:
    """What the writer stores when the run is finished, in the same transaction."""

    final_iteration: int
    final_metrics: dict[str, dict[str, float]]
    final_generations: dict[str, list[dict[str, Any]]]
    model_name: str
    duration_s: float
    skipped_metrics: dict[str, str] = field(default_factory=dict)


def spec_dir(root: Path, spec: RunSpec) -> Path:
    """Where ``spec``'s artifacts go."""
    return run_dir(root, spec.task, spec.alg, spec.seed, spec.config_hash)


def execute(
    spec: RunSpec, recorder: Recorder | None, output_root: Path, position: int = 0
) -> RunOutcome | None:
    """Run ``spec`` (resuming from its checkpoint if one exists) and return its final results; every
    metric row also goes to the experiment trackers of its ``report_to``, the final ones included.
    ``recorder`` None: this process only trains, one of a launch's processes other than the first,
    which records, evaluates and saves (``grue_bench/runner/processes.py``); returns None then."""
    if recorder is None:
        return _execute(spec, None, output_root, position)
    with Trackers.open(spec, spec_dir(output_root, spec)) as trackers:
        outcome = _execute(spec, TrackingRecorder(recorder, trackers), output_root, position)
        for split, values in outcome.final_metrics.items():
            trackers.log(outcome.final_iteration, split, values)
    return outcome


def _execute(spec: RunSpec, recorder: Recorder | None, output_root: Path, position: int) -> RunOutcome | None:
    lead = recorder is not None
    if lead:
        recorder.begin()
    started = time.perf_counter()
    config = spec.config
    out = spec_dir(output_root, spec)
    out.mkdir(parents=True, exist_ok=True)
    if lead:
        (out / "config.yaml").write_text(config.to_yaml())
    run = assemble(config, spec.seed)
    lm, tokenizer, model_type = run.base.model, run.base.tokenizer, run.base.model_type
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    evaluate = Evaluator(config, tokenizer, model_type, run.pools, out, device)
    checkpoint_dir = out / CHECKPOINT
    resuming = (checkpoint_dir / "meta.json").is_file()
    if lead:
        discard_staged(out)
    lm.to(device)
    if lead and not resuming:
        _record_test(evaluate, recorder, lm, BEFORE_TRAINING)

    if spec.alg == "supervised":  # its iterations are optimizer steps
        lm = _supervised_run(spec, recorder, evaluate, lm, out, device)
        steps = _supervised_steps(out)
        final, generations = final_evaluation(evaluate, lm, steps)
        outcome = _finish(spec, evaluate, lm, steps, final, generations, run.base.name, started)
        shutil.rmtree(out / "warm_start")  # model/ holds it now: one checkpoint kept (save_total_limit)
        return outcome
    if spec.warm_start:
        samples = run.pools["train"]
        lm, losses, steps = warm_start(config, lm, tokenizer, model_type, samples, spec.seed, out, device)
        if lead and not resuming:
            _log_supervised(out, losses, steps)
            _record_test(evaluate, recorder, lm, WARM_START)  # what RL has to improve on

    algorithm = make_rl_algorithm(config, lm, tokenizer, model_type, build_reward(config), seed=spec.seed)
    every_eval = config.train_evaluation.eval_every
    evaluations = Evaluations(evaluate, recorder, every_eval)
    recording = [
        RecordStats(recorder, out, spec.label, position),
        evaluations,
        CheckpointEvery(recorder, out, config.train_evaluation.save_every or every_eval),
    ]
    callbacks = [
        *([Resume(checkpoint_dir, spec.label)] if resuming else []),
        *([AcrossProcesses(spec.seed, spec.label)] if algorithm.accelerator.num_processes > 1 else []),
        *(recording if lead else []),
    ]
    trainer = Trainer(algorithm, run.pools["train"], random.Random(spec.seed), callbacks)
    lm = trainer.fit(config.train_evaluation.n_iters)
    if not lead:
        return None
    final, generations = evaluations.final, evaluations.generations
    return _finish(spec, evaluate, lm, trainer.iteration, final, generations, run.base.name, started)


def _record_test(evaluate: Evaluator, recorder: Recorder, lm, iteration: int) -> None:
    """Test ``lm`` at ``iteration`` and store its scores and generations (the zero-shot row of a
    leaderboard is packaged from those of iteration -1, so the store alone holds it)."""
    table, rows = evaluate(lm, "test", iteration)
    recorder.metrics(iteration, "test", table)
    recorder.generations(iteration, "test", rows)


def _supervised_run(spec: RunSpec, recorder: Recorder, evaluate: Evaluator, lm, out: Path, device):
    """Fit the references, evaluated every ``logging_steps`` optimizer steps as RL4LMs does, or
    reload the fit a killed run left in ``warm_start/``."""
    warm = out / "warm_start"
    if (warm / "config.json").is_file():
        return load_base_lm(evaluate.model_type, model_name=str(warm)).model.to(device)

    def on_log(step: int, loss: float, model) -> None:
        recorder.metrics(step, "train", {"train/loss": loss})
        table, rows = evaluate(model, "validation", step)
        recorder.metrics(step, "validation", table)
        recorder.generations(step, "validation", rows)
        model.train()

    samples = evaluate.pools["train"]
    tokenizer, model_type = evaluate.tokenizer, evaluate.model_type
    lm, losses, steps = supervised_fit(
        spec.config, lm, tokenizer, model_type, samples, spec.seed, on_log=on_log
    )
    _log_supervised(out, losses, steps)
    lm.save_pretrained(warm)
    tokenizer.save_pretrained(warm)  # a folder load_base_lm reads, as any model folder
    return lm


def _log_supervised(out: Path, losses: list[float], steps: int) -> None:
    append_jsonl(
        out / "training_info.jsonl", {"stage": "supervised", "losses": losses, "optimizer_steps": steps}
    )


def _supervised_steps(out: Path) -> int:
    """The optimizer steps of the run's supervised stage, from its ``training_info.jsonl``."""
    rows = [json.loads(line) for line in (out / "training_info.jsonl").read_text().splitlines()]
    return [row for row in rows if row.get("stage") == "supervised"][-1]["optimizer_steps"]


def _finish(
    spec: RunSpec,
    evaluate: Evaluator,
    lm,
    iteration: int,
    final,
    generations,
    model_name: str,
    started: float,
) -> RunOutcome:
    """The final model on disk (an adapter alone, as peft saves it, unless ``peft.merge``) with its
    card; the run's results for the writer."""
    peft = final_peft(evaluate.config)
    (merged(lm) if peft is not None and peft.merge else lm).save_pretrained(evaluate.out / "model")
    evaluate.tokenizer.save_pretrained(evaluate.out / "model")
    trained = TrainedRun(spec.task, spec.alg, spec.seed, model_name, spec.config, final["test"])
    write_model_card(evaluate.out / "model", trained)
    duration = time.perf_counter() - started
    return RunOutcome(iteration, final, generations, model_name, duration, dict(evaluate.skipped))
