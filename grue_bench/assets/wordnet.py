"""WordNet 3.0 for nltk, built offline from Debian's ``wordnet-base`` files.

nltk's WordNet reader wants ``<nltk_data>/corpora/wordnet/`` with the dict files plus a
``lexnames`` file. Debian's package installs the dict files in /usr/share/wordnet but no
``lexnames``, so we copy the files into the project's cache and write ``lexnames`` ourselves.
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from grue_bench.errors import MissingAssetError
from grue_bench.paths import cache_dir

if TYPE_CHECKING:
    from nltk.corpus.reader import WordNetCorpusReader

logger = logging.getLogger(__name__)

DEBIAN_WORDNET_DIR = Path("/usr/share/wordnet")
"""Where Debian's ``wordnet-base`` package puts the WordNet 3.0 dict files."""

# The dict files nltk's reader opens for METEOR's synonym matching (index.sense is only
# read for sense keys and is not shipped by Debian).
DICT_FILES = (
    "cntlist.rev",
    *(f"{kind}.{pos}" for kind in ("index", "data") for pos in ("adj", "adv", "noun", "verb")),
    *(f"{pos}.exc" for pos in ("adj", "adv", "noun", "verb")),
)

# WordNet 3.0's 45 lexicographer files in file-number order (lexnames(5WN)).
LEXICOGRAPHER_FILES = (
    "adj.all", "adj.pert", "adv.all", "noun.Tops", "noun.act", "noun.animal", "noun.artifact",
    "noun.attribute", "noun.body", "noun.cognition", "noun.communication", "noun.event",
    "noun.feeling", "noun.food", "noun.group", "noun.location", "noun.motive", "noun.object",
    "noun.person", "noun.phenomenon", "noun.plant", "noun.possession", "noun.process",
    "noun.quantity", "noun.relation", "noun.shape", "noun.state", "noun.substance", "noun.time",
    "verb.body", "verb.change", "verb.cognition", "verb.communication", "verb.competition",
    "verb.consumption", "verb.contact", "verb.creation", "verb.emotion", "verb.motion",
    "verb.perception", "verb.possession", "verb.social", "verb.stative", "verb.weather", "adj.ppl",
)  # fmt: skip
SYNTACTIC_CATEGORY = {"noun": 1, "verb": 2, "adj": 3, "adv": 4}

HOW_TO_PROVIDE = (
    "install Debian's WordNet 3.0 files (`apt-get install wordnet-base`, or `make install`), "
    "or set NLTK_DATA to a folder holding corpora/wordnet/ (with lexnames)"
)


def _missing(folder: Path, absent: list[str]) -> MissingAssetError:
    shown = ", ".join(absent[:3]) + (", ..." if len(absent) > 3 else "")
    message = f"not found in {folder} (missing {shown})"
    return MissingAssetError(message, key="WordNet 3.0", fix=HOW_TO_PROVIDE)


def lexnames_text() -> str:
    """The ``lexnames`` file: ``NN<TAB>name<TAB>syntactic category`` for each of the 45 files."""
    lines = (
        f"{number:02d}\t{name}\t{SYNTACTIC_CATEGORY[name.split('.')[0]]}"
        for number, name in enumerate(LEXICOGRAPHER_FILES)
    )
    return "".join(line + "\n" for line in lines)


def missing_files(folder: Path, names: tuple[str, ...] = DICT_FILES) -> list[str]:
    """The names in ``names`` that ``folder`` lacks."""
    return [name for name in names if not (folder / name).is_file()]


def is_nltk_wordnet(folder: Path) -> bool:
    """Whether ``folder`` is a complete nltk WordNet corpus folder."""
    return not missing_files(folder, (*DICT_FILES, "lexnames"))


def build_nltk_data(source: Path | None = None, target: Path | None = None) -> Path:
    """Build ``<target>/corpora/wordnet`` from WordNet dict files in ``source``; return ``target``.

    Idempotent: files already copied (same size) are kept. ``source`` defaults to
    DEBIAN_WORDNET_DIR, ``target`` to ``<cache_dir>/nltk_data``.
    """
    source = source if source is not None else DEBIAN_WORDNET_DIR
    absent = missing_files(source)
    if absent:
        raise _missing(source, absent)
    target = target if target is not None else cache_dir() / "nltk_data"
    corpus = target / "corpora" / "wordnet"
    corpus.mkdir(parents=True, exist_ok=True)
    for name in DICT_FILES:
        src, dst = source / name, corpus / name
        # Copies, not symlinks: the cache keeps working if the Debian package is removed.
        if not dst.is_file() or dst.stat().st_size != src.stat().st_size:
            # Copy then rename, so a concurrent reader never sees half a file.
            tmp = dst.with_name(f".{name}.{os.getpid()}.tmp")
            shutil.copyfile(src, tmp)
            tmp.replace(dst)
    lexnames = corpus / "lexnames"
    if not lexnames.is_file() or lexnames.read_text() != lexnames_text():
        lexnames.write_text(lexnames_text())
    logger.debug("WordNet for nltk ready in %s", corpus)
    return target


def _ready_wordnet() -> Path | None:
    """A complete nltk WordNet corpus folder in NLTK_DATA or the cache, or None."""
    for root in os.environ.get("NLTK_DATA", "").split(os.pathsep):
        if root and is_nltk_wordnet(Path(root) / "corpora" / "wordnet"):
            return Path(root) / "corpora" / "wordnet"
    cached = cache_dir() / "nltk_data" / "corpora" / "wordnet"
    return cached if is_nltk_wordnet(cached) else None


def find_wordnet(source: Path | None = None) -> Path:
    """The nltk WordNet corpus folder: from NLTK_DATA if it has one, else built in the cache."""
    return _ready_wordnet() or build_nltk_data(source) / "corpora" / "wordnet"


def missing_wordnet(corpus: Path | None = None) -> MissingAssetError | None:
    """Why the nltk WordNet folder ``corpus`` is incomplete, or (``corpus`` None) why ``find_wordnet``
    would fail; None when nothing is missing. Builds nothing."""
    if corpus is not None:
        absent = missing_files(corpus, (*DICT_FILES, "lexnames"))
    elif _ready_wordnet() is not None:
        return None
    else:
        corpus, absent = DEBIAN_WORDNET_DIR, missing_files(DEBIAN_WORDNET_DIR)
    return _missing(corpus, absent) if absent else None


def load_wordnet(corpus: Path) -> WordNetCorpusReader:
    """An nltk WordNet reader on ``corpus`` (a ``<nltk_data>/corpora/wordnet`` folder)."""
    absent = missing_files(corpus, (*DICT_FILES, "lexnames"))
    if absent:
        raise _missing(corpus, absent)
    import warnings

    import nltk.data
    from nltk.corpus.reader import WordNetCorpusReader

    # nltk >= 3.9 refuses to open corpus files outside its data path, and the reader opens
    # data files lazily, so the folder must stay on the path (appended once, never removed).
    root = str(corpus.resolve())
    if root not in nltk.data.path:
        nltk.data.path.append(root)

    class EnglishWordNet(WordNetCorpusReader):
        """WordNet without the map to other WordNet versions (only multilingual OMW uses it).

        nltk builds that map from ``index.sense``, which Debian's wordnet-base does not ship.
        """

        def map_wn(self, version: str = "wordnet") -> None:
            return None

    with warnings.catch_warnings():
        # Open Multilingual WordNet is not needed for English METEOR.
        warnings.filterwarnings("ignore", message="The multilingual functions")
        return EnglishWordNet(str(corpus), None)


def main() -> int:
    """Build WordNet for nltk in the cache and print where it is.

    A missing WordNet is reported but not fatal (exit 0), like ``make system-deps``: ``make install``
    goes on without it, and METEOR raises the same error, with the fix, when it is used.
    """
    logging.basicConfig(level=logging.INFO)
    try:
        target = build_nltk_data()
    except MissingAssetError as error:
        print(f"warning: {error}", file=sys.stderr)
        return 0
    print(f"WordNet 3.0 for nltk: {target / 'corpora' / 'wordnet'} (NLTK_DATA={target})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
