"""`grue run --config X.yml` alone: the config says its task (through its datapool) and its
algorithm (alg.id); --task and --alg, when given, must agree with it."""

import subprocess
import sys

import pytest
from conftest import RL4LMS_CONFIGS, RL4LMS_TASK_CONFIGS

from grue_bench import plugins
from grue_bench.classifiers.judges import CURRENT_JUDGES
from grue_bench.errors import GrueError
from grue_bench.resolve.grid import build_specs, resolve_grid
from grue_bench.store import Store

IMDB_PPO = RL4LMS_TASK_CONFIGS / "imdb_text_continuation" / "gpt2_ppo.yml"
"""RL4LMs's own IMDB PPO config, unchanged (see SOURCE.md)."""


@pytest.mark.parametrize(
    ("name", "task", "alg"),
    [
        ("task_configs/imdb_text_continuation/gpt2_ppo.yml", "imdb", "ppo"),
        ("task_configs/imdb_text_continuation/gpt2_supervised.yml", "imdb", "supervised"),
        ("imdb_gpt2_nlpo.yml", "imdb", "nlpo"),
        ("cnn_dm_t5_ppo.yml", "cnn_dailymail", "ppo"),
        ("commongen_t5_supervised.yml", "commongen", "supervised"),
    ],
)
def test_a_config_alone_gives_its_task_and_algorithm(name, task, alg):
    assert resolve_grid(None, None, RL4LMS_CONFIGS / name) == ([task], [alg])


def test_a_config_alone_registers_one_run_per_seed():
    specs = build_specs(*resolve_grid(None, None, IMDB_PPO), [0, 1], None, IMDB_PPO)
    assert [spec.label for spec in specs] == ["imdb/ppo/seed0", "imdb/ppo/seed1"]
    assert specs[0].config.datapool.id == "imdb"


def test_a_generic_datapool_is_the_task_declaring_it_with_the_config_reward(tmp_path):
    config = tmp_path / "dates.yml"
    config.write_text(
        "datapool: {id: dummy_pool, args: {n_samples: 50, prompt: ''}}\n"
        "reward_fn: {id: sentences_with_dates}\nalg: {id: ppo}\n"
    )
    assert resolve_grid(None, None, config) == (["dates"], ["ppo"])


def test_without_a_config_the_defaults_are_the_grue_tasks_and_ppo():
    assert resolve_grid(None, None, None) == (list(plugins.grue_tasks()), ["ppo"])


def test_a_config_naming_no_task_needs_task(tmp_path):
    config = tmp_path / "partial.yml"
    config.write_text("alg: {args: {learning_rate: 1.0e-5}}\n")
    with pytest.raises(GrueError) as caught:
        resolve_grid(None, None, config)
    assert "cannot tell which task" in str(caught.value) and "pass --task" in str(caught.value)
    assert resolve_grid("imdb,commongen", None, config) == (["imdb", "commongen"], ["ppo"])


def test_a_datapool_no_task_reads_needs_task(tmp_path):
    config = tmp_path / "dummy.yml"
    config.write_text("datapool: {id: dummy_pool}\nreward_fn: {id: rouge}\nalg: {id: ppo}\n")
    with pytest.raises(GrueError) as caught:
        resolve_grid(None, None, config)
    assert caught.value.problems[0].key == "datapool.id"
    assert "'dummy_pool' is no task's data" in str(caught.value)
    assert resolve_grid("increasing_numbers", None, config) == (["increasing_numbers"], ["ppo"])


def test_task_and_alg_given_must_agree_with_the_config():
    assert resolve_grid("imdb", "supervised+ppo", IMDB_PPO) == (["imdb"], ["supervised+ppo"])
    with pytest.raises(GrueError) as caught:
        resolve_grid("commongen", None, IMDB_PPO)
    assert "--task commongen disagrees with the config, which is for task 'imdb'" in str(caught.value)
    with pytest.raises(GrueError) as caught:
        resolve_grid(None, "ppo,nlpo", IMDB_PPO)
    assert "--alg ppo,nlpo disagrees with the config, whose algorithm is 'ppo'" in str(caught.value)
    assert caught.value.problems[0].key == "alg.id"


def test_overrides_count_as_part_of_the_config():
    assert resolve_grid(None, None, IMDB_PPO, ["alg.id=nlpo"]) == (["imdb"], ["nlpo"])


def test_the_cli_refuses_a_disagreeing_task_with_status_2(run_grue, tmp_path):
    store = tmp_path / "s.sqlite"
    code, out, err = run_grue("run", "--config", str(IMDB_PPO), "--task", "all", "--store", str(store))
    assert code == 2 and out == ""
    assert f"{IMDB_PPO}: datapool.id: --task all disagrees with the config" in err
    assert not store.exists()


def grue_run(tmp_path, *extra: str) -> subprocess.CompletedProcess:
    """``grue run --config <RL4LMs's IMDB PPO config>`` in a fresh process (offline, see conftest)."""
    store = ["--store", str(tmp_path / "s.sqlite"), "--output-dir", str(tmp_path / "runs")]
    command = [sys.executable, "-m", "grue_bench", "run", "--config", str(IMDB_PPO), *store, *extra]
    return subprocess.run(command, capture_output=True, text=True, check=False)


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_run_failing_to_set_up_is_recorded_failed_with_its_error(tmp_path, jobs):
    # without --profile the config's hub models are used as written: offline, they cannot load
    result = grue_run(tmp_path, "--jobs", jobs)
    assert result.returncode == 1, result.stderr[-2000:]
    assert "1 run(s): 0 finished, 0 already done, 1 failed" in result.stdout
    (failed,) = [line for line in result.stdout.splitlines() if line.startswith("FAILED imdb/ppo/seed0: ")]
    assert "model_name: model 'lvwerra/gpt2-imdb' is not available offline" in failed
    with Store(tmp_path / "s.sqlite") as store:
        (run,) = store.runs()
    assert (run.task, run.alg, run.status) == ("imdb", "ppo", "failed")
    assert "lvwerra/gpt2-imdb' is not available offline" in run.error
    assert run.versions["offline_judges"] == CURRENT_JUDGES  # what would have scored it


def test_an_offline_profile_given_runs_rl4lms_config_offline_logging_each_substitution(tmp_path):
    # a rollout is env.n_envs (10 in the config) x n_steps token transitions: 20 here
    result = grue_run(
        tmp_path,
        "--profile=tiny",
        "--seeds=1",
        "--set=train_evaluation.n_iters=1",
        "--set=train_evaluation.eval_every=1",
        "--set=alg.args.n_steps=2",
        "--set=alg.args.batch_size=10",
        "--set=alg.args.n_epochs=1",
        "--set=train_evaluation.eval_batch_size=16",
        "--set=datapool.args.max_samples=16",
        "--set=env.args.max_episode_length=8",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "1 run(s): 1 finished" in result.stdout
    with Store(tmp_path / "s.sqlite") as store:
        (run,) = store.runs()
    assert (run.task, run.alg, run.status, run.profile) == ("imdb", "ppo", "finished", "tiny")
    assert run.model.startswith("tiny-causal")
    lm = "the tiny profile's LM, trained here on task imdb's texts"
    for line in (
        f"tiny profile: tokenizer.model_name lvwerra/gpt2-imdb -> {lm}",
        f"tiny profile: alg.policy.args.model_name lvwerra/gpt2-imdb -> {lm}",
        "tiny profile: reward_fn.args.model_name lvwerra/distilbert-imdb -> learned_reward's offline default",
        "tiny profile: train_evaluation.metrics.0.args.model_name lvwerra/distilbert-imdb -> learned_",
        "tiny profile: train_evaluation.metrics.1.args.tokenizer_id gpt2 -> causal_perplexity's offline",
    ):
        assert line in result.stderr


def test_the_small_profile_replaces_the_models_and_takes_the_tiny_sizes(caplog):
    caplog.set_level("INFO", logger="grue_bench.resolve.offline")
    (spec,) = build_specs(["imdb"], ["ppo"], [0], "small", IMDB_PPO, offline=True)
    config = spec.config
    assert config.profile == "small" and config.tokenizer.model_name is None
    assert "model_name" not in config.alg.policy.args and "model_name" not in config.reward_fn.args
    assert config.alg.args["n_steps"] == 128  # the config's own sizes stay
    assert (
        "small profile: tokenizer.model_name lvwerra/gpt2-imdb -> the small profile's LM, "
        "SmolLM2-135M-Instruct" in caplog.text
    )


def test_models_stay_as_written_without_a_profile_given_or_when_local(tmp_path):
    (spec,) = build_specs(["imdb"], ["ppo"], [0], None, IMDB_PPO)
    assert spec.config.alg.policy.args["model_name"] == "lvwerra/gpt2-imdb"
    local = tmp_path / "my-gpt2"
    local.mkdir()
    config = tmp_path / "local.yml"
    config.write_text(IMDB_PPO.read_text().replace("lvwerra/gpt2-imdb", str(local)))
    (kept,) = build_specs(["imdb"], ["ppo"], [0], "tiny", config, offline=True)
    assert kept.config.alg.policy.args["model_name"] == kept.config.tokenizer.model_name == str(local)
    assert "model_name" not in kept.config.reward_fn.args


COMMONGEN_PPO = RL4LMS_TASK_CONFIGS / "common_gen" / "t5_ppo.yml"
"""RL4LMs's CommonGen PPO config: its metrics include SPICE (Java + CoreNLP jars)."""
IWSLT_PPO = RL4LMS_TASK_CONFIGS / "iwslt2017" / "t5_ppo.yml"
"""RL4LMs's IWSLT PPO config: its metrics include BERTScore of German text."""


def _metric_ids(spec) -> list[str]:
    return [metric.id for metric in spec.config.train_evaluation.metrics]


def test_an_offline_profile_leaves_out_metrics_lacking_an_asset_saying_why(tmp_path, monkeypatch, caplog):
    from grue_bench.metrics import spice

    monkeypatch.setattr(spice, "spice_dir", lambda: tmp_path)  # no jars there
    caplog.set_level("WARNING", logger="grue_bench.resolve.offline")
    (commongen,) = build_specs(["commongen"], ["ppo"], [0], "tiny", COMMONGEN_PPO, offline=True)
    (iwslt,) = build_specs(["iwslt2017_en_de"], ["ppo"], [0], "tiny", IWSLT_PPO, offline=True)
    assert "spice" not in _metric_ids(commongen) and "cider" in _metric_ids(commongen)
    assert "bert_score" not in _metric_ids(iwslt) and "sacre_bleu" in _metric_ids(iwslt)
    assert "tiny profile: train_evaluation.metrics.5 (spice) left out: SPICE needs" in caplog.text
    assert "tiny profile: train_evaluation.metrics.3 (bert_score) left out: language 'de'" in caplog.text
    assert "an English model" in caplog.text and "bert-base-multilingual-cased" in caplog.text


def test_metrics_stay_without_an_offline_profile_or_when_their_asset_is_there(tmp_path, monkeypatch):
    from grue_bench.metrics import spice

    (written,) = build_specs(["commongen"], ["ppo"], [0], None, COMMONGEN_PPO)
    assert "spice" in _metric_ids(written)  # as written: it fails at evaluation, naming the jars
    (tmp_path / "lib").mkdir()
    for name in ("spice-1.0.jar", *(f"lib/{jar}" for jar in spice.CORENLP_JARS)):
        (tmp_path / name).touch()
    monkeypatch.setattr(spice, "spice_dir", lambda: tmp_path)
    monkeypatch.setattr(spice.shutil, "which", lambda name: "/usr/bin/java")
    (installed,) = build_specs(["commongen"], ["ppo"], [0], "tiny", COMMONGEN_PPO, offline=True)
    assert "spice" in _metric_ids(installed)


def test_precision_sets_the_hugging_face_flags_of_every_stage():
    from grue_bench.cli import build_parser
    from grue_bench.commands.run import grid_specs
    from grue_bench.resolve import supervised_args

    algs = "ppo,supervised+ppo,supervised"
    argv = ["run", "--task", "increasing_numbers", "--alg", algs, "--precision", "bf16"]
    specs = grid_specs(build_parser("run").parse_args(argv))
    assert [spec.alg for spec in specs] == ["ppo", "supervised+ppo", "supervised"]
    flags = [(spec.config.alg.args["bf16"], spec.config.alg.args["fp16"]) for spec in specs]
    assert flags == [(True, False)] * 3
    assert all(supervised_args(spec.config).bf16 for spec in specs)  # a chain's warm start too


@pytest.mark.parametrize("native", [True, False])
def test_the_small_profile_runs_in_bf16_where_the_machine_has_it_and_its_config_says_so(monkeypatch, native):
    from grue_bench.cli import build_parser
    from grue_bench.commands.run import grid_specs
    from grue_bench.resolve import supervised_args
    from grue_bench.rl import precision

    monkeypatch.setattr(precision, "bf16_supported", lambda device: native)
    argv = ["run", "--task", "imdb", "--alg", "ppo,supervised+ppo,supervised", "--profile", "small"]
    specs = grid_specs(build_parser("run").parse_args(argv))
    assert [spec.config.alg.args["bf16"] for spec in specs] == [native] * 3  # decided: 'auto' is gone
    assert [supervised_args(spec.config).bf16 for spec in specs] == [native] * 3
    fp32 = grid_specs(build_parser("run").parse_args([*argv, "--precision", "fp32"]))
    assert [spec.config.alg.args["bf16"] for spec in fp32] == [False] * 3
    explicit = grid_specs(build_parser("run").parse_args([*argv, "--set", f"alg.args.bf16={native}"]))
    assert [spec.config_hash for spec in explicit] == [spec.config_hash for spec in specs]


def test_a_precision_this_machine_lacks_stops_the_grid_before_any_run(run_grue, tmp_path):
    store = tmp_path / "s.sqlite"
    task = ["--task", "increasing_numbers", "--store", str(store)]
    code, _, stderr = run_grue("run", *task, "--precision", "fp16")
    assert code == 2 and "--precision: fp16 needs a CUDA GPU; this run is on cpu" in stderr
    code, _, stderr = run_grue("run", *task, "--set", "alg.args.fp16=true")
    assert code == 2 and "alg.args.fp16: fp16 needs a CUDA GPU; this run is on cpu" in stderr
    assert not store.exists()


def test_a_chains_key_changes_with_its_warm_starts_settings_which_its_config_does_not_hold(monkeypatch):
    """``supervised+ppo`` reads its supervised stage's settings from the task profile, outside its
    (PPO) config: the run's key hashes them too, so that a changed stage is a new run, not a resume."""
    from grue_bench import plugins
    from grue_bench.resolve.grid import WARM_START, build_specs, recorded_run_config

    def keys() -> dict[str, str]:
        specs = build_specs(["imdb"], ["ppo", "supervised+ppo", "supervised"], [0], "tiny")
        return {spec.alg: spec.config_hash for spec in specs}

    before = keys()
    training_args = plugins.TASKS.get("imdb").profiles["tiny"]["algs"]["supervised"]["training_args"]
    monkeypatch.setitem(training_args, "save_steps", 3)
    assert keys() == before  # how often a checkpoint is saved changes nothing fitted
    monkeypatch.setitem(training_args, "num_train_epochs", 2)
    after = keys()
    assert after["supervised+ppo"] != before["supervised+ppo"]
    assert after["supervised"] != before["supervised"]  # its own config holds them
    assert after["ppo"] == before["ppo"]
    chain, alone = (s for s in build_specs(["imdb"], ["supervised+ppo", "ppo"], [0], "tiny"))
    assert chain.recorded_config[WARM_START]["training_args"]["num_train_epochs"] == 2  # recorded too
    assert WARM_START not in alone.recorded_config and alone.recorded_config == alone.config.to_dict()
    assert recorded_run_config(chain.recorded_config) == chain.config  # what `grue export` reads back
