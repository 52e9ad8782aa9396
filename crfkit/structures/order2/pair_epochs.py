"""SGD-L1 for second-order CRFs: one epoch of :mod:`crfkit.kernels.epochs`' algorithm
(Tsuruoka et al.'s cumulative L1 penalty, the same rate schedule and per-weight step)
over the pair lattice of :mod:`crfkit.structures.order2.pair_lattice`.

A sequence's gradient is the batch objective's (:func:`crfkit.structures.order2.pair_lattice.
sequence_logz` and ``backward_expectations2``, no dense rows) minus its gold
path's counts (:func:`gold_path2`); the step then walks the weights the
sequence touched: its observations' unigram, bigram and trigram rows, and the
transition and label-trigram blocks, which every sequence of two (three)
tokens touches. Exponentiated transition and trigram rows are recomputed for
every sequence, since every step moves them.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from crfkit.config import JIT
from crfkit.kernels.epochs import EpochBuffers
from crfkit.kernels.gradient import posterior_errors
from crfkit.kernels.lattice import longest_sequence
from crfkit.kernels.sgdfused import close_epoch, next_sequence, step_range
from crfkit.space import Dataset, FeatureSpace
from crfkit.structures.order2 import pair_lattice as order2


@njit(**JIT)
def gold_slot(lat2, L, a, b, c):
    """The edge slot of label trigram (a, b, c), -1 if it has no state."""
    pair_of, e_ptr, e_src0, e_tri = lat2.pair_of, lat2.e_ptr, lat2.e_src0, lat2.e_tri
    p, q = pair_of[b * L + c], pair_of[a * L + b]
    if p < 0 or q < 0:
        return -1
    i = q - e_src0[p]
    if i < 0 or i >= e_ptr[p + 1] - e_ptr[p] or e_tri[e_ptr[p] + i] < 0:
        return -1
    return e_ptr[p] + i


@njit(**JIT)
def gold_path2(W, G, space, lat2, tok_ptr, tok_obs, labels, t0, T, L, per_edge):
    """G -= the counts of the gold path of tokens t0 .. t0+T-1 (every feature it fires);
    returns its score under W. Summed over a corpus, the counts are the negated
    empirical vector of :func:`crfkit.structures.order2.pair_space.order2_space`."""
    u_ptr, u_lab, b_ptr, b_prev, b_cur, n_u, trans_offset, has_trans = space
    e_tri, g_ptr, g_edge = lat2.e_tri, lat2.g_ptr, lat2.g_edge
    g_offset, tri_offset, has_tri = lat2.g_offset, lat2.tri_offset, lat2.has_tri
    score = 0.0
    for t in range(T):
        y = labels[t0 + t]
        x = labels[t0 + t - 1] if t >= 1 else -1
        slot = gold_slot(lat2, L, labels[t0 + t - 2], x, y) if t >= 2 else -1
        for i in range(tok_ptr[t0 + t], tok_ptr[t0 + t + 1]):
            o = tok_obs[i]
            for k in range(u_ptr[o], u_ptr[o + 1]):
                if u_lab[k] == y:
                    G[k] -= 1.0
                    score += W[k]
            if t >= 1:
                for k in range(b_ptr[o], b_ptr[o + 1]):
                    if b_prev[k] == x and b_cur[k] == y:
                        G[n_u + k] -= 1.0
                        score += W[n_u + k]
            if per_edge and slot >= 0:
                for f in range(g_ptr[o], g_ptr[o + 1]):
                    if g_edge[f] == slot:
                        G[g_offset + f] -= 1.0
                        score += W[g_offset + f]
        if t >= 1 and has_trans:
            G[trans_offset + x * L + y] -= 1.0
            score += W[trans_offset + x * L + y]
        if slot >= 0 and has_tri:
            G[tri_offset + e_tri[slot]] -= 1.0
            score += W[tri_offset + e_tri[slot]]
    return score


@njit(**JIT)
def step_sequence2(W, G, q, space, lat2, tok_ptr, tok_obs, t0, T, L, per_edge, eta, u, l1):
    """Step every weight the sequence touched (G back to zero there): its observations'
    rows, the transition block and the label-trigram block."""
    u_ptr, b_ptr, n_u, trans_offset, has_trans = space[0], space[2], space[5], space[6], space[7]
    g_ptr, g_offset, tri_offset, has_tri = lat2.g_ptr, lat2.g_offset, lat2.tri_offset, lat2.has_tri
    for i in range(tok_ptr[t0], tok_ptr[t0 + T]):
        o = tok_obs[i]
        step_range(W, G, q, u_ptr[o], u_ptr[o + 1], eta, u, l1)
        step_range(W, G, q, n_u + b_ptr[o], n_u + b_ptr[o + 1], eta, u, l1)
        if per_edge:
            step_range(W, G, q, g_offset + g_ptr[o], g_offset + g_ptr[o + 1], eta, u, l1)
    if has_trans:
        step_range(W, G, q, trans_offset, trans_offset + L * L, eta, u, l1)
    if has_tri:  # the last block of the weight vector
        step_range(W, G, q, tri_offset, W.shape[0], eta, u, l1)


@njit(**JIT)
def sgd_epoch2(W, order, space, lat2, data, L, per_edge, eta0, alpha, rho1, seen, q, G, state,
               out):
    """One pass of SGD-L1 over the sequences in ``order`` (as
    :func:`crfkit.kernels.epochs.sgd_epoch`, same arguments and ``out``); G must be all
    zeros and is left so."""
    seq_ptr, tok_ptr, tok_obs, labels = data
    P, K = lat2.pair_a.shape[0], lat2.e_tri.shape[0]
    work = order2.work2(max(1, longest_sequence(seq_ptr, np.int64(0), len(seq_ptr) - 1)), L, P, K,
                        per_edge)
    no_dense = np.empty((0, L))
    no_penalty = np.zeros((L, L))
    em, pacc, eacc = np.empty(K), np.zeros(P), np.zeros(K)
    N = len(order)
    u = state[0]
    loss, tok_err, seq_err, eta = 0.0, 0, 0, eta0
    l1 = rho1 > 0.0
    for i in range(N):
        t0, T, eta, u = next_sequence(order, i, seq_ptr, eta0, alpha, rho1, seen, u)
        if T == 0:
            continue
        shared = order2.shared_rows(W, space, lat2, L, no_penalty)
        if not per_edge:  # every token reads the shared edge row
            work[5][0, :] = shared[4][0]
        logz = order2.sequence_logz(W, space, lat2, tok_ptr, tok_obs, t0, T, L, shared,
                                    per_edge, no_dense, work)
        if not np.isfinite(logz):
            out[3] = 1.0
            break
        marg = work[10]
        order2.backward_expectations2(G, space, lat2, tok_ptr, tok_obs, t0, T, L, per_edge,
                                      work[4], work[5], work[6], work[7], work[8], work[9],
                                      marg, em, pacc, eacc, no_dense)
        order2.flush_blocks(G, space, lat2, L, pacc, eacc, shared[4][0], per_edge, no_dense)
        pacc[:] = 0.0
        eacc[:] = 0.0
        loss += logz - gold_path2(W, G, space, lat2, tok_ptr, tok_obs, labels, t0, T, L,
                                  per_edge)
        wrong = posterior_errors(marg, labels, t0, T)
        tok_err += wrong
        seq_err += 1 if wrong else 0
        step_sequence2(W, G, q, space, lat2, tok_ptr, tok_obs, t0, T, L, per_edge, eta, u, l1)
    close_epoch(state, u, out, loss, tok_err, seq_err)
    return eta


class SgdEpochs2(EpochBuffers):
    """``run(W, order, seen, eta0, alpha, rho1, q, state) -> (loss, token errors, sequence
    errors, overflowed)``: one SGD-L1 epoch of a second-order dataset (the interface of
    :class:`crfkit.kernels.epochs.SgdEpochs`)."""

    n_out = 4

    def __init__(self, space: FeatureSpace, data: Dataset) -> None:
        """``space``: a :class:`crfkit.structures.order2.pair_space.Order2Space` (its
        ``lattice`` and trigram blocks)."""
        if data.tok_val is not None:
            raise ValueError("second-order models have binary features")
        super().__init__(space, data)
        self.lattice, self.per_edge = space.lattice, space.n_g > 0

    def __call__(self, W: np.ndarray, order: np.ndarray, seen: int, eta0: float, alpha: float,
                 rho1: float, q: np.ndarray, state: np.ndarray) -> tuple[float, int, int, bool]:
        out = self.out
        out[:] = 0.0
        sgd_epoch2(W, order, self.space, self.lattice, self.data, self.L, self.per_edge,
                   float(eta0), float(alpha), float(rho1), seen, q, self.G, state, out)
        if out[3]:  # stopped mid-sequence: the next epoch starts from a clean gradient
            self.G[:] = 0.0
        return float(out[0]), int(out[1]), int(out[2]), bool(out[3])
