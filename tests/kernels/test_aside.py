"""Compiling a kernel in a forked child (crfkit.kernels.aside): the parent then loads the
child's compilation from the cache, and a child that fails changes nothing."""

from __future__ import annotations

import importlib.util
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from numba import njit, typeof

from crfkit import config
from crfkit.kernels import aside as aside_module
from crfkit.kernels import loss
from crfkit.kernels import objective as objective_module
from crfkit.kernels.aside import Aside, compile_aside, compile_meanwhile, compile_queued, may_fork
from crfkit.kernels.objective import Objective, standin_shared
from crfkit.training.corpus import encode_training
from tests.helpers import PATTERNS, random_corpus

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forks on Linux")

KERNELS = '''
from numba import njit

@njit(cache=True)
def total(x):
    acc = 0.0
    for v in x:
        acc += v
    return acc

@njit(cache=True)
def broken(x):
    return x.no_such_attribute

@njit(cache=True)
def scaled(x, a):
    return x * a
'''


@pytest.fixture
def fresh_kernels(tmp_path: Path, monkeypatch):
    """Kernels never compiled, cached in ``tmp_path``'s __pycache__ (a module of its own,
    importable while the test runs: Numba finds a cached kernel's module by name)."""
    name = f"aside_kernels_{tmp_path.name}"
    path = tmp_path / f"{name}.py"
    path.write_text(KERNELS, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, name, module)
    spec.loader.exec_module(module)
    # earlier tests may have left thread pools running: fork anyway (nothing compiles on them)
    monkeypatch.setattr(aside_module, "may_fork", lambda: True)
    return module


def test_the_parent_loads_what_the_child_compiled(fresh_kernels):
    kernels = fresh_kernels
    x = np.arange(4.0)
    aside = compile_aside(kernels.total, (x,))
    assert aside is not None
    aside.wait()
    assert kernels.total(x) == 6.0
    assert sum(kernels.total.stats.cache_hits.values()) == 1
    assert sum(kernels.total.stats.cache_misses.values()) == 0
    # compiled (and cached) now: nothing left to compile aside
    assert compile_aside(kernels.total, (x,)) is None


def test_a_failing_child_leaves_the_parent_as_without_it(fresh_kernels):
    kernels = fresh_kernels
    aside = compile_aside(kernels.broken, (np.zeros(2),))
    assert aside is not None
    aside.wait()
    with pytest.raises(Exception, match="no_such_attribute"):
        kernels.broken(np.zeros(2))


def test_no_fork_while_another_thread_runs():
    release = threading.Event()
    other = threading.Thread(target=release.wait)
    other.start()
    try:
        assert not may_fork()
    finally:
        release.set()
        other.join()


def test_the_stand_ins_have_the_types_of_the_shared_scores():
    """Otherwise the child would compile a signature the training never calls."""
    corpus = encode_training(PATTERNS, random_corpus(3, n_seqs=4, max_len=4))
    objective = Objective(corpus.space, corpus.data, corpus.empirical, 0.1)
    w = np.zeros(corpus.space.n_weights)
    shared = objective.shared(w)
    assert [typeof(v) for v in standin_shared(corpus.space.n_labels)] == \
        [typeof(v) for v in shared]


def test_queued_kernels_compile_while_the_parent_waits(fresh_kernels):
    kernels = fresh_kernels
    x = np.arange(3.0)
    compile_meanwhile([(kernels.scaled, (x, 2.0))])
    aside = compile_aside(kernels.total, (x,))
    assert aside is not None and not kernels.scaled.overloads
    aside.wait()
    assert (typeof(x), typeof(2.0)) in kernels.scaled.overloads


def test_queued_kernels_are_dropped_when_no_child_starts(fresh_kernels):
    """A warm cache: nothing to wait for, and each kernel loads on its own first call."""
    kernels = fresh_kernels
    x = np.arange(3.0)
    kernels.total(x)  # compiled: no child for it
    compile_meanwhile([(kernels.scaled, (x, 2.0))])
    assert compile_aside(kernels.total, (x,)) is None
    compile_queued()
    assert not kernels.scaled.overloads


def test_the_objective_queues_the_kernels_it_calls_next(monkeypatch):
    """Otherwise the parent would compile, while it waits, versions nothing calls."""
    queued = []
    monkeypatch.setattr(objective_module, "compile_aside", lambda *args: Aside(0))
    monkeypatch.setattr(objective_module, "compile_meanwhile", queued.extend)
    corpus = encode_training(PATTERNS, random_corpus(3, n_seqs=4, max_len=4))
    objective = Objective(corpus.space, corpus.data, corpus.empirical, 0.1)
    w = np.zeros(corpus.space.n_weights)
    objective(w, np.empty_like(w))
    assert queued
    for kernel, args in queued:
        assert tuple(kernel.typeof_pyval(a) for a in args) in kernel.overloads


def test_the_last_callees_have_the_types_the_loss_kernel_calls_them_with():
    """Otherwise the child compiling the kernel would not find them in the cache."""
    corpus = encode_training(PATTERNS, random_corpus(3, n_seqs=4, max_len=4))
    objective = Objective(corpus.space, corpus.data, corpus.empirical, 0.1)
    w = np.zeros(corpus.space.n_weights)
    kernel, runs = loss.crf_loss_kernel(corpus.space.n_b > 0, True, objective.runs,
                                        corpus.space.n_labels)
    # compiled afresh (not from the cache), so that its callees are compiled or loaded here
    uncached = njit(**{**config.JIT, "cache": False})(kernel.py_func)
    Gd, G = objective.dense_expectations(), objective.G_blocks[0]
    uncached(w, objective.space_arrays, objective.data_arrays, corpus.space.n_labels, 0, 1,
             *objective.shared(w), Gd, G, objective.out[0], None, runs, objective.work_buffers())
    callees = loss.last_callees(objective.space_arrays, objective.data_arrays,
                                corpus.space.n_labels, Gd, G, None, runs)
    assert callees
    for callee, args in callees:
        assert tuple(callee.typeof_pyval(a) for a in args) in callee.overloads, callee


def test_a_locally_normalised_objective_drops_the_queue(fresh_kernels):
    """No loss kernel to set aside for MEMM and MaxEnt: the queue would otherwise wait
    for a later child of the same process."""
    x = np.arange(3.0)
    compile_meanwhile([(fresh_kernels.scaled, (x, 2.0))])
    corpus = encode_training(PATTERNS, random_corpus(3, n_seqs=4, max_len=4))
    objective = Objective(corpus.space, corpus.data, corpus.empirical, 0.1,
                          normalisation=config.NORM_MEMM)
    w = np.zeros(corpus.space.n_weights)
    assert objective.compile_loss_aside(w, np.empty_like(w)) is None
    compile_queued()
    assert not fresh_kernels.scaled.overloads
