"""Supervised fine-tuning lowers the validation loss (causal and seq2seq), and encodes labels right."""

import json
import random

import pytest
import torch
from conftest import NEEDS_NATIVE_BF16

from grue_bench.data import Sample
from grue_bench.rl.hparams import SupervisedArgs
from grue_bench.rl.policy import causal_position_ids
from grue_bench.rl.precision import Precision
from grue_bench.rl.supervised import IGNORE, Supervised, causal_loss, encode_pairs
from grue_bench.rl.trainer import Callback, Trainer

from .tiny_lm import tiny_causal, tiny_seq2seq, word_tokenizer


class Reports(Callback):
    """(optimizer step, loss) of every reported logging period."""

    def __init__(self, reports: list) -> None:
        self.reports = reports

    def on_iteration_end(self, trainer, stats):
        if "train/loss" in stats:
            self.reports.append((trainer.iteration, stats["train/loss"]))


class Pauses(Callback):
    """The optimizer step at which each ``step`` of the fit returned."""

    def __init__(self, pauses: list) -> None:
        self.pauses = pauses

    def on_iteration_end(self, trainer, stats):
        self.pauses.append(trainer.iteration)


def fit(stage: Supervised, samples, *callbacks) -> list[float]:
    """A whole fit in the one loop; the loss of every batch."""
    Trainer(stage, samples, random.Random(0), callbacks).fit(stage.n_steps(samples))
    return stage.losses


def _samples(n, offset):
    # prompt "a b" -> reference "b+1 b+2 b+3": a mapping the model can only know by training
    return [
        Sample(
            id=str(i),
            prompt_or_input_text=f"{i % 10} {i % 7}",
            references=[" ".join(str((i % 7) + k) for k in (1, 2, 3))],
        )
        for i in range(offset, offset + n)
    ]


@pytest.mark.parametrize("bf16", [False, pytest.param(True, marks=NEEDS_NATIVE_BF16)])
@pytest.mark.parametrize("model_type", ["causal", "seq2seq"])
def test_supervised_training_lowers_the_validation_loss(model_type, bf16):
    tokenizer = word_tokenizer()
    lm = (tiny_causal if model_type == "causal" else tiny_seq2seq)(tokenizer)
    args = SupervisedArgs(per_device_train_batch_size=16, num_train_epochs=8, learning_rate=3e-3, bf16=bf16)
    trainer = Supervised(lm, tokenizer, model_type, args, max_prompt_length=8, max_target_length=6)
    validation = _samples(40, 1000)
    before = trainer.validation_loss(validation)
    losses = fit(trainer, _samples(160, 0))
    after = trainer.validation_loss(validation)
    assert len(losses) == 8 * 10
    assert after < 0.5 * before
    assert {param.dtype for param in trainer.model.parameters()} == {torch.float32}  # the master weights


def test_prompts_are_cut_on_their_side_targets_on_the_right_and_the_tokenizer_keeps_its_own():
    tokenizer = word_tokenizer()
    for own in ("left", "right"):
        tokenizer.truncation_side = own
        batch = encode_pairs(tokenizer, "causal", [("1 2 3 4", "5 6 7 8")], max_prompt=2, max_target=3)
        tokens = tokenizer.convert_ids_to_tokens(batch["input_ids"][0].tolist())
        assert tokens == ["3", "4", "5", "6", tokenizer.eos_token]  # the prompt's end, the target's start
        assert tokenizer.truncation_side == own


def test_causal_labels_cover_only_the_reference_and_eos():
    tokenizer = word_tokenizer()
    batch = encode_pairs(tokenizer, "causal", [("1 2", "3 4"), ("5", "6")], max_prompt=8, max_target=6)
    ids, labels = batch["input_ids"], batch["labels"]
    eos, pad = tokenizer.eos_token_id, tokenizer.pad_token_id
    three, four = tokenizer.convert_tokens_to_ids(["3", "4"])
    assert labels[0].tolist() == [IGNORE, IGNORE, three, four, eos]
    # padded on the left, so that every reference ends in the last column
    assert ids[1].tolist()[:2] == [pad, pad] and labels[1].tolist()[:3] == [IGNORE] * 3
    assert torch.equal(batch["attention_mask"][1], torch.tensor([0, 0, 1, 1, 1]))


@pytest.mark.parametrize("bf16", [False, pytest.param(True, marks=NEEDS_NATIVE_BF16)])
def test_the_causal_loss_runs_the_lm_head_on_the_reference_columns_alone_and_equals_the_full_one(bf16):
    """Prompts of 1 to 12 words and references of 1 to 4: the loss with the LM head on the last
    columns only is the Hugging Face loss over every column, and each row's loss is what it is
    unpadded (the left padding and its positions change nothing)."""
    tokenizer = word_tokenizer()
    lm = tiny_causal(tokenizer).eval()
    rng = random.Random(0)
    pairs = [
        (
            " ".join(str(rng.randrange(10)) for _ in range(rng.randint(1, 12))),
            " ".join(str(rng.randrange(10)) for _ in range(rng.randint(1, 4))),
        )
        for _ in range(8)
    ]
    batch = encode_pairs(tokenizer, "causal", pairs, max_prompt=16, max_target=6)
    precision = Precision.from_flags(bf16, False, torch.device("cpu"), "alg.args.bf16")
    heads = []
    head = lm.get_output_embeddings()
    hook = head.register_forward_hook(lambda module, args, out: heads.append(out.size(1)))
    with torch.no_grad():
        ours = causal_loss(lm, batch, precision)
        hook.remove()
        with precision.autocast():
            full = lm(**batch, position_ids=causal_position_ids(batch["attention_mask"])).loss
        # the unpadded rows' losses, weighted by their reference tokens
        rows = [encode_pairs(tokenizer, "causal", [pair], max_prompt=16, max_target=6) for pair in pairs]
        with precision.autocast():
            alone = [lm(**row).loss * (row["labels"] != IGNORE).sum() for row in rows]
        tokens = (batch["labels"] != IGNORE).sum()
    first = int((batch["labels"] != IGNORE).any(dim=0).nonzero()[0])
    assert heads == [batch["labels"].size(1) - first + 1] and heads[0] < batch["labels"].size(1)
    tolerance = 1e-2 if bf16 else 1e-6
    assert float(ours) == pytest.approx(float(full), abs=tolerance)
    assert float(ours) == pytest.approx(float(sum(alone) / tokens), abs=tolerance)


@pytest.mark.parametrize("save_steps", [None, 2])
def test_every_logging_steps_optimizer_steps_the_mean_loss_since_the_last_report_is_handed_on(save_steps):
    """RL4LMs's supervised trainer evaluates on log (HF Trainer's ``logging_steps``), counted in
    optimizer steps: with 2 batches per step, a report every 3 steps covers 6 batches. The fit
    also pauses every ``save_steps`` (for a checkpoint) without a report: the reports are the same."""
    tokenizer = word_tokenizer()
    args = SupervisedArgs(
        per_device_train_batch_size=16,
        num_train_epochs=2,
        gradient_accumulation_steps=2,
        logging_steps=3,
        save_steps=save_steps,
    )
    trainer = Supervised(tiny_causal(tokenizer), tokenizer, "causal", args, 8, 6)
    reports, pauses = [], []
    losses = fit(trainer, _samples(160, 0), Reports(reports), Pauses(pauses))
    assert trainer.iteration == trainer.n_steps(_samples(160, 0)) == 10  # 10 batches an epoch, 2 a step
    assert [step for step, _ in reports] == [3, 6, 9]  # the last, shorter period (step 10) is not
    assert [loss for _, loss in reports] == pytest.approx([sum(losses[k : k + 6]) / 6 for k in (0, 6, 12)])
    assert pauses == ([3, 6, 9, 10] if save_steps is None else [2, 3, 4, 6, 8, 9, 10])


def test_a_supervised_run_is_evaluated_every_logging_steps_and_last_at_its_final_step(tmp_path):
    """Its iterations are optimizer steps: validation at each logged step, then the final scores."""
    from grue_bench.resolve.grid import build_specs
    from grue_bench.runner.executor import GridExecutor
    from grue_bench.runner.warm_start import FIT_FILE, FOLDER, RECORD_FILE
    from grue_bench.store import Store

    overrides = [
        "alg.training_args.num_train_epochs=1",
        "alg.training_args.per_device_train_batch_size=64",
        "alg.training_args.logging_steps=2",
        "alg.training_args.save_steps=1",  # a checkpoint at every step, and no other row
        "datapool.id=commongen",
        "datapool.args.max_samples=256",
        "train_evaluation.eval_batch_size=200",
        "train_evaluation.metrics=[{id: rouge}]",
    ]
    specs = build_specs(["commongen"], ["supervised"], [0], "tiny", overrides=overrides)
    with Store(tmp_path / "s.sqlite") as store:
        GridExecutor(store, tmp_path / "runs").run(specs)
        (run,) = store.runs()
        validation = store.curves(run.id, "validation")
        train = store.curves(run.id, "train")["train/loss"]
    assert run.status == "finished", run.error
    steps = sorted({iteration for curve in validation.values() for iteration, _ in curve})
    final = steps[-1]  # the optimizer steps of one epoch over the sampled references
    assert final >= 4
    assert steps == sorted({*range(2, final + 1, 2), final})
    assert [iteration for iteration, _ in train] == list(range(2, final + 1, 2))
    run_folder = tmp_path / "runs" / "commongen" / "supervised"
    saved = [path.parent.name for path in run_folder.rglob("config.json")]
    assert saved == ["model"]  # one checkpoint kept: any save_total_limit holds
    shared = list((tmp_path / "runs" / "commongen" / FOLDER).iterdir())
    record = json.loads(next(run_folder.rglob(RECORD_FILE)).read_text())
    assert [fit.name for fit in shared] == [record["key"]]
    assert (shared[0] / FIT_FILE).is_file()  # and its fit, for the chains of its seed (warm_start.py)


def test_gradient_checkpointing_gives_the_same_loss_and_gradients():
    """``gradient_checkpointing`` recomputes the layers' activations in the backward pass instead of
    keeping them: the same loss and gradients, in float32 to rounding."""
    tokenizer = word_tokenizer()
    pairs = [(s.prompt_or_input_text, s.references[0]) for s in _samples(16, 0)]
    batch = encode_pairs(tokenizer, "causal", pairs, max_prompt=8, max_target=6)
    grads = []
    for checkpointing in (False, True):
        args = SupervisedArgs(gradient_checkpointing=checkpointing)
        stage = Supervised(tiny_causal(tokenizer), tokenizer, "causal", args, 8, 6)
        stage.lm.train()
        loss = stage._loss(batch)
        loss.backward()
        grads.append((float(loss), {n: p.grad.clone() for n, p in stage.model.named_parameters()}))
    assert stage.model.is_activation_checkpointing
    (loss_kept, kept), (loss_recomputed, recomputed) = grads
    assert loss_recomputed == pytest.approx(loss_kept, abs=1e-6)
    assert kept.keys() == recomputed.keys()
    for name in kept:
        torch.testing.assert_close(recomputed[name], kept[name], atol=1e-6, rtol=1e-5, msg=name)
