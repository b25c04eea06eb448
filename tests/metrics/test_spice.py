"""SPICE: the missing CoreNLP jars and Java are reported before any computation."""

from pathlib import Path

import pytest

from grue_bench.errors import MissingAssetError
from grue_bench.metrics import spice
from grue_bench.metrics.spice import CORENLP_JARS, Spice, require_spice_assets, spice_dir


def test_spice_dir_is_pycocoevalcaps_spice_folder():
    assert (spice_dir() / "spice-1.0.jar").is_file()


def test_missing_corenlp_jars_are_named_with_where_to_put_them(tmp_path: Path):
    (tmp_path / "spice-1.0.jar").touch()
    with pytest.raises(MissingAssetError) as error:
        require_spice_assets(tmp_path)
    message = str(error.value)
    assert "stanford-corenlp-3.6.0.jar" in message and "stanford-corenlp-3.6.0-models.jar" in message
    assert str(tmp_path / "lib") in message


def test_spice_refuses_to_start_without_its_jars(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(spice, "spice_dir", lambda: tmp_path)
    with pytest.raises(MissingAssetError, match=r"spice-1\.0\.jar.*stanford-corenlp-3\.6\.0\.jar"):
        Spice()


def test_java_is_required_once_the_jars_are_there(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    (tmp_path / "lib").mkdir()
    for name in ("spice-1.0.jar", *(f"lib/{jar}" for jar in CORENLP_JARS)):
        (tmp_path / name).touch()
    monkeypatch.setattr(spice, "spice_dir", lambda: tmp_path)
    Spice()  # all files present: no error
    monkeypatch.setattr(spice.shutil, "which", lambda name: None)
    with pytest.raises(MissingAssetError, match="Java"):
        Spice()
