"""The '* compiling kernels' line of a first training run, and how crfkit.training.jitcache tells
from Numba's on-disk cache index whether a kernel is compiled already."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from crfkit.structures import chain, named
from crfkit.structures.base import Choice
from crfkit.training import jitcache
from tests.helpers import ROOT, run

needs_order2 = pytest.mark.skipif(
    not named("order2").claims(Choice(None, None, {"order": 2})),
    reason="the second order does not implement the structure interface in this tree")

NOTE = re.compile(r"\* compiling kernels \(first run only, about \d+ s\)")


def load_module(path: Path, name: str):
    """Import the file at ``path`` as a new module (a new process would see it so)."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_is_cached_reads_numbas_index_for_this_source(tmp_path):
    source = tmp_path / "jitted.py"
    source.write_text("from numba import njit\n\n\n@njit(cache=True)\ndef twice(x):\n"
                      "    return 2 * x\n")
    first = load_module(source, "jitted_first")
    assert not jitcache.is_cached(first.twice)
    assert first.twice(21) == 42  # compiled, and saved to the cache
    assert jitcache.is_cached(first.twice)
    assert jitcache.is_cached(load_module(source, "jitted_again").twice)
    source.write_text(source.read_text() + "# edited: Numba ignores the old cache entries\n")
    assert not jitcache.is_cached(load_module(source, "jitted_edited").twice)
    assert jitcache.is_cached(len)  # not a Numba dispatcher: never announce a compilation


def test_compile_seconds_adds_up_the_groups_still_to_compile(monkeypatch):
    monkeypatch.setattr(jitcache, "is_cached", lambda dispatcher: False)
    assert jitcache.compile_seconds("l-bfgs", "crf", False) == jitcache.COUNTING + chain.CRF
    assert jitcache.compile_seconds("l-bfgs", "memm", True) == \
        jitcache.COUNTING + chain.LOCAL + chain.DEVEL
    assert jitcache.compile_seconds("sgd-l1", "crf", False) == jitcache.COUNTING + chain.SGD
    assert jitcache.compile_seconds("ap", "maxent", False) == \
        jitcache.COUNTING + chain.PERCEPTRON
    monkeypatch.setattr(jitcache, "is_cached", lambda dispatcher: True)
    assert jitcache.compile_seconds("l-bfgs", "crf", True) == 0


def test_uncompiled_counting_kernels_alone_are_not_announced(monkeypatch):
    """A small corpus is counted with numpy, so a run that finds only the counting kernels
    uncompiled (every earlier run was small) compiles nothing."""
    from crfkit.features import intern

    counting = {intern.intern_rows, intern.observed_pairs}
    monkeypatch.setattr(jitcache, "is_cached", lambda dispatcher: dispatcher not in counting)
    assert jitcache.compile_seconds("l-bfgs", "crf", False) == 0


def test_uncompiled_counting_kernels_are_announced_for_a_large_corpus(monkeypatch):
    """A corpus too large for numpy's counting compiles the counting kernels: the first
    large corpus after small ones announces them alone, a small one still does not."""
    from crfkit.features import intern
    from crfkit.features.small_counts import SMALL_CORPUS_TOKENS

    counting = {intern.intern_rows, intern.observed_pairs}
    monkeypatch.setattr(jitcache, "is_cached", lambda dispatcher: dispatcher not in counting)
    assert jitcache.compile_seconds("l-bfgs", "crf", False, n_tokens=SMALL_CORPUS_TOKENS) == 0
    assert jitcache.compile_seconds("l-bfgs", "crf", False,
                                    n_tokens=SMALL_CORPUS_TOKENS + 1) == jitcache.COUNTING
    monkeypatch.setattr(jitcache, "is_cached", lambda dispatcher: True)
    assert jitcache.compile_seconds("l-bfgs", "crf", False, n_tokens=10 ** 7) == 0


@pytest.mark.parametrize("options", [(), ("-T", "memm"), ("-a", "sgd-l1"), ("-a", "ap"),
                                     ("-d", "devel")])
def test_train_says_it_compiles_before_a_first_run_only(options, address_sample, tmp_path,
                                                         monkeypatch):
    options = tuple(str(address_sample["test"]) if o == "devel" else o for o in options)
    args = ("train", *options, "-i", "2", "-p", ROOT / "patterns/address.pat",
            address_sample["train"], tmp_path / "m.model")
    assert run(*args).exit_code == 0  # whatever the cache held, it holds these kernels now
    warm = run(*args)
    assert warm.exit_code == 0, warm.stderr
    assert "compiling" not in warm.stderr
    monkeypatch.setattr(jitcache, "is_cached", lambda dispatcher: False)  # an empty cache
    cold = run(*args)
    assert cold.exit_code == 0, cold.stderr
    assert NOTE.fullmatch(cold.stderr.splitlines()[0]), cold.stderr  # before anything else
    assert sum("compiling" in line for line in cold.stderr.splitlines()) == 1
    quiet = run(args[0], "-q", *args[1:])
    assert quiet.exit_code == 0 and quiet.stderr == ""


@needs_order2
def test_second_order_training_checks_the_order2_kernels(monkeypatch):
    checked = []

    def cached(dispatcher):
        checked.append(dispatcher.__name__)
        return dispatcher.__name__ != "loss_block_lanes"  # only the lane kernel is missing

    monkeypatch.setattr(jitcache, "is_cached", cached)
    order2 = named("order2")
    assert jitcache.compile_seconds("l-bfgs", "crf", False, order2) == 0  # order2 will do
    assert "loss_block_lanes" in checked and "load_transitions" not in checked  # not first order
    monkeypatch.setattr(jitcache, "is_cached", lambda dispatcher: False)
    lattice = next(seconds for seconds, _ in order2.kernels("l-bfgs", "crf", False))
    assert jitcache.compile_seconds("l-bfgs", "crf", True, order2) == \
        jitcache.COUNTING + lattice + chain.DEVEL


@needs_order2
def test_second_order_sgd_checks_its_epoch_kernel(monkeypatch):
    checked = []

    def cached(dispatcher):
        checked.append(dispatcher.__name__)
        return dispatcher.__name__ != "sgd_epoch2"

    monkeypatch.setattr(jitcache, "is_cached", cached)
    assert jitcache.compile_seconds("sgd-l1", "crf", False, named("order2")) == chain.SGD
    assert "sgd_epoch2" in checked and "loss_block_lanes" not in checked


def test_the_announced_time_follows_the_machines_load(monkeypatch):
    """Compiling runs on one thread: with 8 runnable threads on 2 cores it gets a quarter
    of a core, and takes four times as long as on an idle machine."""
    monkeypatch.setattr(jitcache.os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    monkeypatch.setattr(jitcache.os, "getloadavg", lambda: (8.0, 1.0, 1.0))
    assert jitcache.load_factor() == 4.0
    assert jitcache.compile_note(10) == "* compiling kernels (first run only, about 40 s)"
    monkeypatch.setattr(jitcache.os, "getloadavg", lambda: (0.5, 0.5, 0.5))
    assert jitcache.compile_note(10) == "* compiling kernels (first run only, about 10 s)"

    def unknown():
        raise OSError("no load average")

    monkeypatch.setattr(jitcache.os, "getloadavg", unknown)
    assert jitcache.load_factor() == 1.0


def test_label_and_tune_say_they_compile(address_sample, tmp_path, monkeypatch):
    from crfkit.features.patterns import read_patterns
    from crfkit.io.reader import read_sequences
    from crfkit.progress import Progress
    from crfkit.training.train import TrainOptions
    from crfkit.training.tune import Strength, TuneOptions, tune

    model = tmp_path / "m.model"
    assert run("train", "-q", "-i", "2", "-p", ROOT / "patterns/address.pat",
               address_sample["train"], model).exit_code == 0
    args = ("label", "-n", "2", "-m", model, address_sample["test"], tmp_path / "out.txt")
    assert run(*args).exit_code == 0
    assert "compiling" not in run(*args).stderr  # the decoder is cached now
    best_path = run("label", "-m", model, address_sample["test"], tmp_path / "out.txt")
    monkeypatch.setattr(jitcache, "is_cached", lambda dispatcher: False)  # an empty cache
    cold = run(*args)
    assert cold.exit_code == 0 and NOTE.fullmatch(cold.stderr.splitlines()[0]), cold.stderr
    assert run(*args[:1], "-q", *args[1:]).stderr == ""
    # the plain best path of a small input is numpy's: nothing to compile, nothing said
    assert run("label", "-m", model, address_sample["test"], tmp_path / "out.txt").stderr == \
        best_path.stderr
    import io

    stream = io.StringIO()
    sequences = list(read_sequences(address_sample["train"]))[:50]
    tune(read_patterns(ROOT / "patterns/address.pat"), sequences,
         TrainOptions(maxiter=1, nthread=1), [Strength(0.0, 1.0)], TuneOptions(likely=()),
         devel=sequences[:10], progress=Progress(stream))
    assert NOTE.fullmatch(stream.getvalue().splitlines()[0]), stream.getvalue()
