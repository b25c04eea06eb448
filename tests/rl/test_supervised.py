"""Supervised fine-tuning lowers the validation loss (causal and seq2seq), and encodes labels right."""

import pytest
import torch

from grue_bench.data import Sample
from grue_bench.rl.hparams import SupervisedArgs
from grue_bench.rl.supervised import IGNORE, Supervised, encode_pairs

from .tiny_lm import tiny_causal, tiny_seq2seq, word_tokenizer


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


@pytest.mark.parametrize("model_type", ["causal", "seq2seq"])
def test_supervised_training_lowers_the_validation_loss(model_type):
    tokenizer = word_tokenizer()
    lm = (tiny_causal if model_type == "causal" else tiny_seq2seq)(tokenizer)
    args = SupervisedArgs(per_device_train_batch_size=16, num_train_epochs=8, learning_rate=3e-3)
    trainer = Supervised(lm, tokenizer, model_type, args, max_prompt_length=8, max_target_length=6)
    validation = _samples(40, 1000)
    before = trainer.validation_loss(validation)
    losses = trainer.fit(_samples(160, 0), seed=0)
    after = trainer.validation_loss(validation)
    assert len(losses) == 8 * 10
    assert after < 0.5 * before


def test_causal_labels_cover_only_the_reference_and_eos():
    tokenizer = word_tokenizer()
    batch = encode_pairs(tokenizer, "causal", [("1 2", "3 4"), ("5", "6")], max_prompt=8, max_target=6)
    ids, labels = batch["input_ids"], batch["labels"]
    eos, pad = tokenizer.eos_token_id, tokenizer.pad_token_id
    three, four = tokenizer.convert_tokens_to_ids(["3", "4"])
    assert labels[0].tolist() == [IGNORE, IGNORE, three, four, eos]
    assert ids[1].tolist()[-1] == pad and labels[1].tolist()[-1] == IGNORE
    assert torch.equal(batch["attention_mask"][1], torch.tensor([1, 1, 1, 0, 0]))
