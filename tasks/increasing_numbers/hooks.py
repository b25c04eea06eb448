"""Increasing numbers: the tiny base LM's generated corpus (the task has no data).

The corpus gives the base LM the vocabulary the reward looks for without solving the task: the
number texts are mostly unsorted, so RL must learn to count upwards.
"""

import random

WORDS = ("the", "and", "a", "of", "to", "is", "then", "number", "numbers", "next", "count", "more")


def corpus(n_texts: int = 2000, seed: int = 0) -> list[str]:
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
                tokens.append(rng.choice(WORDS))
            tokens.append(str(number))
        texts.append(" ".join(tokens))
    return texts
