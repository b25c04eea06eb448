"""Language-model corpora for the tiny base LMs: a task's training text, or generated text.

The synthetic tasks have no data. Their corpora give the base LM the vocabulary the reward
looks for without solving the task: number texts are mostly unsorted (RL must learn to
count upwards), and only a minority of sentences holds a date (RL must make dates common).
"""

from __future__ import annotations

import random
from collections.abc import Callable

from grue_bench.errors import GrueError

_WORDS = ("the", "and", "a", "of", "to", "is", "then", "number", "numbers", "next", "count", "more")
_SUBJECTS = (
    "The meeting",
    "Our trip",
    "The concert",
    "My appointment",
    "The deadline",
    "Her birthday party",
    "The report",
    "The new store",
    "His flight",
    "The football match",
    "The workshop",
    "The exam",
)
_VERBS = ("is", "was", "will be", "has been moved", "is planned", "was announced", "might be")
_ENDINGS = (
    "in the morning",
    "after lunch",
    "next week",
    "at the old library",
    "in the city center",
    "with the whole team",
    "as usual",
    "without any delay",
    "for the second time",
    "in the garden",
    "by the river",
    "at short notice",
)
_CHATTER = (
    "I think it went well.",
    "Everyone was very happy.",
    "It rained all day.",
    "We had coffee first.",
    "The room was too small.",
    "Nobody knew the answer.",
    "They walked home together.",
    "The food was great.",
    "She read a long book.",
    "He forgot his keys again.",
)


def increasing_numbers_corpus(n_texts: int = 2000, seed: int = 0) -> list[str]:
    """Texts of small integers, mostly out of order, with a few common words mixed in.

    Like a pretrained LM that has seen some counting, the base LM should know increasing runs
    without preferring them: half the texts are random, 40% open with a short increasing run
    that then breaks off, 10% are sorted. RL has to make long runs the norm.
    """
    rng = random.Random(seed)
    texts = []
    for _ in range(n_texts):
        length = rng.randint(6, 20)
        numbers = [rng.randint(0, 99) for _ in range(length)]
        kind = rng.random()
        if kind < 0.1:
            numbers.sort()
        elif kind < 0.5:
            run = rng.randint(2, min(8, length))
            numbers[:run] = sorted(rng.sample(range(100), run))
        tokens: list[str] = []
        for number in numbers:
            if rng.random() < 0.1:
                tokens.append(rng.choice(_WORDS))
            tokens.append(str(number))
        texts.append(" ".join(tokens))
    return texts


def _date(rng: random.Random) -> str:
    """An ISO date (YYYY-MM-DD), the form RL4LMs's ``sentences_with_dates`` reward counts."""
    year, month, day = rng.randint(1990, 2030), rng.randint(1, 12), rng.randint(1, 28)
    return f"{year}-{month:02d}-{day:02d}"


def dates_corpus(n_texts: int = 2000, seed: int = 0, date_fraction: float = 0.15) -> list[str]:
    """Short sentences; about ``date_fraction`` of them hold an ISO date such as 2021-05-05."""
    rng = random.Random(seed)
    texts = []
    for _ in range(n_texts):
        subject, verb, ending = rng.choice(_SUBJECTS), rng.choice(_VERBS), rng.choice(_ENDINGS)
        if rng.random() < date_fraction:
            sentence = f"{subject} {verb} on {_date(rng)} {ending}."
        else:
            sentence = f"{subject} {verb} {ending}."
        if rng.random() < 0.5:
            sentence = f"{sentence} {rng.choice(_CHATTER)}"
        texts.append(sentence)
    return texts


SYNTHETIC_CORPORA: dict[str, Callable[[], list[str]]] = {
    "increasing_numbers": increasing_numbers_corpus,
    "dates": dates_corpus,
}
"""Generated corpora for the tasks that have no data files."""


def task_corpus(task_id: str) -> list[str]:
    """LM pretraining texts for a task: its train prompts and references, or a generated corpus."""
    if task_id in SYNTHETIC_CORPORA:
        return SYNTHETIC_CORPORA[task_id]()
    from grue_bench import plugins
    from grue_bench.datapools import TaskPool

    if plugins.TASKS.get(task_id).data is None:
        raise GrueError(
            f"task '{task_id}' has neither data files nor a synthetic corpus to pretrain a tiny LM on",
            key="corpus_id",
            fix="pass corpus=<function returning texts> to load_base_lm, or use profile small/paper",
        )
    pool = TaskPool.prepare("train", task=task_id)
    prompts = [sample.prompt_or_input_text for sample in pool]
    references = [reference for sample in pool for reference in sample.references]
    return [text for text in (*prompts, *references) if text.strip()]
