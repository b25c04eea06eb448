"""Configs in the RL4LMs schema load unchanged; malformed ones fail with file and key path."""

import textwrap

import pytest
import yaml
from conftest import RL4LMS_CONFIGS

from grue_bench.errors import GrueError
from grue_bench.resolve import apply_override, load_config

PPO_CONFIG = RL4LMS_CONFIGS / "cnn_dm_t5_ppo.yml"
NLPO_CONFIG = RL4LMS_CONFIGS / "imdb_gpt2_nlpo.yml"


@pytest.mark.parametrize("name", ["cnn_dm_t5_ppo.yml", "imdb_gpt2_nlpo.yml", "commongen_t5_supervised.yml"])
def test_rl4lms_configs_validate_unchanged(run_grue, name):
    code, out, err = run_grue("validate", str(RL4LMS_CONFIGS / name))
    assert code == 0, err
    assert out.startswith(f"ok: {RL4LMS_CONFIGS / name}")


def test_rl4lms_values_are_read_into_typed_fields():
    config = load_config(NLPO_CONFIG)
    assert config.alg.id == "nlpo"
    assert config.alg.kl_div.target_kl == 0.02
    assert config.alg.policy.args["top_mask"] == 0.9
    assert config.train_evaluation.n_iters == 50
    assert config.env.args.max_episode_length == 48
    assert config.tokenizer.pad_token_as_eos_token is True


def test_overrides_change_any_key_and_the_hash():
    base = load_config(PPO_CONFIG)
    changed = load_config(PPO_CONFIG, ["alg.args.learning_rate=1e-5", "env.args.max_episode_length=64"])
    assert changed.alg.args["learning_rate"] == 1e-5
    assert changed.env.args.max_episode_length == 64
    assert changed.hash() != base.hash()
    assert load_config(PPO_CONFIG).hash() == base.hash()


def _with_learning_rate(tmp_path, text):
    """The PPO config file with ``learning_rate: <text>`` written as is."""
    path = tmp_path / "lr.yml"
    path.write_text(PPO_CONFIG.read_text().replace("learning_rate: 0.000002", f"learning_rate: {text}"))
    assert f"learning_rate: {text}" in path.read_text()
    return path


def test_an_exponent_override_is_the_number_a_decimal_in_the_file_is(tmp_path):
    # YAML 1.1 reads 1e-5 as a string: the override would change the config and its hash
    override = load_config(PPO_CONFIG, ["alg.args.learning_rate=1e-5"])
    written = load_config(_with_learning_rate(tmp_path, "0.00001"))
    assert override.alg.args["learning_rate"] == written.alg.args["learning_rate"] == 1e-5
    assert isinstance(override.alg.args["learning_rate"], float)
    assert override.hash() == written.hash()


@pytest.mark.parametrize(
    ("text", "value"), [("1e-5", 1e-5), ("5E-4", 5e-4), ("+2e3", 2000.0), ("1.0e5", 1e5), (".5e-3", 5e-4)]
)
def test_exponents_in_a_config_file_are_numbers(tmp_path, text, value):
    rate = load_config(_with_learning_rate(tmp_path, text)).alg.args["learning_rate"]
    assert isinstance(rate, float) and rate == value


@pytest.mark.parametrize(("raw", "text"), [("1e5abc", "1e5abc"), ("'1e-5'", "1e-5"), ('"5e3"', "5e3")])
def test_exponent_lookalikes_and_quoted_exponents_stay_strings(raw, text):
    config = load_config(PPO_CONFIG, [f"tokenizer.model_name={raw}"])
    assert config.tokenizer.model_name == text


def test_seeds_and_output_paths_do_not_change_the_hash():
    base = load_config(PPO_CONFIG)
    other = load_config(PPO_CONFIG, ["seeds=[3, 4]", "store=/tmp/x.sqlite", "output_dir=/tmp/out"])
    assert other.seed_list() == [3, 4]
    assert other.hash() == base.hash()


def test_dump_is_valid_yaml_that_loads_to_the_same_config(run_grue, tmp_path):
    code, out, _ = run_grue("validate", str(PPO_CONFIG), "--dump")
    assert code == 0
    dumped = out.split("\n", 1)[1]
    path = tmp_path / "dumped.yml"
    path.write_text(dumped)
    assert load_config(path).hash() == load_config(PPO_CONFIG).hash()
    assert yaml.safe_load(dumped)["alg"]["policy"]["args"]["generation_kwargs"]["max_new_tokens"] == 100


def _mutate(tmp_path, edit):
    data = yaml.safe_load(PPO_CONFIG.read_text())
    edit(data)
    path = tmp_path / "bad.yml"
    path.write_text(yaml.safe_dump(data))
    return path


def _set(path, value):
    def edit(data):
        node = data
        keys = path.split(".")
        for key in keys[:-1]:
            node = node[int(key)] if isinstance(node, list) else node.setdefault(key, {})
        node[keys[-1]] = value

    return edit


def _delete(path):
    def edit(data):
        node = data
        keys = path.split(".")
        for key in keys[:-1]:
            node = node[key]
        del node[keys[-1]]

    return edit


MALFORMED = [
    # (edit, key path named in the message, words the message must contain)
    (_set("algo", {"id": "ppo"}), "algo", "unknown key"),
    (_set("alg.args.learning_rat", 1e-5), "alg.args.learning_rat", "unknown key"),
    (_set("alg.args.n_steps", "many"), "alg.args.n_steps", "integer"),
    (_set("alg.args.learning_rate", -1.0), "alg.args.learning_rate", "greater than or equal to 0"),
    (_set("alg.id", "ppo2"), "alg.id", "Did you mean 'ppo'"),
    (_set("alg.policy.id", "seq2seq_policy"), "alg.policy.id", "unknown polic"),
    (_set("reward_fn.id", "rogue"), "reward_fn.id", "Did you mean 'rouge'"),
    (_set("reward_fn.args.rouge_typo", "rouge2"), "reward_fn.args.rouge_typo", "unknown key"),
    (_set("train_evaluation.metrics.1.id", "rouge3"), "train_evaluation.metrics.1.id", "unknown metric"),
    (_set("datapool.id", "cnn_dailymale"), "datapool.id", "Did you mean"),
    (_set("datapool.args.prompt_prefx", "x"), "datapool.args.prompt_prefx", "unknown key"),
    (
        _set("alg.policy.args.generation_kwargs.max_new_token", 5),
        "alg.policy.args.generation_kwargs.max_new_token",
        "unknown key",
    ),
    (
        _set("env.args.prompt_truncation_side", "middle"),
        "env.args.prompt_truncation_side",
        "'left' or 'right'",
    ),
    (_set("env.n_envs", 0), "env.n_envs", "greater than 0"),
    (_delete("alg"), "alg", "required key is missing"),
    (_set("alg.id", "nlpo"), "alg.policy.id", "maskable"),
    (_set("alg.training_args", {"num_train_epochs": 1}), "alg.training_args", "supervised"),
    (_set("task", "imbd"), "task", "Did you mean 'imdb'"),
    (_set("alg.kl_div.coeff", -0.1), "alg.kl_div.coeff", "greater than or equal to 0"),
]


@pytest.mark.parametrize(("edit", "key", "words"), MALFORMED, ids=[m[1] for m in MALFORMED])
def test_malformed_config_exits_2_naming_file_and_key(run_grue, tmp_path, edit, key, words):
    path = _mutate(tmp_path, edit)
    code, out, err = run_grue("validate", str(path))
    assert code == 2
    assert out == ""
    assert f"{path}: {key}" in err
    assert words in err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("alg: [unclosed", "not valid YAML (line 1"),
        ("- just\n- a list\n", "top level must be a mapping"),
        ("alg: !!python/object/apply:os.system ['echo hi']\n", "not valid YAML"),
        ("alg:\n  id: ppo\nalg:\n  id: a2c\n", "duplicate key 'alg'"),
    ],
)
def test_unreadable_yaml_exits_2_naming_the_file(run_grue, tmp_path, text, words):
    path = tmp_path / "broken.yml"
    path.write_text(textwrap.dedent(text))
    code, _, err = run_grue("validate", str(path))
    assert code == 2
    assert str(path) in err and words in err


NOT_UTF8 = {
    "latin-1": ("alg:\n  id: ppo\nnote: café\n".encode("latin-1"), "byte 0xe9 at line 3 (byte offset 24)"),
    "utf-16": ("alg: {id: ppo}\n".encode("utf-16"), "byte 0xff at line 1 (byte offset 0)"),
}


@pytest.mark.parametrize("encoding", NOT_UTF8)
@pytest.mark.parametrize("command", [["validate"], ["run", "--config"]], ids=["validate", "run"])
def test_a_config_file_not_in_utf8_exits_2_saying_where_and_to_save_it_as_utf8(
    run_grue, tmp_path, encoding, command
):
    content, where = NOT_UTF8[encoding]
    path = tmp_path / "bad.yml"
    path.write_bytes(content)
    store = ["--store", str(tmp_path / "s.sqlite"), "--output-dir", str(tmp_path / "runs")]
    code, out, err = run_grue(*command, str(path), *(store if command[0] == "run" else []))
    assert code == 2
    assert out == ""
    assert err.splitlines() == [
        f"grue {command[0]}: error: {path}: not UTF-8 text: {where}",
        "  fix: save the file as UTF-8 (e.g. `iconv -f latin1 -t utf-8`, or your editor's encoding menu)",
    ]
    assert not (tmp_path / "s.sqlite").exists()


def test_missing_file(run_grue, tmp_path):
    code, _, err = run_grue("validate", str(tmp_path / "nope.yml"))
    assert code == 2
    assert "nope.yml: file not found" in err


def test_every_problem_is_reported_at_once(run_grue, tmp_path):
    def edit(data):
        data["alg"]["args"]["n_epochs"] = "five"
        data["reward_fn"]["id"] = "nope"
        data["env"]["args"]["max_episode_length"] = -1

    code, _, err = run_grue("validate", str(_mutate(tmp_path, edit)))
    assert code == 2
    assert "alg.args.n_epochs" in err and "env.args.max_episode_length" in err


def test_debug_shows_the_traceback(tmp_path):
    from grue_bench.cli import main

    with pytest.raises(GrueError):
        main(["--debug", "validate", str(tmp_path / "nope.yml")])


@pytest.mark.parametrize("assignment", ["alg.args.lr", "=3", "a..b=1"])
def test_malformed_override(assignment):
    with pytest.raises(GrueError, match=r"key\.path=value"):
        apply_override({}, assignment)


def test_override_into_a_value_is_refused():
    with pytest.raises(GrueError, match="is a value, not a section"):
        apply_override({"alg": "ppo"}, "alg.id=ppo")


def test_an_override_addresses_a_list_item_by_its_position():
    data = {
        "train_evaluation": {
            "metrics": [{"id": "rouge"}, {"id": "causal_perplexity", "args": {"stride": 512}}]
        }
    }
    apply_override(data, "train_evaluation.metrics.1.args.stride=256")
    apply_override(data, "train_evaluation.metrics.0.id=meteor")
    assert data["train_evaluation"]["metrics"] == [
        {"id": "meteor"},
        {"id": "causal_perplexity", "args": {"stride": 256}},
    ]
    for key in ("train_evaluation.metrics.2.id", "train_evaluation.metrics.first.id"):
        with pytest.raises(GrueError, match="is not an item of a list of 2") as error:
            apply_override(data, f"{key}=x")
        assert "0 to 1" in str(error.value)


def test_a_list_item_override_reaches_validation(run_grue, tmp_path):
    config = tmp_path / "c.yml"
    config.write_text(PPO_CONFIG.read_text())
    code, _, err = run_grue(
        "validate", str(config), "--set", "train_evaluation.metrics.0.args.bogus=1", "--dump"
    )
    assert code == 2 and "train_evaluation.metrics.0.args" in err and "bogus" in err


def test_bad_override_value_via_cli(run_grue):
    code, _, err = run_grue("validate", str(PPO_CONFIG), "--set", "alg.args.n_epochs=lots")
    assert code == 2
    assert "alg.args.n_epochs" in err and "--set" in err


def test_merging_a_component_with_another_id_replaces_it():
    from grue_bench.schema import deep_merge

    base = {"reward_fn": {"id": "increasing_numbers", "args": {"min_tokens": 20}}, "env": {"n_envs": 1}}
    assert deep_merge(base, {"reward_fn": {"id": "meteor"}})["reward_fn"] == {"id": "meteor"}
    same = deep_merge(base, {"reward_fn": {"args": {"min_tokens": 5}}, "env": {"args": {"x": 1}}})
    assert same["reward_fn"] == {"id": "increasing_numbers", "args": {"min_tokens": 5}}
    assert same["env"] == {"n_envs": 1, "args": {"x": 1}}


def test_eval_every_beyond_n_iters_is_accepted_as_in_rl4lms():
    """RL4LMs evaluates before and after training whatever eval_every says: one larger than
    n_iters (its configs with n_iters cut down for a quick try) only skips the evaluations
    between."""
    config = load_config(PPO_CONFIG, ["train_evaluation.n_iters=1", "train_evaluation.eval_every=10"])
    assert (config.train_evaluation.n_iters, config.train_evaluation.eval_every) == (1, 10)
