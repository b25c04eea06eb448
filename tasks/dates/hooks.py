"""Dates: the tiny base LM's generated corpus (the task has no data).

The corpus gives the base LM the vocabulary the reward looks for without solving the task: only
a minority of its sentences holds a date, so RL must make dates common.
"""

import random

SUBJECTS = (
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
VERBS = ("is", "was", "will be", "has been moved", "is planned", "was announced", "might be")
ENDINGS = (
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
CHATTER = (
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


def iso_date(rng: random.Random) -> str:
    """An ISO date (YYYY-MM-DD), the form RL4LMs's ``sentences_with_dates`` reward counts."""
    year, month, day = rng.randint(1990, 2030), rng.randint(1, 12), rng.randint(1, 28)
    return f"{year}-{month:02d}-{day:02d}"


def corpus(n_texts: int = 2000, seed: int = 0, date_fraction: float = 0.15) -> list[str]:
    """Short sentences; about ``date_fraction`` of them hold an ISO date such as 2021-05-05."""
    rng = random.Random(seed)
    texts = []
    for _ in range(n_texts):
        subject, verb, ending = rng.choice(SUBJECTS), rng.choice(VERBS), rng.choice(ENDINGS)
        if rng.random() < date_fraction:
            sentence = f"{subject} {verb} on {iso_date(rng)} {ending}."
        else:
            sentence = f"{subject} {verb} {ending}."
        if rng.random() < 0.5:
            sentence = f"{sentence} {rng.choice(CHATTER)}"
        texts.append(sentence)
    return texts
