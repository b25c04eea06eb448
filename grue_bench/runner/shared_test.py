"""A test evaluated once and shared by the runs that would make the same one.

Runs of a task test the same weights on the same prompts with the same settings, each by itself:
every run tests its base LM before it trains (iteration -1: each algorithm of a seed, and every
seed when the evaluation draws nothing: greedy or beam search); a chain tests its fit after its
warm start (iteration 0), which the other chain of its seed, loading the same fit, tests again;
and a supervised run's last test is of that fit too. The first run to make a test saves its scores
and generations as ``<output>/<task>/shared_tests/<key>.json``; the others load them, and store
and write exactly what they would have computed, at their own iteration. The key hashes
everything the evaluation reads: the code (grue_bench's and the task plugin's), the installed
packages, the test split, the generation settings and metrics, the tokenizer, the precision, the
device and threads, and the LM's weights; when the evaluation drew from the random states
(sampling), those too, and a run that loads it is left in the random states the evaluation ended
in. Anything that differs gives another key, so a test is never shared where it would not be the
same.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

import torch

import grue_bench
from grue_bench import plugins
from grue_bench.random_states import host_rng_state, set_host_rng_state, set_torch_rng_state, torch_rng_state
from grue_bench.runner.evaluator import Evaluator, evaluation_metrics
from grue_bench.runner.fingerprint import (
    add_weights,
    tensor_bytes,
    tokenizer_definition,
)
from grue_bench.runner.generation import evaluation_generation_kwargs, generation_settings

log = logging.getLogger(__name__)

FOLDER = "shared_tests"


def shared_test(evaluator: Evaluator, lm, iteration: int) -> tuple[dict[str, float], list[dict[str, Any]]]:
    """``evaluator``'s test of ``lm``, recorded at ``iteration``: loaded if a run of the same key
    saved it, else evaluated and saved; the corpus table and the generated rows, as ``evaluator``
    returns."""
    inputs, before = _inputs_digest(evaluator, lm), _random_states()
    draws_nothing, draws = _key(inputs, None), _key(inputs, before)
    folder = evaluator.out.parents[1] / FOLDER
    for key in (draws_nothing, draws):
        path = folder / f"{key}.json"
        if path.is_file():
            log.info("shared test: loading the test saved in %s (iteration %d)", path, iteration)
            saved = json.loads(path.read_text())
            if saved["random_states"] is not None:
                _set_random_states(saved["random_states"])
            evaluator.record("test", iteration, saved["table"], saved["rows"], saved["skipped"])
            return saved["table"], saved["rows"]
    table, rows = evaluator(lm, "test", iteration)
    after = _random_states()
    drew = after != before
    saved = {
        "table": table,
        "rows": rows,
        "skipped": evaluator.skipped,
        "random_states": after if drew else None,
    }
    _save(folder / f"{draws if drew else draws_nothing}.json", saved)
    return table, rows


def _inputs_digest(evaluator: Evaluator, lm):
    """The hash of everything the test reads but the random states."""
    config, tokenizer, model_type = evaluator.config, evaluator.tokenizer, evaluator.model_type
    settings = generation_settings(config, evaluation=True, tokenizer=tokenizer, model_type=model_type)
    inputs = {
        "task": config.task,
        "model_type": model_type,
        "generation": dataclasses.asdict(settings),
        "post_processing": evaluation_generation_kwargs(config).post_processing_fn,
        "eval_batch_size": config.train_evaluation.eval_batch_size,
        "metrics": [metric.model_dump(mode="json") for metric in evaluation_metrics(config)],
        "tokenizer": [tokenizer_definition(tokenizer), tokenizer.padding_side, tokenizer.truncation_side],
        "precision": dataclasses.asdict(evaluator.precision),
        "device": str(evaluator.device),
        "threads": torch.get_num_threads(),
        "packages": _packages(),
        "code": _code(config.task),
    }
    digest = hashlib.sha256(json.dumps(inputs, sort_keys=True, default=str).encode())
    for sample in evaluator.pools["test"]:
        digest.update(json.dumps(dataclasses.asdict(sample), sort_keys=True, default=str).encode())
    add_weights(digest, lm)
    return digest


def _key(inputs, random_states: dict[str, Any] | None) -> str:
    """The key of a test that draws nothing (``random_states`` None), or of one that draws from the
    random states it starts in (``_random_states``)."""
    digest = inputs.copy()
    digest.update(b"draws nothing" if random_states is None else json.dumps(random_states).encode())
    return digest.hexdigest()[:16]


def _random_states() -> dict[str, Any]:
    """torch's, Python's and NumPy's global random states (JSON)."""
    rng = torch_rng_state()
    torch_states = {"torch_rng": tensor_bytes(rng["torch_rng"]).hex()}
    torch_states["cuda_rng"] = [tensor_bytes(state).hex() for state in rng["cuda_rng"]]
    return {**torch_states, **host_rng_state()}


def _set_random_states(states: dict[str, Any]) -> None:
    def tensor(text: str) -> torch.Tensor:
        return torch.frombuffer(bytearray.fromhex(text), dtype=torch.uint8)

    set_torch_rng_state(
        {"torch_rng": tensor(states["torch_rng"]), "cuda_rng": list(map(tensor, states["cuda_rng"]))}
    )
    set_host_rng_state(states)


@cache
def _packages() -> list[str]:
    """Every installed distribution and its version (a metric's backend is one of them)."""
    return sorted(f"{d.metadata['Name']}=={d.version}" for d in metadata.distributions())


@cache
def _code(task: str | None) -> str:
    """The hash of grue_bench's Python sources and the task plugin's sources and settings."""
    digest = hashlib.sha256()
    roots = [(Path(grue_bench.__file__).parent, "*.py")]
    if task is not None:
        directory = plugins.TASKS.get(task).directory
        roots += [(directory, "*.py"), (directory, "*.yaml")]
    for root, pattern in roots:
        for path in sorted(root.rglob(pattern)):
            digest.update(str(path.relative_to(root)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def _save(path: Path, saved: dict[str, Any]) -> None:
    """Write the test to a file of this process, then rename it into place (a run of the same key
    that saved meanwhile saved the same)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    scratch = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    scratch.write_text(json.dumps(saved))
    os.replace(scratch, path)
    log.info("shared test: saved in %s for the runs of the same key", path)
