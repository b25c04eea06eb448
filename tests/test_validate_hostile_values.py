"""`grue validate` refuses every hostile value a run's set-up would refuse, for every registered
component, with the key path (as ``--set`` takes it) and a fix; and a value it lets through never
makes the component's constructor raise a value error.

The table of hostile values follows each argument's declared type: a negative number (unless the
argument is listed in ``SIGNED``), zero for a whole number (unless listed in ``ZERO_OK``: a count or
an index where zero means something), an unknown word for an enum or a checked name, and a value of
the wrong type. A text argument is either an enum, a checked name (a validator), or listed in
``FREE_TEXT`` with what it holds: a new argument must be one of them, so none escapes the table.
"""

from __future__ import annotations

import types
import typing
from pathlib import Path
from typing import Any, Literal

import pytest
import yaml
from conftest import RL4LMS_TASK_CONFIGS
from pydantic import AfterValidator, BaseModel

from grue_bench import plugins
from grue_bench.cli import main
from grue_bench.errors import GrueError, MissingAssetError
from grue_bench.plugins.components import args_of

SIGNED = {
    ("metric", "scale"): "a reward may decrease with the metric (ter is 1 - TER: scale -1)",
    ("metric", "offset"): "any shift of the reward",
    ("generation_kwargs", "length_penalty"): "negative favours shorter beams (transformers' meaning)",
}
"""(component id or nested section, argument) whose negative values are meaningful."""

ZERO_OK = {
    "label_ix": "class 0 (negative sentiment)",
    "seed": "seed 0",
    "length_limit": "no length limit (py-rouge)",
    "min_tokens": "no minimum length",
    "word_order": "chrF without word n-grams (chrF, not chrF++)",
    "beta": "chrF weighted to precision alone",
    "verbose": "no per-iteration logging",
    "warmup_steps": "no warm-up",
    "top_k": "no top-k filtering",
    "min_length": "no minimum length",
    "min_new_tokens": "no minimum length",
    "no_repeat_ngram_size": "no n-gram blocking",
}
"""Whole-number arguments where zero means something (by name, across components)."""

FREE_TEXT = {
    "model_name": "a hub id or a local folder (loaded when the run starts)",
    "tokenizer_name": "a hub id or a local folder",
    "tokenizer_id": "a hub id or a local folder (RL4LMs's name)",
    "model_path": "a local folder of weights",
    "model_type": "bert_score's backbone: a hub id or a local folder",
    "checkpoint": "a BLEURT checkpoint folder or hub id",
    "wordnet_dir": "a WordNet folder (a missing one is a missing asset)",
    "start_file": "SummaC-Conv's trained layers (a missing file is a missing asset)",
    "key": "the result of an evaluate module to keep (known once it has run)",
    "language": "a language code (bert-score's multilingual default takes any)",
    "trg_lang": "sacrebleu's target language code",
    "prompt": "prompt text",
    "prefix": "prompt text",
    "prompt_prefix": "prompt text",
    "prompt_suffix": "prompt text",
    "concept_separator_token": "prompt text",
    "concept_end_token": "prompt text",
    "wmt_id": "a WMT dataset on the hub",
    "source_language": "a language code of the WMT dataset",
    "target_language": "a language code of the WMT dataset",
}
"""Text arguments that are not enums, and what they hold."""

CHECKED_TEXT = {"peft_type"}
"""Text arguments checked by their model's own validator (peft's method names)."""

REQUIRED = {
    ("rewards", "metric"): {"metric": "rouge", "keys": ["lexical/rouge_rouge1"]},
    ("metrics", "evaluate"): {"path": "."},
    ("metrics", "increasing_numbers"): {"min_tokens": 20},
    ("metrics", "reward"): {"id": "increasing_numbers"},
    ("datapools", "task"): {"task": "imdb"},
    ("datapools", "wmt16"): {"wmt_id": "wmt16", "source_language": "en", "target_language": "de"},
    ("datapools", "crd3"): {"max_context_size": 5},
}
"""Valid values of the arguments some components require."""

BASE = {
    "tokenizer": {"model_name": "gpt2", "padding_side": "left", "pad_token_as_eos_token": True},
    "reward_fn": {"id": "increasing_numbers"},
    "datapool": {"id": "imdb"},
    "env": {"n_envs": 2, "args": {"max_prompt_length": 16, "max_episode_length": 8}},
    "alg": {"id": "ppo", "args": {}, "policy": {"id": "causal_lm_actor_critic_policy", "args": {}}},
    "train_evaluation": {"n_iters": 1, "eval_every": 1, "metrics": [{"id": "rouge"}, {"id": "bleu"}]},
}
"""A valid run config that each case puts one component into."""


def _unwrap(annotation: Any) -> Any:
    """The annotation without Optional and Annotated."""
    while True:
        origin = typing.get_origin(annotation)
        if origin is typing.Annotated:
            annotation = typing.get_args(annotation)[0]
        elif origin in (typing.Union, types.UnionType):
            rest = [a for a in typing.get_args(annotation) if a is not type(None)]
            if len(rest) != 1:
                return annotation
            annotation = rest[0]
        else:
            return annotation


def _checked(field: Any) -> bool:
    """Whether a field's declaration carries a validator of its own (an id, a device, a path)."""
    metadata, annotations = list(field.metadata), [field.annotation]
    while annotations:
        annotation = annotations.pop()
        metadata.extend(getattr(annotation, "__metadata__", ()))
        annotations.extend(typing.get_args(annotation))
    return any(isinstance(item, AfterValidator) for item in metadata)


def _table(owner: str, name: str, field: Any) -> list[tuple[Any, str, bool]]:
    """(value, what it is, whether it is meaningful here) for one argument: the table of hostile
    values, less the negatives of ``SIGNED`` and the zeros of ``ZERO_OK``, which must pass."""
    kind = _unwrap(field.annotation)
    if isinstance(kind, type) and issubclass(kind, BaseModel):
        return [("x", "the wrong type", False)]
    if typing.get_origin(kind) is Literal:
        return [("no-such-word", "an unknown enum word", False), ([1], "the wrong type", False)]
    if kind is bool:
        return [("maybe", "the wrong type", False)]
    if kind in (int, float):
        values = [("many", "the wrong type", False), (-1, "negative", (owner, name) in SIGNED)]
        if kind is int:
            values.append((0, "zero for a size", name in ZERO_OK))
        return values
    if kind is str:
        assert _checked(field) or name in CHECKED_TEXT or name in FREE_TEXT, (
            f"{owner}: text argument '{name}' is neither an enum (Literal), a checked name, nor in FREE_TEXT"
        )
        values = [(5, "the wrong type", False)]
        if _checked(field) or name in CHECKED_TEXT:
            values.append(("no-such-word", "an unknown name", False))
        return values
    return [("x", "the wrong type", False)]


def _fields(model: type[BaseModel], prefix: str = "") -> list[tuple[str, str, Any]]:
    """(section, dotted argument path, field) of a model's arguments, nested sections included."""
    found = []
    for name, field in model.model_fields.items():
        kind = _unwrap(field.annotation)
        if isinstance(kind, type) and issubclass(kind, BaseModel) and name != "post_processing_fn":
            found.extend(_fields(kind, f"{prefix}{name}."))
        else:
            found.append((prefix.rstrip(".").rsplit(".", 1)[-1], f"{prefix}{name}", field))
    return found


def _placed(kind: str, id: str) -> tuple[dict[str, Any], str]:
    """The base config holding component ``id`` and the key path of its arguments."""
    config = yaml.safe_load(yaml.safe_dump(BASE))
    args = dict(REQUIRED.get((kind, id), {}))
    if kind == "rewards":
        config["reward_fn"] = {"id": id, "args": args}
        return config, "reward_fn.args"
    if kind == "metrics":
        config["train_evaluation"]["metrics"].append({"id": id, "args": args})
        return config, "train_evaluation.metrics.2.args"
    if kind == "datapools":
        config["datapool"] = {"id": id, "args": args}
        return config, "datapool.args"
    if kind == "algorithms":
        if id == "supervised":
            config["alg"] = {"id": id, "model_type": "causal", "training_args": {}}
            return config, "alg.training_args"
        config["alg"]["id"] = id
        if plugins.ALGORITHMS.get(id).Args.masked_sampling:
            config["alg"]["policy"]["id"] = "maskable_causal_lm_actor_critic_policy"
        return config, "alg.args"
    if kind == "post_processors":
        config["train_evaluation"]["generation_kwargs"] = {"post_processing_fn": {"id": id}}
        return config, "train_evaluation.generation_kwargs.post_processing_fn"
    config["alg"]["policy"]["id"] = id  # policies
    if plugins.POLICIES.get(id).maskable:
        config["alg"]["id"] = "nlpo"
    return config, "alg.policy.args"


def _components() -> list[tuple[str, str]]:
    kinds = ("datapools", "rewards", "metrics", "algorithms", "policies", "post_processors")
    return [(kind, id) for kind in kinds for id in plugins.REGISTRIES[kind].ids()]


def _validate(path: Path, overrides: list[str], capsys: pytest.CaptureFixture) -> tuple[int, str]:
    code = main(["validate", str(path), *(arg for o in overrides for arg in ("--set", o))])
    return code, capsys.readouterr().err


def _construct(kind: str, id: str, args: dict[str, Any]) -> None:
    """Build component ``id`` directly (not through the check) with ``args``."""
    target = plugins.REGISTRIES[kind].get(id)
    if kind == "algorithms":  # an algorithm's arguments are its Args model's
        target = target.Args
    if kind == "datapools":
        target.prepare("validation", **args)
    elif isinstance(target, type) and issubclass(target, BaseModel):
        target.model_validate(args)
    else:
        target(**args)


def _nested(path: str, value: Any) -> dict[str, Any]:
    """``{"a": {"b": value}}`` for ``a.b``."""
    *parents, last = path.split(".")
    tree: dict[str, Any] = {last: value}
    for part in reversed(parents):
        tree = {part: tree}
    return tree


@pytest.mark.parametrize(("kind", "id"), _components())
def test_every_hostile_value_is_refused_at_validate_with_its_key_and_a_fix(kind, id, tmp_path, capsys):
    config, where = _placed(kind, id)
    path = tmp_path / "config.yml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    code, err = _validate(path, [], capsys)
    assert code == 0, f"the base config with {kind} '{id}' does not validate:\n{err}"
    model = args_of(kind, id)
    if kind == "post_processors":
        assert not model.model_fields  # a post-processor takes no arguments: its id is all there is
    failures = []
    for section, name, field in _fields(model):
        for value, what, meaningful in _table(section or id, name.rsplit(".", 1)[-1], field):
            key = f"{where}.{name}"
            shown = yaml.safe_dump(value, default_flow_style=True).strip().removesuffix("...").strip()
            code, err = _validate(path, [f"{key}={shown}"], capsys)
            if meaningful:
                if code != 0:
                    failures.append(
                        f"{key}={value!r} ({what}) means something, but validate refuses it:\n{err}"
                    )
                    continue
                args = {**REQUIRED.get((kind, id), {}), **_nested(name, value)}
                try:
                    _construct(kind, id, args)
                except MissingAssetError:
                    pass  # an asset this machine lacks, not a value validate should have refused
                except (GrueError, ValueError, TypeError, KeyError) as error:
                    failures.append(
                        f"{key}={value!r} ({what}) passes validate, but the constructor says: {error}"
                    )
            elif code != 2 or f"{key}:" not in err or "\n  fix: " not in err:
                failures.append(f"{key}={value!r} ({what}): exit {code}, message:\n{err}")
    assert not failures, "\n\n".join(failures)


CROSS_ARGUMENT_CASES = [
    # (kind, id, overrides of its args, the argument named)
    ("rewards", "learned_reward", {"label_ix": 2}, "label_ix"),
    ("metrics", "rouge_l_max", {"apply_avg": False, "apply_best": False}, "apply_avg"),
    ("metrics", "bert_score", {"rescale_with_baseline": True}, "rescale_with_baseline"),
    ("metrics", "summaCZS", {"use_ent": False, "use_con": False}, "use_ent"),
    ("metrics", "reward", {"id": "increasing_numbers", "args": {"min_tokens": -1}}, "args.min_tokens"),
    ("rewards", "metric", {"metric_args": {"stemmer": True}}, "metric_args.stemmer"),
    ("rewards", "metric", {"metric": "rouge_l_max", "metric_args": {"length_limit_type": "lines"}},
     "metric_args.length_limit_type"),
    ("rewards", "meteor", {"shaping_fn": "metric"}, "shaping_fn"),
    ("datapools", "task", {"task": "dates"}, "task"),
    ("algorithms", "grpo", {"n_steps": 6, "group_size": 4}, "n_steps"),
    ("algorithms", "a2c", {"n_epochs": 2}, "n_epochs"),
]  # fmt: skip
"""Values refused by a rule across arguments, or by the declaration of a component they name."""


@pytest.mark.parametrize(("kind", "id", "args", "argument"), CROSS_ARGUMENT_CASES)
def test_rules_across_arguments_are_refused_under_the_key_to_change(
    kind, id, args, argument, tmp_path, capsys
):
    config, where = _placed(kind, id)
    *parents, last = where.split(".")
    node = config
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    node[last].update(args)
    path = tmp_path / "config.yml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    code, err = _validate(path, [], capsys)
    assert code == 2 and f"{where}.{argument}:" in err and "\n  fix: " in err, err


@pytest.mark.parametrize(
    ("config", "override", "key"),
    [
        ("imdb_text_continuation/gpt2_ppo.yml", "reward_fn.args.label_ix=-3", "reward_fn.args.label_ix"),
        ("imdb_text_continuation/gpt2_ppo.yml", "reward_fn.args.batch_size=0", "reward_fn.args.batch_size"),
        (
            "narrative_qa/t5_ppo_on_supervised.yml",
            "train_evaluation.metrics.4.args.length_limit_type=paragraphs",
            "train_evaluation.metrics.4.args.length_limit_type",
        ),
    ],
)
def test_the_values_rl4lms_configs_let_through_are_refused(config, override, key, capsys):
    """The issue's measurements, on RL4LMs's own configs: each was `ok` before."""
    code, err = _validate(RL4LMS_TASK_CONFIGS / config, [], capsys)
    assert code == 0, err
    code, err = _validate(RL4LMS_TASK_CONFIGS / config, [override], capsys)
    assert code == 2 and f"{key}:" in err and "\n  fix: " in err, err


def test_a_seed_numpy_cannot_take_is_refused_under_its_index(tmp_path, capsys):
    path = tmp_path / "config.yml"
    path.write_text(yaml.safe_dump({**BASE, "seeds": [0, 2**32, -1]}), encoding="utf-8")
    code, err = _validate(path, [], capsys)
    assert code == 2 and "seeds.1: seed 4294967296 is outside 0 to 2**32 - 1" in err
    assert "seeds.2: seed -1 is outside" in err and "fix: give a seed from 0 to 4294967295" in err


@pytest.mark.parametrize(
    ("policy", "generation_kwargs"),
    [
        ("seq2seq_lm_actor_critic_policy", {"do_sample": True}),
        ("causal_lm_actor_critic_policy", {"do_sample": True, "num_beams": 2}),
        ("causal_lm_actor_critic_policy", {}),
    ],
)
def test_a_compiled_sampler_it_cannot_serve_is_refused_at_validate(
    policy, generation_kwargs, tmp_path, capsys
):
    """The rollout collector refuses these when the run sets up; validate refuses them first."""
    config = yaml.safe_load(yaml.safe_dump(BASE))
    config["alg"]["policy"] = {
        "id": policy,
        "args": {"compile_sampler": True, "generation_kwargs": generation_kwargs},
    }
    path = tmp_path / "config.yml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    code, err = _validate(path, [], capsys)
    assert code == 2 and "alg.policy.args.compile_sampler:" in err and "\n  fix: " in err, err
