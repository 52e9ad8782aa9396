"""Numba kernel of :mod:`crfkit.labelling.output`: cells with probabilities as UTF-8 bytes.

A module of its own so that ``crfkit.labelling.output`` imports Numba only when
probabilities are printed (``-s``, ``--marginals``); plain output never
needs it.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from crfkit import config
from crfkit.config import PROB_STEPS

_NEWLINE = 10
_SLASH = 47
_DOT = 46
_ZERO = 48
_UNDERSCORE = 95


@njit(**config.JIT)
def _cell_width(offsets, y, q):
    if y < 0:
        return 1
    return offsets[y + 1] - offsets[y] + (7 if q >= 0 else 0)


@njit(**config.JIT)
def cells_text(blob, offsets, ids, q, sep):
    """UTF-8 text of a cell matrix: row i is its cells joined by ``sep``, rows end in a newline.

    A cell is ``LABEL/D.DDDD`` (the probability ``q / 10000``), or ``LABEL``
    when ``q < 0``, or ``_`` when the label id is negative (a missing rank).
    Labels are ``blob[offsets[y]:offsets[y + 1]]``.
    """
    n, K = ids.shape
    size = 0
    for i in range(n):
        for k in range(K):
            size += _cell_width(offsets, ids[i, k], q[i, k])
        size += K  # separators and the newline
    out = np.empty(size, dtype=np.uint8)
    p = 0
    for i in range(n):
        for k in range(K):
            if k:
                out[p] = sep
                p += 1
            y = ids[i, k]
            if y < 0:
                out[p] = _UNDERSCORE
                p += 1
                continue
            for j in range(offsets[y], offsets[y + 1]):
                out[p] = blob[j]
                p += 1
            v = q[i, k]
            if v >= 0:
                out[p] = _SLASH
                out[p + 1] = _ZERO + v // PROB_STEPS
                out[p + 2] = _DOT
                v %= PROB_STEPS
                out[p + 3] = _ZERO + v // 1000
                out[p + 4] = _ZERO + (v // 100) % 10
                out[p + 5] = _ZERO + (v // 10) % 10
                out[p + 6] = _ZERO + v % 10
                p += 7
        out[p] = _NEWLINE
        p += 1
    return out
