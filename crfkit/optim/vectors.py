"""Vector helpers of the optimisers, compiled: fixed summation order, no threaded BLAS.

The optimisers must give the same bits whatever the machine's BLAS and
thread count, so their reductions are serial loops.
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
