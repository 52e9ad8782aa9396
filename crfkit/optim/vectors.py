"""Vector helpers of the optimisers: serial loops in a fixed order, compiled once.

The optimisers need a handful of reductions over the weight vector (dot
products, |x|_1). They live here, not in the CRF kernels, so that ``optim``
imports nothing above :mod:`crfkit.config` (ARCHITECTURE: the optimisers see
only ``fun(w, g)`` and vectors). Serial loops rather than numpy or BLAS: a
fixed summation order gives the same bits for any thread count, and the
loops make no temporaries of the size of the weights.
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

