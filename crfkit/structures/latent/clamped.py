"""The clamped pass: forward-backward over the states the annotation allows.

A token allows the states of its allowed labels (its gold label's K states; a label set's;
every state for ``?``). The pass visits only those: a fully labelled token costs K states,
not L*K, so it is cheap beside the free pass over every state (the chain's kernels, run
on the state-level space). It gives, per block of sequences, the sum of log Z(x, y) over
the allowed paths and their expected feature counts, which the objective subtracts from
the free pass's (:mod:`crfkit.structures.latent.objective`).

Scaled as the chain's lattice: ``U[t, i] = exp(psi[t, i] - max_i psi[t, i])`` over the
allowed states ``i`` of token ``t``, ``E = exp(trans - max trans)`` computed once per
evaluation, each ``alpha[t]`` normalised by ``scale[t]``. A sequence whose allowed states
admit no path (a zero or non-finite scale) stops the block and is reported by its index.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from crfkit.config import JIT
from crfkit.kernels.lattice import longest_sequence


@njit(**JIT)
def allowed_states(allowed, t0, T, K, n_st, st):
    """st[t, :n_st[t]] = the states token t0+t allows (label y owns states y*K .. y*K+K-1)."""
    L = allowed.shape[1]
    for t in range(T):
        n = 0
        for y in range(L):
            if allowed[t0 + t, y]:
                for k in range(K):
                    st[t, n] = y * K + k
                    n += 1
        n_st[t] = n


@njit(**JIT)
def clamped_scores(W, u_ptr, u_lab, tok_ptr, tok_obs, t0, T, n_st, st, pos, psi):
    """psi[t, i] = the score of state st[t, i] at token t0+t; returns the sum of the maxima
    subtracted when psi becomes U = exp(psi - max) (psi holds U on return)."""
    shift = 0.0
    for t in range(T):
        n = n_st[t]
        for i in range(n):
            pos[st[t, i]] = i
            psi[t, i] = 0.0
        for j in range(tok_ptr[t0 + t], tok_ptr[t0 + t + 1]):
            o = tok_obs[j]
            for k in range(u_ptr[o], u_ptr[o + 1]):
                p = pos[u_lab[k]]
                if p >= 0:
                    psi[t, p] += W[k]
        m = -np.inf
        for i in range(n):
            m = max(m, psi[t, i])
            pos[st[t, i]] = -1
        for i in range(n):
            psi[t, i] = np.exp(psi[t, i] - m)
        shift += m
    return shift


@njit(**JIT)
def clamped_forward(U, E, T, n_st, st, alpha, scale):
    """Scaled forward over the allowed states; False if a scale is zero or not finite."""
    total = 0.0
    for i in range(n_st[0]):
        alpha[0, i] = U[0, i]
        total += U[0, i]
    scale[0] = total
    if not (total > 0.0 and total < np.inf):
        return False
    for i in range(n_st[0]):
        alpha[0, i] /= total
    for t in range(1, T):
        total = 0.0
        for i in range(n_st[t]):
            b = st[t, i]
            acc = 0.0
            for j in range(n_st[t - 1]):
                acc += alpha[t - 1, j] * E[st[t - 1, j], b]
            alpha[t, i] = acc * U[t, i]
            total += alpha[t, i]
        scale[t] = total
        if not (total > 0.0 and total < np.inf):
            return False
        for i in range(n_st[t]):
            alpha[t, i] /= total
    return True


@njit(**JIT)
def clamped_backward(U, E, T, n_st, st, scale, beta):
    """Scaled backward over the allowed states."""
    for i in range(n_st[T - 1]):
        beta[T - 1, i] = 1.0
    for t in range(T - 2, -1, -1):
        for j in range(n_st[t]):
            a = st[t, j]
            acc = 0.0
            for i in range(n_st[t + 1]):
                acc += E[a, st[t + 1, i]] * U[t + 1, i] * beta[t + 1, i]
            beta[t, j] = acc / scale[t + 1]


@njit(**JIT)
def clamped_counts(G, coef, u_ptr, u_lab, trans_offset, has_trans, S, tok_ptr, tok_obs, t0, T,
                   n_st, st, pos, U, E, alpha, beta, scale):
    """G += coef x the expected counts of the allowed paths: state marginals alpha*beta per
    feature, pair marginals per transition."""
    for t in range(T):
        for i in range(n_st[t]):
            pos[st[t, i]] = i
        for j in range(tok_ptr[t0 + t], tok_ptr[t0 + t + 1]):
            o = tok_obs[j]
            for k in range(u_ptr[o], u_ptr[o + 1]):
                p = pos[u_lab[k]]
                if p >= 0:
                    G[k] += coef * alpha[t, p] * beta[t, p]
        for i in range(n_st[t]):
            pos[st[t, i]] = -1
        if has_trans and t > 0:
            for i in range(n_st[t]):
                b = st[t, i]
                right = coef * U[t, i] * beta[t, i] / scale[t]
                for j in range(n_st[t - 1]):
                    a = st[t - 1, j]
                    G[trans_offset + a * S + b] += alpha[t - 1, j] * E[a, b] * right


@njit(**JIT)
def clamped_buffers(Tmax, S):
    """(n_st, st, pos, U, alpha, beta, scale) for sequences of up to Tmax tokens."""
    return (np.empty(Tmax, dtype=np.int32), np.empty((Tmax, S), dtype=np.int32),
            np.full(S, -1, dtype=np.int32), np.empty((Tmax, S)), np.empty((Tmax, S)),
            np.empty((Tmax, S)), np.empty(Tmax))


@njit(**JIT)
def clamped_sequence(W, u_ptr, u_lab, trans_offset, has_trans, S, K, tok_ptr, tok_obs,
                     allowed, E, trans_shift, t0, T, counts, coef, G, buf):
    """log Z(x, y) of the sequence of tokens t0..t0+T-1 (NaN: no allowed path); with
    ``counts``, G += coef x its expected counts."""
    n_st, st, pos, U, alpha, beta, scale = buf
    allowed_states(allowed, t0, T, K, n_st, st)
    shift = clamped_scores(W, u_ptr, u_lab, tok_ptr, tok_obs, t0, T, n_st, st, pos, U)
    if not clamped_forward(U, E, T, n_st, st, alpha, scale):
        return np.nan
    if counts:
        clamped_backward(U, E, T, n_st, st, scale, beta)
        clamped_counts(G, coef, u_ptr, u_lab, trans_offset, has_trans, S, tok_ptr, tok_obs,
                       t0, T, n_st, st, pos, U, E, alpha, beta, scale)
    log_z = shift + trans_shift * (T - 1)
    for t in range(T):
        log_z += np.log(scale[t])
    return log_z


@njit(**JIT)
def clamped_block(W, u_ptr, u_lab, trans_offset, has_trans, S, K, seq_ptr, tok_ptr, tok_obs,
                  allowed, E, trans_shift, s0, s1, counts, G, out):
    """Sequences s0..s1-1: out[0] = sum of log Z(x, y), G = their expected counts (zeroed
    here; not computed without ``counts``); out[1] = the first sequence with no allowed
    path, -1 if none."""
    buf = clamped_buffers(longest_sequence(seq_ptr, s0, s1), S)
    G[:] = 0.0
    out[0] = 0.0
    out[1] = -1.0
    for s in range(s0, s1):
        t0 = seq_ptr[s]
        T = seq_ptr[s + 1] - t0
        if T == 0:
            continue
        log_z = clamped_sequence(W, u_ptr, u_lab, trans_offset, has_trans, S, K, tok_ptr,
                                 tok_obs, allowed, E, trans_shift, t0, T, counts, 1.0, G, buf)
        if log_z != log_z:
            out[1] = s
            return
        out[0] += log_z
