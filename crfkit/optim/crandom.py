"""CRFsuite's sequence order: its in-place shuffle driven by the C library's ``rand()``.

CRFsuite's online trainers (``ap``, ``pa``, ``arow``, ``l2sgd``) shuffle the
training instances before every epoch by swapping instance ``i`` with
instance ``rand() % N`` for each ``i``, in one permutation kept from epoch
to epoch. It never seeds ``rand()``, so every run of the ``crfsuite``
command (and the first training of a Python process using python-crfsuite)
visits the sequences in the order that seed 1 gives. Replaying that order
is what lets these algorithms reproduce CRFsuite's models exactly.

The generator is glibc's ``rand()`` (its additive feedback generator,
``TYPE_3``), the C library CRFsuite is built with on Linux; ``seed`` is
``srand``'s, where 0 and 1 give the same sequence.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

_DEGREE, _SEPARATION, _DISCARD = 31, 3, 310
_MASK32 = 0xFFFFFFFF


class CRand:
    """glibc's ``rand()`` after ``srand(seed)``: values in [0, 2**31)."""

    def __init__(self, seed: int = 1) -> None:
        word = _int32(seed) or 1
        state = [word]
        for _ in range(1, _DEGREE):
            # 16807 * word mod (2**31 - 1) without overflow (Schrage), C's truncating division
            hi, lo = int(word / 127773), word - int(word / 127773) * 127773
            word = 16807 * lo - 2836 * hi
            if word < 0:
                word += 2147483647
            state.append(word)
        self._r = [s & _MASK32 for s in state]
        # r[31..33] repeat r[0..2] (the ring already holds them), then 310 values are dropped
        self._i = _SEPARATION  # index of r[i - 31] in the ring of the last 31 values
        for _ in range(_DISCARD):
            self._step()

    def _step(self) -> int:
        r, i = self._r, self._i
        value = (r[i] + r[(i + _DEGREE - _SEPARATION) % _DEGREE]) & _MASK32
        r[i] = value
        self._i = (i + 1) % _DEGREE
        return value

    def __call__(self) -> int:
        return self._step() >> 1


def _int32(value: int) -> int:
    value &= _MASK32
    return value - (1 << 32) if value >= 1 << 31 else value


def crfsuite_orders(n_seqs: int, seed: int = 1, drawn: int = 0) -> Callable[[], np.ndarray]:
    """The order of each successive epoch, as CRFsuite shuffles (module docstring);
    ``drawn``: values of ``rand()`` used before the first shuffle (``crfsuite learn -g``'s
    deal of the groups)."""
    rand = CRand(seed)
    for _ in range(drawn):
        rand()
    perm = list(range(n_seqs))

    def next_order() -> np.ndarray:
        for i in range(n_seqs):
            j = rand() % n_seqs
            perm[i], perm[j] = perm[j], perm[i]
        return np.array(perm, dtype=np.int64)

    return next_order
