"""Blockwise coordinate descent for the elastic net (Wapiti's ``-a bcd``): the kernels.

One sweep visits every observation's block of weights (its unigram features and its
observation-bigram features) in the order of their first occurrence, as Wapiti does, and
the transition block where Wapiti's ``B`` pattern puts it (after the first token's). For
a block, the gradient ``g`` and a diagonal curvature ``h`` of the negative log-likelihood
are summed over the places
where its observation fires (marginals from :mod:`crfkit.kernels.bcd_lattice`)::

    g_k = sum_occ v p_k - gold count_k        h_k = sum_occ v^2 p_k (1 - p_k)

then ``h`` is scaled by ``kappa * max(1, max_k |g_k / h_k|)`` so that the quadratic is a
safe bound (Wapiti's rule: ``kappa`` > 1 takes shorter, safer steps), and each weight
moves to the minimiser of that bound plus the elastic net, in closed form::

    w_k <- soft(h_k w_k - g_k, rho1) / (h_k + rho2),   soft(z, r) = sign(z) max(|z| - r, 0)

Soft-thresholding gives exact zeros. The scores of the tokens where the block fires are
then updated and their cached forward/backward rows invalidated.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from crfkit.config import JIT
from crfkit.kernels.bcd_lattice import (
    ensure_alpha,
    ensure_beta,
    invalidate,
    pair_normaliser,
    refresh_expu,
    transition_factors,
)
from crfkit.kernels.lattice import occurrence_value
from crfkit.space import Dataset, FeatureSpace


@njit(**JIT)
def soft_threshold(z, r):
    if z > r:
        return z - r
    if z < -r:
        return z + r
    return 0.0


@njit(**JIT)
def bound_update(W, base, g, h, n, rho1, rho2, kappa, old):
    """Move W[base:base+n] to the minimiser of the scaled bound; ``old`` gets the previous
    weights. Returns whether any weight changed. A weight with no curvature stays."""
    a = 1.0
    for k in range(n):
        if h[k] > 0.0:
            a = max(a, abs(g[k] / h[k]))
    changed = False
    for k in range(n):
        w = W[base + k]
        old[k] = w
        hk = h[k] * a * kappa
        if hk > 0.0:
            new = soft_threshold(hk * w - g[k], rho1) / (hk + rho2)
            if new != w:
                W[base + k] = new
                changed = True
    return changed


@njit(**JIT)
def occurrence_place(q, index, seq_ptr):
    """(global token, sequence, local position, occurrence j) of occurrence q."""
    occ_tok, occ_j, tok_seq = index[1], index[2], index[3]
    t = occ_tok[q]
    s = tok_seq[t]
    return t, s, t - seq_ptr[s], occ_j[q]


@njit(**JIT)
def block_gradient(o, W, space, data, tok_val, per_token, lat, index, empirical, g, h):
    """g, h of observation o's unigram features (first) and bigram features (after)."""
    u_ptr, u_lab, b_ptr, b_prev, b_cur, n_u = space[0], space[1], space[2], space[3], \
        space[4], space[5]
    seq_ptr, tok_ptr, tok_obs = data[0], data[1], data[2]
    alpha, beta, expu = lat[2], lat[3], lat[1]
    nu = u_ptr[o + 1] - u_ptr[o]
    nb = b_ptr[o + 1] - b_ptr[o]
    for k in range(nu + nb):
        g[k] = 0.0
        h[k] = 0.0
    for q in range(index[0][o], index[0][o + 1]):
        t, s, i, j = occurrence_place(q, index, seq_ptr)
        v = occurrence_value(tok_val, j)
        ensure_alpha(s, i, per_token, lat, seq_ptr, space, tok_ptr, tok_obs)
        ensure_beta(s, i, per_token, lat, seq_ptr, space, tok_ptr, tok_obs)
        if nu:
            z = 0.0
            for y in range(alpha.shape[1]):
                z += alpha[t, y] * beta[t, y]
            for k in range(nu):
                y = u_lab[u_ptr[o] + k]
                e = v * alpha[t, y] * beta[t, y] / z
                g[k] += e
                h[k] += e * (v - e)
        if nb and i > 0:
            M = transition_factors(t, per_token, lat, tok_ptr, tok_obs, b_ptr, b_prev, b_cur)
            z = pair_normaliser(t, M, lat)
            for k in range(nb):
                a, b = b_prev[b_ptr[o] + k], b_cur[b_ptr[o] + k]
                e = v * alpha[t - 1, a] * M[a, b] * expu[t, b] * beta[t, b] / z
                g[nu + k] += e
                h[nu + k] += e * (v - e)
    for k in range(nu):
        g[k] -= empirical[u_ptr[o] + k]
    for k in range(nb):
        g[nu + k] -= empirical[n_u + b_ptr[o] + k]
    return nu, nb


@njit(**JIT)
def apply_unigram_change(o, W, space, data, tok_val, lat, index, old):
    """psi and expu of the tokens where o fires, after its unigram weights moved."""
    u_ptr, u_lab = space[0], space[1]
    psi = lat[0]
    for q in range(index[0][o], index[0][o + 1]):
        t, s, i, j = occurrence_place(q, index, data[0])
        v = occurrence_value(tok_val, j)
        for k in range(u_ptr[o], u_ptr[o + 1]):
            psi[t, u_lab[k]] += v * (W[k] - old[k - u_ptr[o]])
        refresh_expu(t, lat)
        invalidate(s, i, lat)


@njit(**JIT)
def apply_bigram_change(o, W, space, data, lat, index):
    """expw of o's bigram features, and the rows of the tokens where o fires."""
    b_ptr, n_u = space[2], space[5]
    expw = lat[8]
    for k in range(b_ptr[o], b_ptr[o + 1]):
        expw[k] = np.exp(W[n_u + k])
    for q in range(index[0][o], index[0][o + 1]):
        t, s, i, j = occurrence_place(q, index, data[0])
        invalidate(s, i, lat)


@njit(**JIT)
def observation_sweep(W, space, data, tok_val, per_token, lat, index, empirical, rho1, rho2,
                      kappa, g, h, old, first, last):
    """One update of the blocks of observations ``index[4][first:last]``, in that order."""
    for o in index[4][first:last]:
        nu, nb = block_gradient(o, W, space, data, tok_val, per_token, lat, index, empirical,
                                g, h)
        if nu and bound_update(W, space[0][o], g, h, nu, rho1, rho2, kappa, old):
            apply_unigram_change(o, W, space, data, tok_val, lat, index, old)
        if nb and bound_update(W, space[5] + space[2][o], g[nu:], h[nu:], nb, rho1, rho2,
                               kappa, old):
            apply_bigram_change(o, W, space, data, lat, index)


@njit(**JIT)
def transition_sweep(W, space, data, per_token, lat, empirical, rho1, rho2, kappa, g, h, old):
    """One update of the transition block: its marginals need every sequence whole."""
    seq_ptr, tok_ptr, tok_obs = data[0], data[1], data[2]
    alpha, a_ok, b_from, tmp = lat[2], lat[4], lat[5], lat[9]
    off = space[6]
    L = alpha.shape[1]
    for k in range(L * L):
        g[k] = 0.0
        h[k] = 0.0
    for s in range(len(seq_ptr) - 1):
        t0, T = seq_ptr[s], seq_ptr[s + 1] - seq_ptr[s]
        if T < 2:
            continue
        ensure_alpha(s, T - 1, per_token, lat, seq_ptr, space, tok_ptr, tok_obs)
        # np.int64 / np.bool_: a literal argument would compile a second specialisation
        ensure_beta(s, np.int64(0), per_token, lat, seq_ptr, space, tok_ptr, tok_obs)
        for t in range(t0 + 1, t0 + T):
            M = transition_factors(t, per_token, lat, tok_ptr, tok_obs, space[2], space[3],
                                   space[4])
            z = pair_normaliser(t, M, lat)
            for a in range(L):
                w = alpha[t - 1, a] / z
                for b in range(L):
                    e = w * M[a, b] * tmp[b]
                    g[a * L + b] += e
                    h[a * L + b] += e * (1.0 - e)
    for k in range(L * L):
        g[k] -= empirical[off + k]
    if bound_update(W, off, g, h, L * L, rho1, rho2, kappa, old):
        load_exp_transitions(W, off, np.bool_(True), lat[6], lat[10])
        for s in range(len(seq_ptr) - 1):
            a_ok[s] = min(a_ok[s], 1)
            b_from[s] = max(b_from[s], seq_ptr[s + 1] - seq_ptr[s] - 1)


@njit(**JIT)
def load_exp_transitions(W, off, has_trans, expT, expTT):
    """expT = exp(transitions - their max) (all ones without a transition block), and
    expTT its transpose."""
    L = expT.shape[0]
    m = 0.0
    if has_trans:
        m = W[off]
        for k in range(L * L):
            m = max(m, W[off + k])
    for a in range(L):
        for b in range(L):
            expT[a, b] = np.exp(W[off + a * L + b] - m) if has_trans else 1.0
            expTT[b, a] = expT[a, b]


@njit(**JIT)
def reset(W, space, data, tok_val, lat):
    """Every token's scores from W, and no cached row: the state at a sweep's start."""
    u_ptr, u_lab, n_u = space[0], space[1], space[5]
    seq_ptr, tok_ptr, tok_obs = data[0], data[1], data[2]
    psi, a_ok, b_from, expw = lat[0], lat[4], lat[5], lat[8]
    for t in range(len(tok_ptr) - 1):
        for y in range(psi.shape[1]):
            psi[t, y] = 0.0
        for j in range(tok_ptr[t], tok_ptr[t + 1]):
            o = tok_obs[j]
            v = occurrence_value(tok_val, j)
            for k in range(u_ptr[o], u_ptr[o + 1]):
                psi[t, u_lab[k]] += v * W[k]
        refresh_expu(t, lat)
    for k in range(len(expw)):
        expw[k] = np.exp(W[n_u + k])
    load_exp_transitions(W, space[6], space[7], lat[6], lat[10])
    for s in range(len(seq_ptr) - 1):
        a_ok[s] = 0
        b_from[s] = seq_ptr[s + 1] - seq_ptr[s]


@njit(**JIT)
def sweep(W, space, data, tok_val, per_token, lat, index, empirical, rho1, rho2, kappa, g,
          h, old):
    """One iteration of blockwise coordinate descent from a fresh state (so an iteration
    depends only on W): the observation blocks in the order of ``index[4]``, the
    transition block after the first ``index[5]`` of them."""
    reset(W, space, data, tok_val, lat)
    n_obs = len(index[4])
    observation_sweep(W, space, data, tok_val, per_token, lat, index, empirical, rho1, rho2,
                      kappa, g, h, old, np.int64(0), index[5])
    if space[7]:
        transition_sweep(W, space, data, per_token, lat, empirical, rho1, rho2, kappa, g, h,
                         old)
    observation_sweep(W, space, data, tok_val, per_token, lat, index, empirical, rho1, rho2,
                      kappa, g, h, old, index[5], n_obs)


@njit(**JIT)
def occurrence_index(tok_ptr, tok_obs, n_obs):
    """Per observation, its occurrences in token order: (ptr (n_obs + 1,), token of each,
    position j of each in tok_obs)."""
    ptr = np.zeros(n_obs + 1, dtype=np.int64)
    for j in range(len(tok_obs)):
        ptr[tok_obs[j] + 1] += 1
    for o in range(n_obs):
        ptr[o + 1] += ptr[o]
    fill = ptr[:-1].copy()
    occ_tok = np.empty(len(tok_obs), dtype=np.int64)
    occ_j = np.empty(len(tok_obs), dtype=np.int64)
    for t in range(len(tok_ptr) - 1):
        for j in range(tok_ptr[t], tok_ptr[t + 1]):
            o = tok_obs[j]
            occ_tok[fill[o]] = t
            occ_j[fill[o]] = j
            fill[o] += 1
    return ptr, occ_tok, occ_j


def visiting_order(ptr: np.ndarray, occ_j: np.ndarray, tok_ptr: np.ndarray
                   ) -> tuple[np.ndarray, int]:
    """The observations in the order of their first occurrence (the order in which Wapiti
    numbers them, hence visits them; those that never occur last), and how many of them
    first occur at the corpus's first token: the transition block is visited after those,
    where Wapiti's bigram pattern ``B`` puts it when it is the last line."""
    counts = np.diff(ptr)
    first_seen = np.where(counts > 0, occ_j[np.minimum(ptr[:-1], max(len(occ_j) - 1, 0))],
                          len(occ_j))
    order = np.argsort(first_seen, kind="stable").astype(np.int64)
    on_first_token = int(np.count_nonzero(first_seen < (tok_ptr[1] if len(tok_ptr) > 1 else 0)))
    return order, on_first_token


class BlockDescent:
    """The state of blockwise coordinate descent over one chain corpus (its occurrence
    index, cached lattice and block buffers), for :mod:`crfkit.optim.bcd`."""

    def __init__(self, space: FeatureSpace, data: Dataset, empirical: np.ndarray) -> None:
        L, n = space.n_labels, data.n_tokens
        self.space_arrays = space.arrays()
        self.data_arrays = data.arrays()
        self.tok_val = data.tok_val
        self.empirical = empirical
        self.per_token = space.n_b > 0
        ptr, occ_tok, occ_j = occurrence_index(data.tok_ptr, data.tok_obs, space.n_obs)
        tok_seq = np.repeat(np.arange(data.n_seqs, dtype=np.int64), data.lengths)
        order, first = visiting_order(ptr, occ_j, data.tok_ptr)
        self.index = (ptr, occ_tok, occ_j, tok_seq, order, first)
        self.lat = (np.empty((n, L)), np.empty((n, L)), np.empty((n, L)), np.empty((n, L)),
                    np.zeros(data.n_seqs, dtype=np.int64),
                    np.zeros(data.n_seqs, dtype=np.int64), np.empty((L, L)),
                    np.empty((L, L)), np.empty(space.n_b), np.empty(L), np.empty((L, L)))
        widest = max(L * L, int(np.diff(space.u_ptr).max(initial=0)
                                + np.diff(space.b_ptr).max(initial=0)))
        self.g, self.h, self.old = np.empty(widest), np.empty(widest), np.empty(widest)

    def sweep(self, W: np.ndarray, rho1: float, rho2: float, kappa: float) -> None:
        """One iteration: every block updated once, in place in ``W``."""
        sweep(W, self.space_arrays, self.data_arrays, self.tok_val, self.per_token, self.lat,
              self.index, self.empirical, float(rho1), float(rho2), float(kappa), self.g,
              self.h, self.old)
