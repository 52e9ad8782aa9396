"""The epoch kernel of CRF++'s single-best MIRA (``crf_learn -a MIRA``).

Each sequence not shrunk away is decoded with Viterbi. A wrong path moves the
weights along ``d = counts(gold) - counts(predicted)`` by

    mu = max(0, (errors - (score(pred) - score(gold))) / |d|^2)

capped so that the sum of a sequence's steps (its dual variable, ``bound[s]``)
never exceeds ``C``. The numerator is the one CRF++'s encoder computes: the
score difference enters with that sign, so a model trained here takes the
same steps as one trained by crf_learn. The largest numerator of an uncapped
step is the epoch's KKT violation; the caller stops when two epochs running
have none.

Shrinking (CRF++'s ``-H``): a sequence decoded right ``shrinking_size``
epochs running is skipped until the caller resets ``shrink`` (after an epoch
without KKT violation). ``bound`` is single precision, as CRF++ keeps it.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from crfkit.config import JIT
from crfkit.kernels.crfsuite_epochs import MARGIN_NONE, OnlineEpochs, margin_loss, online_buffers

STEP_FLOOR = 1e-10  # smaller steps are skipped, as CRF++ skips them


@njit(**JIT)
def _step(excess, norm2, bound, C):
    """The step of a wrong sequence and whether it hit the cap C."""
    if norm2 > 0.0:
        mu = max(0.0, excess / norm2)
    else:  # both paths fire the same features: CRF++'s division gives +inf or nothing
        mu = np.inf if excess > 0.0 else 0.0
    if bound + mu > C:
        return C - bound, True
    return mu, False


@njit(**JIT)
def mira_epoch(W, bound, shrink, order, space, data, per_token, L, C, shrinking_size, frozen,
               G, touched, idx, val, out, tok_val=None):
    """One MIRA pass over ``order`` (module docstring); W, bound and shrink updated in
    place. out = [token errors, sequence errors, sequences visited, capped steps, largest
    KKT violation]."""
    bufs = online_buffers(data[0], L, per_token)
    tok_err = 0
    seq_err = 0
    active = 0
    capped = 0
    kkt = 0.0
    for i in range(len(order)):
        s = order[i]
        if shrink[s] >= shrinking_size:
            continue
        active += 1
        errors, score_gap, m = margin_loss(W, space, data, per_token, L, s, MARGIN_NONE, bufs,
                                            tok_val, G, frozen, touched, idx, val)
        if errors == 0:
            shrink[s] += 1
            continue
        tok_err += errors
        seq_err += 1
        shrink[s] = 0
        norm2 = 0.0
        for q in range(m):
            norm2 += val[q] * val[q]
        excess = errors - score_gap
        mu, at_cap = _step(excess, norm2, bound[s], C)
        if at_cap:
            capped += 1
        else:
            kkt = max(kkt, excess)
        if mu > STEP_FLOOR:
            bound[s] = min(C, bound[s] + mu)
            for q in range(m):
                W[idx[q]] += mu * val[q]
    out[0] = tok_err
    out[1] = seq_err
    out[2] = active
    out[3] = capped
    out[4] = kkt


class MiraEpochs(OnlineEpochs):
    """The buffers of CRFsuite's online epochs (the same decoding and differences), with
    MIRA's pass."""

    def __init__(self, space, data, frozen: np.ndarray | None = None) -> None:
        super().__init__(space, data, frozen)
        self.out = np.zeros(5)

    def epoch(self, W: np.ndarray, bound: np.ndarray, shrink: np.ndarray, order: np.ndarray,
              C: float, shrinking_size: int) -> tuple[int, int, int, int, float]:
        """One pass: (token errors, sequence errors, visited, capped, KKT violation)."""
        mira_epoch(W, bound, shrink, order, self.space, self.data, self.per_token, self.L,
                   np.float32(C), int(shrinking_size), self.frozen, self.G, self.touched,
                   self.idx, self.val, self.out, self.tok_val)
        o = self.out
        return int(o[0]), int(o[1]), int(o[2]), int(o[3]), float(o[4])
