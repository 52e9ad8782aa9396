"""The shipped pattern files and sample data: inside the package (so the wheel carries them),
found by name from any directory, and still at the checkout's root for the manual's
commands."""

from __future__ import annotations

import fnmatch
import sys

import pytest

from crfkit.io import shipped
from crfkit.model.model import Model
from tests.helpers import ROOT, one_error_line, run


def _package_data_globs() -> list[str]:
    tomllib = pytest.importorskip("tomllib") if sys.version_info >= (3, 11) else None
    if tomllib is None:
        pytest.skip("tomllib needs Python 3.11")
    with open(ROOT / "pyproject.toml", "rb") as handle:
        config = tomllib.load(handle)
    return config["tool"]["setuptools"]["package-data"]["crfkit"]


def test_the_wheel_lists_every_shipped_file():
    """Every pattern file and sample is package data of crfkit (what the wheel carries)."""
    globs = _package_data_globs()
    files = [*shipped.PATTERNS_DIR.iterdir(), *shipped.SAMPLES_DIR.iterdir()]
    assert len(files) >= 10
    for path in files:
        relative = path.relative_to(ROOT / "crfkit").as_posix()
        assert any(fnmatch.fnmatch(relative, g) for g in globs), relative


def test_the_checkout_root_still_has_them():
    assert (ROOT / "patterns" / "chunking.pat").read_bytes() == \
        (shipped.PATTERNS_DIR / "chunking.pat").read_bytes()
    assert (ROOT / "data" / "address-train.txt").is_file()


def test_names_resolve_from_any_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    chunking = str(shipped.PATTERNS_DIR / "chunking.pat")
    assert shipped.pattern_file("chunking") == chunking
    assert shipped.pattern_file("chunking.pat") == chunking
    assert shipped.pattern_file("nope") == "nope"
    assert shipped.pattern_file("sub/chunking") == "sub/chunking"  # a path stays a path
    (tmp_path / "chunking").write_text("u:%x[0,0]\n")
    assert shipped.pattern_file("chunking") == "chunking"  # a file of that name comes first


def test_train_and_patterns_take_a_shipped_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    listed = run("patterns", "--list")
    assert listed.exit_code == 0
    names = [line.split()[0] for line in listed.stdout.splitlines()[:-1]]
    assert sorted(names) == sorted(p.stem for p in shipped.PATTERNS_DIR.glob("*.pat"))
    assert run("patterns", "address").stdout == \
        run("patterns", str(shipped.PATTERNS_DIR / "address.pat")).stdout
    train = shipped.SAMPLES_DIR / "address-train.txt"
    assert run("train", "-q", "-i", "2", "-p", "address", train, "m.model").exit_code == 0
    assert Model.load(tmp_path / "m.model").info["pattern_file"] == \
        str(shipped.PATTERNS_DIR / "address.pat")
    one_error_line(run("train", "-p", "no-such-patterns", train, "m.model"),
                   "'no-such-patterns' does not exist")
