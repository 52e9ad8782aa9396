"""Blocks of sequences, and running one kernel call per block on threads.

The batch kernels (:mod:`crfkit.kernels.lattice`, :mod:`crfkit.kernels.loss`,
:mod:`crfkit.kernels.decoder`) each handle one block of sequences and release the GIL
(``nogil``), so plain Python threads run blocks in parallel. They used to
be ``parallel=True`` kernels looping with ``numba.prange`` over the blocks:
the same arithmetic, but Numba's parallel compilation made them the slowest
part of a first run (the training kernel alone took 14 of the ~35 seconds
of compiling before the first iteration of the quick start).

Results do not depend on the thread count: the blocks are fixed by the data
(:func:`partition_blocks`), each is computed by the same serial code
whichever thread runs it, writes only its own output rows, and callers sum
block results in block order. The thread count is Numba's
(``numba.set_num_threads``, ``NUMBA_NUM_THREADS``), which ``-t`` sets.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np

_pools: dict[int, ThreadPoolExecutor] = {}
_pools_lock = threading.Lock()


def partition_blocks(lengths: np.ndarray, n_blocks: int) -> np.ndarray:
    """Split sequences into contiguous blocks of about equal token count.

    Depends only on the data, never on the thread count, so the gradient sum
    order (and thus the trained model) is the same with any ``-t``.
    """
    n = len(lengths)
    if n <= 1:  # one sequence (labelling one sentence): skip the numpy work below
        return np.array([0, n] if n else [0], dtype=np.int64)
    n_blocks = max(1, min(n_blocks, n))
    cost = np.cumsum(lengths, dtype=np.float64)
    total = cost[-1] if n else 0.0
    targets = total * np.arange(1, n_blocks) / n_blocks
    cuts = np.searchsorted(cost, targets, side="left") + 1
    ptr = np.unique(np.concatenate([[0], np.clip(cuts, 1, n), [n]]))
    return ptr.astype(np.int64)


def thread_count() -> int:
    """Threads to use: Numba's setting for the calling thread (``-t``, ``NUMBA_NUM_THREADS``)."""
    return max(1, numba.get_num_threads())


def set_thread_count(n: int) -> None:
    """Use ``n`` threads from now on (``-t``); 0 means all cores (``NUMBA_NUM_THREADS``)."""
    numba.set_num_threads(n if n > 0 else numba.config.NUMBA_NUM_THREADS)


def run_blocks(task: Callable[[int], None], n_blocks: int) -> None:
    """Call ``task(0) .. task(n_blocks - 1)``, on up to :func:`thread_count` threads at once.

    The calling thread is one of them: it and ``threads - 1`` pool workers
    take the next block whenever they are free (so a long block does not
    hold up the others). Returns when all are done; the first exception
    raised by a task is raised here. ``task`` must write only to its own
    block's outputs.
    """
    threads = min(thread_count(), n_blocks)
    if threads <= 1:
        for blk in range(n_blocks):
            task(blk)
        return
    todo = iter(range(n_blocks))  # next() is atomic under the GIL: each block is taken once
    failed: list[bool] = []  # set once a task raised (or Ctrl-C): take no further block

    def drain() -> None:
        try:
            for blk in todo:
                if failed:
                    return
                task(blk)
        except BaseException:
            failed.append(True)
            raise

    helpers = [_pool(threads - 1).submit(drain) for _ in range(threads - 1)]
    try:
        drain()
    finally:
        for helper in helpers:
            helper.result()


def _pool(threads: int) -> ThreadPoolExecutor:
    """A pool of ``threads`` workers, kept for the next calls (one pool per count asked)."""
    with _pools_lock:
        if threads not in _pools:
            _pools[threads] = ThreadPoolExecutor(threads, thread_name_prefix="crfkit-block")
        return _pools[threads]
