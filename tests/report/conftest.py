"""Fixtures for the leaderboard tests: small stores written through the Store API, and their reports.

Made-up but realistic values: 2 tasks (imdb, commongen) x 3 algorithms x 3 seeds with training
curves, validation and test evaluations, test generations and human ratings; a one-seed store; and a
store whose strings (model, generations, config, submission) carry HTML and script.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from grue_bench.report.evidence import ReferenceRow
from grue_bench.store import BEFORE_TRAINING, Store

N_ITERS = 6
EVAL_EVERY = 3
ALGS = {"ppo": 0.05, "nlpo": 0.08, "supervised": 0.0}
"""Algorithm -> how much it improves the headline score over the base model."""
TASKS = {
    "imdb": {
        "headline": "semantic/learned_automodel_metric",
        "base": 0.55,
        "other": {"sentiment/vader_compound": 0.2, "lexical/meteor": 0.25},
    },
    "commongen": {
        "headline": "lexical/cider",
        "base": 0.9,
        "other": {"lexical/rouge_rougeL": 0.38, "lexical/meteor": 0.28},
    },
}
NATURALNESS = {
    "fluency_metrics/perplexity": 35.0,
    "diversity_metrics/distinct-1": 0.12,
    "diversity_metrics/mean_pred_length": 18.0,
}
PROMPTS = [
    ("0", "This movie was", ["a delight from start to finish."]),
    ("1", "I expected more from", ["the director, but it was still good."]),
    ("2", "The acting in this film", ["was superb and moving."]),
    ("10", "Honestly, the plot", ["kept me guessing until the end."]),
]


def start(
    store: Store,
    task: str,
    alg: str,
    seed: int,
    *,
    model: str = "tiny-gpt2",
    note: str = "",
    profile: str = "tiny",
    **extra,
):
    """Start a run with a small config (``note`` lands in it)."""
    return store.start_run(
        task=task,
        task_version=1,
        alg=alg,
        seed=seed,
        profile=profile,
        model=model,
        config={
            "alg": {"id": alg},
            "train_evaluation": {"n_iters": N_ITERS, "eval_every": EVAL_EVERY},
            "note": note,
        },
        config_hash=f"hash-{alg}-{profile}",
        **extra,
    )


def final_metrics(rng: np.random.Generator, task: str, alg: str) -> dict[str, float]:
    """Test-split metrics of a trained run."""
    spec = TASKS[task]
    values = {spec["headline"]: spec["base"] + ALGS[alg] + rng.normal(0, 0.02)}
    values |= {key: base + rng.normal(0, 0.01) for key, base in spec["other"].items()}
    values |= {key: base * (1 + rng.normal(0, 0.05)) for key, base in NATURALNESS.items()}
    return {key: round(float(value), 6) for key, value in values.items()}


def write_run(
    store: Store, rng: np.random.Generator, task: str, alg: str, seed: int, *, empty: bool = False, **extra
) -> int:
    """One complete run: test before training, curves, validation evals, final evals and generations
    (``empty``: every generation is the empty string)."""
    run = start(store, task, alg, seed, **extra)
    headline = TASKS[task]["headline"]
    store.log_metrics(run.id, BEFORE_TRAINING, "test", {headline: TASKS[task]["base"]})
    for iteration in range(1, N_ITERS + 1):
        reward = 0.3 + ALGS[alg] * iteration + rng.normal(0, 0.02)
        store.log_metrics(run.id, iteration, "rollout", {"rollout/reward": reward, "rollout/length": 18.0})
        store.log_metrics(run.id, iteration, "train", {"train/policy_loss": rng.normal(0, 0.1)})
        if iteration % EVAL_EVERY == 0 and iteration < N_ITERS:
            value = TASKS[task]["base"] + ALGS[alg] * iteration / N_ITERS
            store.log_metrics(run.id, iteration, "validation", {headline: value})
    final = final_metrics(rng, task, alg)
    spread = rng.normal(0, 0.03, size=len(PROMPTS))
    spread -= spread.mean()  # per-sample headline scores whose mean is the logged one
    generations = [
        {
            "sample_id": sid,
            "prompt": prompt,
            "text": "" if empty else f"{prompt} [{alg} seed {seed}]",
            "references": refs,
            "scores": {headline: final[headline] + float(offset)},
        }
        for (sid, prompt, refs), offset in zip(PROMPTS, spread, strict=True)
    ]
    store.finish_run(
        run.id,
        iteration=N_ITERS,
        final_metrics={"validation": {headline: final[headline]}, "test": final},
        generations={"test": generations},
    )
    return run.id


def add_ratings(store: Store, task: str, run_ids: dict[str, int]) -> None:
    """Crowd ratings of two systems on two axes by three workers."""
    rows = []
    for system, base in (("ppo", 3.5), ("nlpo", 4.0)):
        for sample in ("0", "1"):
            for worker, shift in (("W1", 0), ("W2", 1), ("W3", -1)):
                for axis in ("coherence", "sentiment"):
                    rows.append(
                        {
                            "run_id": run_ids[system],
                            "task": task,
                            "sample_id": sample,
                            "system": system,
                            "worker_id": worker,
                            "assignment_id": f"A-{worker}-{sample}",
                            "axis": axis,
                            "rating": base + shift,
                            "batch_id": "B1",
                            "created_at": "2024-01-01T00:00:00",
                        }
                    )
    with store.transaction():
        store.db["human_ratings"].insert_all(rows)


@pytest.fixture(scope="session")
def three_seed_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """2 tasks x 3 algorithms x 3 seeds, ratings on imdb, one failed and one running run."""
    path = tmp_path_factory.mktemp("store3") / "grue.db"
    rng = np.random.default_rng(123)
    with Store(path) as store:
        first_seed: dict[str, int] = {}
        for task in TASKS:
            for alg in ALGS:
                for seed in range(3):
                    run_id = write_run(store, rng, task, alg, seed)
                    if task == "imdb" and seed == 0:
                        first_seed[alg] = run_id
        add_ratings(store, "imdb", first_seed)
        failed = start(store, "imdb", "ppo", 7)
        store.fail_run(failed.id, "RuntimeError: out of memory")
        running = start(store, "commongen", "nlpo", 9)
        store.log_metrics(running.id, N_ITERS, "test", {"lexical/cider": 99.0})  # must not count
    return path


@pytest.fixture(scope="session")
def one_seed_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """imdb with two algorithms, one seed each."""
    path = tmp_path_factory.mktemp("store1") / "grue.db"
    rng = np.random.default_rng(7)
    with Store(path) as store:
        for alg in ("ppo", "nlpo"):
            write_run(store, rng, "imdb", alg, 0)
    return path


@pytest.fixture(scope="session")
def profiles_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """imdb in two profiles: tiny (ppo, nlpo) and small (ppo, nlpo), small ppo seed 1 collapsed to
    empty outputs."""
    path = tmp_path_factory.mktemp("store_profiles") / "grue.db"
    rng = np.random.default_rng(3)
    with Store(path) as store:
        for profile in ("tiny", "small"):
            for alg in ("ppo", "nlpo"):
                for seed in range(2):
                    empty = profile == "small" and alg == "ppo" and seed == 1
                    write_run(store, rng, "imdb", alg, seed, profile=profile, empty=empty)
    return path


EVIL = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'


@pytest.fixture(scope="session")
def evil_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Strings from runs and a submission that carry markup and script."""
    path = tmp_path_factory.mktemp("store_evil") / "grue.db"
    rng = np.random.default_rng(5)
    with Store(path) as store:
        for seed in range(2):
            run_id = write_run(store, rng, "imdb", "ppo", seed, model=f"gpt2{EVIL}")
            store.add_generations(
                run_id,
                N_ITERS,
                "test",
                [{"sample_id": "0", "prompt": f"P {EVIL}", "text": f"T {EVIL}", "references": [EVIL]}],
            )
        submitted = start(
            store,
            "imdb",
            f"my-alg{EVIL}",
            0,
            note=EVIL,
            source="submission",
            submission={"name": f"team{EVIL}", "link": "javascript:window.__pwned=3"},
        )
        store.finish_run(submitted.id, iteration=1, final_metrics={"test": final_metrics(rng, "imdb", "ppo")})
    return path


def reference_rows() -> dict[str, list[ReferenceRow]]:
    """Made-up floors and ceiling of the two tasks, on the generations' sample ids (what
    ``grue_bench.submit.floors`` computes, which its own tests check)."""
    rows = {}
    for task, spec in TASKS.items():
        key, base = spec["headline"], spec["base"]
        made = []
        for name, level in (("floor:empty", 0.1), ("floor:copy", 0.6), ("ceiling:human", 1.4)):
            values = {sid: base * level + 0.01 * i for i, (sid, _, _) in enumerate(PROMPTS)}
            made.append(
                ReferenceRow(
                    name,
                    f"made up: {name}",
                    {key: float(np.mean(list(values.values())))},
                    {key: values},
                    {key: len(values)},
                )
            )
        rows[task] = made
    return rows


def _report(store: Path, tmp_path_factory: pytest.TempPathFactory, name: str) -> Path:
    from grue_bench.report import build_report

    out = tmp_path_factory.mktemp(name)
    build_report(store, out, references=reference_rows())
    return out


@pytest.fixture(scope="session")
def three_seed_report(three_seed_store: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The report folder of ``three_seed_store``."""
    return _report(three_seed_store, tmp_path_factory, "report3")


@pytest.fixture(scope="session")
def one_seed_report(one_seed_store: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The report folder of ``one_seed_store``."""
    return _report(one_seed_store, tmp_path_factory, "report1")


@pytest.fixture(scope="session")
def profiles_report(profiles_store: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The report folder of ``profiles_store``."""
    return _report(profiles_store, tmp_path_factory, "report_profiles")


@pytest.fixture(scope="session")
def evil_report(evil_store: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The report folder of ``evil_store``."""
    return _report(evil_store, tmp_path_factory, "report_evil")
