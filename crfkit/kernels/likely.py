"""Which unsupported features the model finds likely: token and label-pair marginals of a
first-order CRF compared with a threshold (Sutton & McCallum's "likely unsupported
features", section 1.4.6 of their tutorial).

:func:`likely_marks` runs forward-backward over every training sequence at
the current weights and marks, in dense boolean tables, each (observation,
label) whose token marginal and each (observation, label pair) whose pair
marginal reaches the threshold at some token where the observation fires.
Pair marginals (L x L per token) are what the batch decoder does not return.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from crfkit.config import JIT
from crfkit.kernels.lattice import (
    chain_scores,
    exp_transitions,
    forward_backward,
    transition_block,
)


@njit(**JIT)
def likely_marks(W, space, data, L, threshold, u_flag, b_index, umark, bmark):
    """umark[o, y] |= P(y[t] = y) >= threshold where ``u_flag[o]`` and o fires at t;
    bmark[b_index[o], a, b] |= P(y[t-1] = a, y[t] = b) >= threshold where b_index[o] >= 0.

    Returns the number of sequences whose forward-backward underflowed (skipped).
    """
    seq_ptr, tok_ptr, tok_obs = data
    trans_offset, has_trans = space.trans_offset, space.has_trans
    Tmax = 1
    for s in range(len(seq_ptr) - 1):
        Tmax = max(Tmax, seq_ptr[s + 1] - seq_ptr[s])
    psi, phi, expu, expb = (np.empty((Tmax, L)), np.empty((Tmax, L, L)), np.empty((Tmax, L)),
                            np.empty((Tmax, L, L)))
    alpha, beta, scale, tmp = np.empty((Tmax, L)), np.empty((Tmax, L)), np.empty(Tmax), \
        np.empty(L)
    trans = transition_block(W, trans_offset, has_trans, L)
    no_dense = np.empty((0, L))
    skipped = 0
    for s in range(len(seq_ptr) - 1):
        t0 = seq_ptr[s]
        T = seq_ptr[s + 1] - t0
        if T == 0:
            continue
        chain_scores(W, space, tok_ptr, tok_obs, None, t0, T, True, trans, psi, phi, no_dense)
        exp_transitions(phi, T, expb)
        logz = forward_backward(psi, expb, np.bool_(True), T, L, expu, alpha, beta, scale, tmp)
        if logz != logz:
            skipped += 1
            continue
        for t in range(T):
            for i in range(tok_ptr[t0 + t], tok_ptr[t0 + t + 1]):
                o = tok_obs[i]
                if u_flag[o]:
                    for y in range(L):
                        if alpha[t, y] * beta[t, y] >= threshold:
                            umark[o, y] = True
                r = b_index[o]
                if t == 0 or r < 0:
                    continue
                inv = 1.0 / scale[t]
                for a in range(L):
                    for b in range(L):
                        p = alpha[t - 1, a] * expb[t, a, b] * expu[t, b] * beta[t, b] * inv
                        if p >= threshold:
                            bmark[r, a, b] = True
    return skipped
