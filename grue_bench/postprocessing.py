"""Post-processors of generated texts, applied before the evaluation metrics score them.

RL4LMs's supervised configs name one in ``alg.generation_kwargs.post_processing_fn``; GRUE Bench
also takes it in ``train_evaluation.generation_kwargs``. Each is a ``str -> str`` function
registered in ``plugins.POST_PROCESSORS``.
"""

from __future__ import annotations

from collections.abc import Sequence

from grue_bench import plugins
from grue_bench.metrics.lexical import split_into_sentences
from grue_bench.rl.hparams import PostProcessorRef


def three_sentence_summary(text: str) -> str:
    """The first three sentences, one per line: CNN/DailyMail's references are three highlights,
    so a longer summary would be scored on text the references never cover."""
    return "\n".join(split_into_sentences(text)[:3])


def post_process(processor: PostProcessorRef | None, texts: Sequence[str]) -> list[str]:
    """``texts`` through the named post-processor (unchanged without one)."""

    if processor is None:
        return list(texts)
    function = plugins.POST_PROCESSORS.get(processor.id)
    return [function(text) for text in texts]
