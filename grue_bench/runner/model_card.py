"""A trained model's card: ``README.md`` in its ``model/`` folder, in the Hugging Face hub's format.

The front matter holds the hub's ``model-index`` (the run's test scores, on the task's dataset),
``library_name`` (``peft`` for an adapter folder), ``pipeline_tag``, ``tags`` and ``base_model``
(when the base LM came from the hub), and under ``grue_bench`` the version, task, algorithm, seed
and resolved config; the body says the same for people, with how to load the model. The folder can
then be uploaded as it is (``grue export --push-to-hub``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from huggingface_hub import EvalResult, ModelCard, ModelCardData

from grue_bench import __version__, plugins
from grue_bench.config import RunConfig
from grue_bench.runner.assemble import model_name_of
from grue_bench.tasks import TaskSpec

CARD = "README.md"
TEMPLATE = Path(__file__).with_name("model_card.md")
PIPELINES = {"causal": "text-generation", "seq2seq": "text2text-generation"}
"""The hub's pipeline tag (and model-index task type) per model type."""
_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*(/[\w.-]+)?")


@dataclass(frozen=True)
class TrainedRun:
    """What the card says about a run: its identity, base LM, config and final test scores."""

    task: str
    alg: str
    """The algorithm chain, e.g. ``ppo`` or ``supervised+ppo``."""
    seed: int
    base_model: str
    """What the run loaded, e.g. 'gpt2' or 'tiny-causal/imdb@1a2b3c4d' (see ``models.BaseLM.name``)."""
    config: RunConfig
    test_metrics: Mapping[str, float]


def write_model_card(model_dir: Path, run: TrainedRun) -> Path:
    """Write ``model_dir/README.md`` for ``run`` (replacing any) and return its path."""
    card = build_model_card(model_dir, run)
    path = model_dir / CARD
    card.save(path)
    return path


def build_model_card(model_dir: Path, run: TrainedRun) -> ModelCard:
    """The card of ``run``, whose final model (or adapter) is saved in ``model_dir``."""
    adapter = (model_dir / "adapter_config.json").is_file()
    pipeline = PIPELINES[_model_type(model_dir, adapter)]
    spec = plugins.TASKS.get(run.task) if run.task in plugins.TASKS else None
    task_name = spec.name if spec is not None else run.task
    dataset = _dataset(run, spec)
    results = [
        EvalResult(
            task_type=pipeline,
            task_name=task_name,
            dataset_type=dataset["type"],
            dataset_name=dataset["name"],
            dataset_config=dataset.get("config"),
            dataset_split=dataset["split"],
            metric_type=name,
            metric_name=name,
            metric_value=float(value),
        )
        for name, value in sorted(run.test_metrics.items())
    ]
    hub_base = _hub_base_model(run)
    name = f"{run.task}-{run.alg}-seed{run.seed}"
    data = ModelCardData(
        model_name=name,
        base_model=hub_base,
        datasets=[dataset["type"]] if dataset["on_hub"] else None,
        library_name="peft" if adapter else "transformers",
        pipeline_tag=pipeline,
        tags=["grue-bench", "rl", *run.alg.split("+")],
        eval_results=results or None,
        grue_bench={
            "version": __version__,
            "task": run.task,
            "task_version": spec.version if spec is not None else None,
            "algorithm": run.alg,
            "seed": run.seed,
            "base_model": run.base_model,
            "config": run.config.to_dict(),
        },
    )
    return ModelCard.from_template(
        data,
        template_path=str(TEMPLATE),
        name=name,
        run=run,
        task_name=task_name,
        description=spec.description if spec is not None else "",
        dataset=dataset,
        adapter=adapter,
        loader=_loader(pipeline == PIPELINES["causal"], adapter),
        version=__version__,
        config_yaml=run.config.to_yaml(),
    )


def _loader(causal: bool, adapter: bool) -> dict[str, str]:
    """The class that loads the folder, and its module."""
    head = "ForCausalLM" if causal else "ForSeq2SeqLM"
    if adapter:
        return {"module": "peft", "name": f"AutoPeftModel{head}"}
    return {"module": "transformers", "name": f"AutoModel{head}"}


def _model_type(model_dir: Path, adapter: bool) -> str:
    """``causal`` or ``seq2seq``, from the saved folder (the adapter's task type for PEFT)."""
    if adapter:
        task_type = json.loads((model_dir / "adapter_config.json").read_text()).get("task_type")
        return "seq2seq" if task_type == "SEQ_2_SEQ_LM" else "causal"
    config = json.loads((model_dir / "config.json").read_text())
    return "seq2seq" if config.get("is_encoder_decoder") else "causal"


def _dataset(run: TrainedRun, spec: TaskSpec | None) -> dict[str, Any]:
    """The test data: the task's hub dataset (and its test split), else the run's datapool."""
    hub = spec.data.hub if spec is not None and spec.data is not None else None
    name = spec.name if spec is not None else run.task
    if hub is not None:
        split = hub.splits.get("test", "test")
        return {"type": hub.path, "name": name, "config": hub.name, "split": split, "on_hub": True}
    pool = run.config.datapool.id if run.config.datapool is not None else run.task
    return {"type": pool, "name": name, "split": "test", "on_hub": False}


def _hub_base_model(run: TrainedRun) -> str | None:
    """The base LM's hub id, or None when it was built here (tiny, small) or read from a folder:
    the hub checks that ``base_model`` names a model it holds."""
    from_hub = model_name_of(run.config) is not None or run.config.profile == "paper"
    name = run.base_model
    if not from_hub or not _HUB_ID.fullmatch(name) or Path(name).expanduser().is_dir():
        return None
    return name
