"""ROUGE-L of one text against one reference exactly as py-rouge 1.1 scores it (RL4LMs's ``rouge_l_max``).

RL4LMs builds ``rouge.Rouge(metrics=["rouge-l"], **args)`` from the PyPI package ``py-rouge`` and calls it
once per reference. py-rouge itself cannot be imported on current Pythons (it needs ``pkg_resources``,
gone from setuptools, and nltk's punkt data, not available offline), so this module recomputes what it
computes, with its own WordNet stemming tables read from the installed package. Its quirks are kept because
they are RL4LMs's numbers:

- texts are cut into sentences at newlines, truncated (``limit_length``, ``length_limit`` in ``words`` or
  ``bytes``; a limit of 0 means none), lowercased, and every character but ASCII letters and digits
  becomes a space; tokens of more than 3 characters are stemmed (``stemming``);
- ROUGE-L is the summary-level union LCS; a reference token's hits are capped by the hypothesis's count
  of it only (py-rouge decrements the reference's count under the token's position, not the token);
- ``weight_factor`` (meant for ROUGE-W) still takes the ``1/weight_factor`` power of precision and recall;
- F = P * R / ((1 - alpha) * P + alpha * R).
"""

from __future__ import annotations

import functools
import importlib.util
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from grue_bench.errors import MissingAssetError

PY_ROUGE = "py-rouge==1.1"
LengthLimitType = Literal["words", "bytes"]
"""What py-rouge counts to limit a text's length."""
_NON_ALPHANUMERIC = re.compile("[^A-Za-z0-9]")
_STEM_TABLES = ("wordnet_key_value.txt", "wordnet_key_value_special_cases.txt")
_CANNOT, _CANNOT_KEPT = re.compile("cannot"), re.compile("_cannot_")  # keeps nltk from splitting it


@functools.cache
def _wordnet_stems() -> dict[str, str]:
    """py-rouge's word -> stem tables (its WordNet exceptions and the perl ROUGE's special cases)."""
    spec = importlib.util.find_spec("rouge")  # finds the folder without running py-rouge's imports
    folders = list(spec.submodule_search_locations or []) if spec else []
    files = [Path(folders[0], name) for name in _STEM_TABLES] if folders else []
    if not files or not all(f.is_file() for f in files):
        raise MissingAssetError(
            "rouge_l_max stems words with py-rouge's WordNet tables, which are not installed",
            key="rouge_l_max",
            fix=f"pip install {PY_ROUGE}",
        )
    lines = (line.strip() for f in files for line in f.read_text(encoding="utf-8").splitlines())
    return dict(line.split("|") for line in lines if line)


@functools.cache
def _tools() -> tuple[object, object]:
    """nltk's tokenizer (what ``word_tokenize`` applies to punctuation-free text) and the original Porter."""
    from nltk.stem.porter import PorterStemmer
    from nltk.tokenize import NLTKWordTokenizer

    return NLTKWordTokenizer(), PorterStemmer(PorterStemmer.ORIGINAL_ALGORITHM)


@dataclass(frozen=True)
class PyRougeL:
    """py-rouge's ROUGE-L settings; ``f_score`` is ``get_scores(text, [reference])["rouge-l"]["f"]``."""

    limit_length: bool = True
    length_limit: int = 665
    length_limit_type: LengthLimitType = "bytes"
    stemming: bool = True
    alpha: float = 0.5
    weight_factor: float = 1.0

    def f_score(self, hypothesis: str, reference: str) -> float:
        """ROUGE-L F of ``hypothesis`` against one ``reference``."""
        hits, hypothesis_length, reference_length = _union_lcs_hits(
            self._sentences(hypothesis), self._sentences(reference)
        )
        precision = hits / hypothesis_length if hypothesis_length else 0.0
        recall = hits / reference_length if reference_length else 0.0
        if self.weight_factor != 1.0:
            precision, recall = precision ** (1 / self.weight_factor), recall ** (1 / self.weight_factor)
        if precision == 0.0 or recall == 0.0:
            return 0.0
        return precision * recall / ((1 - self.alpha) * precision + self.alpha * recall)

    def _sentences(self, text: str) -> list[list[str]]:
        """Tokens of each newline-separated sentence, truncated, cleaned and stemmed as py-rouge does."""
        sentences = text.split("\n")
        if self.limit_length and self.length_limit != 0:
            sentences = self._truncated(sentences)
        return [self._tokens(sentence) for sentence in sentences]

    def _truncated(self, sentences: list[str]) -> list[str]:
        """The sentences up to ``length_limit`` words or characters (py-rouge's "bytes" are characters)."""
        kept: list[str] = []
        used = 0
        by_words = self.length_limit_type == "words"
        join = " ".join if by_words else "".join
        for sentence in sentences:
            units: list[str] | str = sentence.split() if by_words else sentence.strip()
            if used + len(units) >= self.length_limit:
                kept.append(join(units[: self.length_limit - used]))
                break
            kept.append(join(units))
            used += len(units)
        return kept

    def _tokens(self, sentence: str) -> list[str]:
        tokenizer, stemmer = _tools()
        cleaned = _CANNOT.sub("_cannot_", _NON_ALPHANUMERIC.sub(" ", sentence.lower()).strip())
        tokens = tokenizer.tokenize(cleaned)
        if self.stemming:
            stems = _wordnet_stems()
            tokens = [(stems[t] if t in stems else stemmer.stem(t)) if len(t) > 3 else t for t in tokens]
        return _CANNOT_KEPT.sub("cannot", " ".join(tokens)).split()


def _union_lcs_hits(hypothesis: list[list[str]], reference: list[list[str]]) -> tuple[int, int, int]:
    """(hits, hypothesis tokens, reference tokens) of py-rouge's summary-level ROUGE-L.

    Each reference sentence's tokens on an LCS with any hypothesis sentence are hits, as long as the
    hypothesis still has an unused occurrence of that token.
    """
    unused = Counter(token for sentence in hypothesis for token in sentence)
    hits = 0
    for reference_sentence in reference:
        on_lcs = [False] * len(reference_sentence)
        for hypothesis_sentence in hypothesis:
            _mark_lcs(reference_sentence, hypothesis_sentence, on_lcs)
        for token, hit in zip(reference_sentence, on_lcs, strict=True):
            if hit and unused[token] > 0:
                unused[token] -= 1
                hits += 1
    return hits, sum(map(len, hypothesis)), sum(map(len, reference))


def _mark_lcs(x: list[str], y: list[str], on_lcs: list[bool]) -> None:
    """Mark the tokens of ``x`` on one LCS with ``y``, breaking ties upwards first as py-rouge does."""
    lengths = [[0] * (len(y) + 1) for _ in range(len(x) + 1)]
    for i, a in enumerate(x, 1):
        for j, b in enumerate(y, 1):
            lengths[i][j] = lengths[i - 1][j - 1] + 1 if a == b else max(lengths[i - 1][j], lengths[i][j - 1])
    i, j = len(x), len(y)
    while i and j:
        if x[i - 1] == y[j - 1]:
            i, j = i - 1, j - 1
            on_lcs[i] = True
        elif lengths[i - 1][j] >= lengths[i][j - 1]:
            i -= 1
        else:
            j -= 1
