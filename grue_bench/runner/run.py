"""One run, end to end: test before training (iteration -1), a supervised warm start if asked
(tested at iteration 0; both tests shared by the runs that test the same LM the same way:
``shared_test``),
RL with validation every ``eval_every`` and a checkpoint every ``save_every``, then validation
and test after the last iteration n. Resumes from the last checkpoint.

Artifacts on disk, as RL4LMs writes them: ``config.yaml``, ``rollout_info.jsonl``,
``training_info.jsonl``, ``validation_metrics.jsonl``, ``test_metrics.jsonl``, predictions per
evaluation (``predictions/<split>_<iteration>.json``), ``checkpoint/`` and ``model/`` (with a
PEFT adapter, peft's adapter folder; with ``peft.merge``, the merged weights).
"""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grue_bench.models import load_base_lm
from grue_bench.paths import run_dir
from grue_bench.resolve.grid import RunSpec
from grue_bench.rl.adapters import merged
from grue_bench.rl.checkpoint import CHECKPOINT, discard_staged
from grue_bench.rl.precision import default_device
from grue_bench.rl.trainer import Callback, Trainer
from grue_bench.runner.assemble import Run, build_run, final_peft, run_precision
from grue_bench.runner.callbacks import CheckpointEvery, Evaluations, RecordStats, final_evaluation
from grue_bench.runner.evaluator import Evaluator, append_jsonl
from grue_bench.runner.host_memory import keep_freed_memory
from grue_bench.runner.model_card import TrainedRun, write_model_card
from grue_bench.runner.recorder import Recorder
from grue_bench.runner.shared_test import shared_test
from grue_bench.runner.trackers import Trackers, TrackingRecorder
from grue_bench.runner.warm_start import record_key, recorded_key, share_fit, warm_start
from grue_bench.runner.world import is_lead_process
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
    The lead process (``world.is_lead_process``) records, evaluates and saves through ``recorder``;
    a launch's other processes (``grue_bench/runner/processes.py``) only train, with no recorder,
    and return None."""
    if not is_lead_process():
        _execute(spec, None, output_root, position)
        return None
    if recorder is None:
        raise ValueError(f"{spec.label}: the lead process of a run records it, and was given no recorder")
    with Trackers.open(spec, spec_dir(output_root, spec)) as trackers:
        outcome = _execute(spec, TrackingRecorder(recorder, trackers), output_root, position)
        for split, values in outcome.final_metrics.items():
            trackers.log(outcome.final_iteration, split, values)
    return outcome


def _execute(spec: RunSpec, recorder: Recorder | None, output_root: Path, position: int) -> RunOutcome | None:
    lead = is_lead_process()  # execute gives it, and only it, a recorder
    if lead:
        recorder.begin()
    keep_freed_memory()  # in the process that runs it: in-process, a local worker, a Ray task
    started = time.perf_counter()
    config = spec.config
    out = spec_dir(output_root, spec)
    out.mkdir(parents=True, exist_ok=True)
    if lead:
        (out / "config.yaml").write_text(config.to_yaml())
    run = build_run(config, spec.seed, label=spec.label)
    lm = run.base.model
    device = default_device()
    precision = run_precision(config, device)
    evaluator = Evaluator(config, run.tokenizer, run.model_type, run.pools, out, device, precision)
    checkpoint_dir = out / CHECKPOINT
    resuming = (checkpoint_dir / "meta.json").is_file()
    if lead:
        discard_staged(out)
    lm.to(device)
    if lead and not resuming:  # the test before training, shared by the runs of the same LM
        _record_test(recorder, BEFORE_TRAINING, *shared_test(evaluator, lm, BEFORE_TRAINING))

    if spec.alg == "supervised":  # its iterations are optimizer steps
        lm, steps, final, generations = _supervised_run(
            run, recorder, evaluator, lm, out, device, position, checkpoint_dir if resuming else None
        )
        outcome = _finish(spec, evaluator, lm, steps, final, generations, run.base.name, started)
        shutil.rmtree(out / "warm_start")  # model/ holds it now: one checkpoint kept (save_total_limit)
        return outcome
    if spec.warm_start:
        lm, losses, steps = warm_start(run, lm, out, device)
        if lead and not resuming:
            _log_supervised(out, losses, steps)
            # what RL has to improve on: the fit's test, shared with its supervised run and chains
            _record_test(recorder, WARM_START, *shared_test(evaluator, lm, WARM_START))

    algorithm = run.rl(lm)
    every_eval = config.train_evaluation.eval_every
    evaluations = Evaluations(evaluator, recorder, every_eval)
    recording = [
        RecordStats(recorder, out, spec.label, position),
        evaluations,
        CheckpointEvery(recorder, out, config.train_evaluation.save_every or every_eval),
    ]
    resume_from = checkpoint_dir if resuming else None
    trainer = run.train(algorithm, recording if lead else [], resume_from=resume_from)
    if not lead:
        return None
    final, generations = evaluations.final, evaluations.generations
    lm = algorithm.model
    return _finish(spec, evaluator, lm, trainer.iteration, final, generations, run.base.name, started)


def _record_test(
    recorder: Recorder, iteration: int, table: dict[str, float], rows: list[dict[str, Any]]
) -> None:
    """Store a test's scores and generations at ``iteration`` (the zero-shot row of a leaderboard
    is packaged from those of iteration -1, so the store alone holds it)."""
    recorder.metrics(iteration, "test", table)
    recorder.generations(iteration, "test", rows)


class SaveFit(Callback):
    """When a supervised run's fit ends (before its final evaluation): its losses and optimizer
    steps go to ``training_info.jsonl``, the fit to the folder the chains of its ``key`` warm
    start from (``share_fit``), then the fitted LM and tokenizer to ``warm_start/``, for a run
    killed after the fit to reload."""

    def __init__(self, out: Path, key: str) -> None:
        self.out = out
        self.key = key

    def on_train_end(self, trainer: Trainer) -> None:
        stage = trainer.algorithm
        _log_supervised(self.out, stage.losses, stage.iteration)
        share_fit(self.out, self.key, stage, stage.tokenizer)
        stage.model.save_pretrained(self.out / "warm_start")
        stage.tokenizer.save_pretrained(self.out / "warm_start")  # a folder load_base_lm reads


def _supervised_run(
    run: Run,
    recorder: Recorder,
    evaluator: Evaluator,
    lm,
    out: Path,
    device,
    position: int,
    resume_from: Path | None,
):
    """A supervised run: the references fitted in the one loop, validated every ``logging_steps``
    optimizer steps (where RL4LMs validates; the random states left as they were, so that the fit
    is the one a chain's warm start makes, and is shared with the chains) and checkpointed every
    ``save_steps`` (by default at the same steps), then validated and tested; a run
    killed during its fit goes on from its last checkpoint, one killed after it reloads the fit it
    left in ``warm_start/``. Returns the LM, its optimizer steps, the final scores and generations."""
    warm = out / "warm_start"
    if (warm / "config.json").is_file():
        lm = load_base_lm(run.model_type, model_name=str(warm)).model.to(device)
        steps = _supervised_steps(out)
        return lm, steps, *final_evaluation(evaluator, lm, steps, shared=True)
    key = recorded_key(run, lm, out)  # before the stage draws (an adapter's initialization)
    record_key(run, out, key)
    stage = run.supervised(lm)
    every = stage.args.logging_steps
    evaluations = Evaluations(
        evaluator, recorder, every, "alg.training_args.logging_steps", draws_kept=True, shared=True
    )
    recording = [RecordStats(recorder, out, run.label, position), SaveFit(out, key), evaluations]
    checkpoints = CheckpointEvery(recorder, out, stage.args.checkpoint_every)
    run.train(stage, [*recording, checkpoints], resume_from=resume_from)
    return stage.model, stage.iteration, evaluations.final, evaluations.generations


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
    evaluator: Evaluator,
    lm,
    iteration: int,
    final,
    generations,
    model_name: str,
    started: float,
) -> RunOutcome:
    """The final model on disk (an adapter alone, as peft saves it, unless ``peft.merge``) with its
    card; the run's results for the writer."""
    peft = final_peft(evaluator.config)
    (merged(lm) if peft is not None and peft.merge else lm).save_pretrained(evaluator.out / "model")
    evaluator.tokenizer.save_pretrained(evaluator.out / "model")
    trained = TrainedRun(spec.task, spec.alg, spec.seed, model_name, spec.config, final["test"])
    write_model_card(evaluator.out / "model", trained)
    duration = time.perf_counter() - started
    return RunOutcome(iteration, final, generations, model_name, duration, dict(evaluator.skipped))
