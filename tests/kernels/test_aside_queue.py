"""A first run's division of the compilation (crfkit.kernels.aside): the child, done
with its kernel, takes the queued kernels from the queue's end, and the training process
then loads them from the cache instead of compiling them; the loss kernel is set aside
before the runs it reads are built, with stand-ins of their types."""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path

import numpy as np
import pytest
from numba import typeof

from crfkit.features.patterns import parse_patterns
from crfkit.kernels import aside as aside_module
from crfkit.kernels import runs as runs_module
from crfkit.kernels.aside import compile_aside, compile_meanwhile
from crfkit.kernels.objective import Objective
from crfkit.kernels.runs import standin_runs
from crfkit.training.corpus import encode_training
from tests.helpers import random_corpus

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forks on Linux")

KERNELS = '''
from numba import njit

@njit(cache=True)
def first(x):
    return x.sum()

@njit(cache=True)
def queued_a(x):
    return x * 2.0

@njit(cache=True)
def queued_b(x):
    return x + 1.0
'''


@pytest.fixture
def kernels(tmp_path: Path, monkeypatch):
    """Kernels never compiled, in a module of their own on the path while the test runs
    (Numba finds a cached kernel's module by name), cached beside it."""
    name = f"queue_kernels_{tmp_path.name}"
    (tmp_path / f"{name}.py").write_text(KERNELS, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, name, raising=False)
    monkeypatch.setattr(aside_module, "may_fork", lambda: True)  # pools of earlier tests
    return importlib.import_module(name)


def test_the_child_compiles_the_queue_and_the_parent_loads_it(kernels):
    x = np.arange(3.0)
    compile_meanwhile([(kernels.queued_a, (x,)), (kernels.queued_b, (x,))])
    aside = compile_aside(kernels.first, (x,))
    assert aside is not None
    os.waitpid(aside.pid, 0)  # the child alone: it takes the whole queue
    aside.pid = 0
    aside.wait()
    for kernel in (kernels.queued_a, kernels.queued_b):  # loaded by the wait
        assert (typeof(x),) in kernel.overloads
    assert kernels.first(x) == 3.0
    assert list(kernels.queued_a(x)) == [0.0, 2.0, 4.0]
    assert list(kernels.queued_b(x)) == [1.0, 2.0, 3.0]
    for kernel in (kernels.first, kernels.queued_a, kernels.queued_b):
        assert sum(kernel.stats.cache_hits.values()) == 1, kernel
        assert sum(kernel.stats.cache_misses.values()) == 0, kernel


def test_the_runs_stand_ins_have_the_types_of_the_runs(monkeypatch):
    """Otherwise the child would compile a loss kernel the training never calls."""
    monkeypatch.setattr(runs_module, "MAX_RUNS_SHARE", 1e9)  # runs even for a tiny corpus
    unigrams = parse_patterns("U00:%x[0,0]\nU01:%x[-1,0]/%x[0,0]\nB\n")
    corpus = encode_training(unigrams, random_corpus(3, n_seqs=6, max_len=5))
    objective = Objective(corpus.space, corpus.data, corpus.empirical, 0.1)
    objective.n_dense = 1  # most observations sparse, whatever the corpus
    runs = objective.runs
    assert runs is not None
    assert [typeof(a) for a in standin_runs(corpus.space.u_lab)] == [typeof(a) for a in runs]


def test_no_stand_ins_for_a_corpus_without_runs(monkeypatch):
    """Runs larger than the occurrences are not built (many labels): the child must then
    compile the kernel that reads none, the one the training calls."""
    unigrams = parse_patterns("U00:%x[0,0]\nU01:%x[-1,0]/%x[0,0]\nB\n")
    corpus = encode_training(unigrams, random_corpus(3, n_seqs=6, max_len=5))
    monkeypatch.setattr(runs_module, "MAX_RUNS_SHARE", 0.0)
    objective = Objective(corpus.space, corpus.data, corpus.empirical, 0.1)
    objective.n_dense = 1
    assert objective._runs_or_standin() is None
    assert objective.runs is None
