"""Compiled vector reductions (dot, |x|_1) in a fixed order, for the objective and the optimisers.

The objective's value and the optimisers' steps must be the same bits
whatever the machine's BLAS and thread count, so their reductions are serial
loops. A bottom-layer module (like ``config``): ``kernels/`` and ``optim/``
may both import it.
"""

from __future__ import annotations

from numba import njit

from crfkit.config import JIT


@njit(**JIT)
def dot(a, b):
    """Serial dot product: a fixed summation order, unlike threaded BLAS."""
    acc = 0.0
    for i in range(a.size):
        acc += a[i] * b[i]
    return acc


@njit(**JIT)
def l1_norm(x):
    """|x|_1, summed serially (a fixed order)."""
    acc = 0.0
    for i in range(x.size):
        acc += abs(x[i])
    return acc
