"""Kernels for real-valued observations: each occurrence carries a value that multiplies
its weights.

A corpus may give every observation occurrence ``j`` a value ``tok_val[j]``
(float64, parallel to ``tok_obs``; :attr:`crfkit.space.Dataset.tok_val`). A
feature's score is then ``value * weight`` and its expected and gold counts
are sums of values instead of counts:

    psi[t, y]     = sum_j tok_val[j] * w(tok_obs[j], y)
    phi[t, a, b] += sum_j tok_val[j] * w(tok_obs[j], a, b)
    G[k]         += tok_val[j] * P(label(s) of k at t)

Binary corpora (``tok_val`` is None) never reach this module: the batch
kernels test ``tok_val is None``, which Numba resolves when it compiles them
for a None argument, so the binary code and its results stay exactly what they
were without values, and a valued corpus pays for the multiplies alone. The
lattice itself (exponentials, forward-backward, Viterbi) does not change;
only the encoding (features -> scores) and the expectations (marginals ->
gradient) do, and those live here.
"""

from __future__ import annotations

from numba import njit

from crfkit.config import JIT
from crfkit.kernels.gradient import add_path_counts as add_path_counts_binary
from crfkit.kernels.gradient import shared_pair_expectations, token_pair_marginals
from crfkit.kernels.lattice import (
    copy_matrix,
    exp_transitions,
    forward_backward,
)


# --- encoding --------------------------------------------------------------------------------
@njit(**JIT)
def unigram_scores(W, tok_ptr, tok_obs, tok_val, u_ptr, u_lab, t0, T, psi, Wd):
    """psi[:T] = valued unigram scores of tokens t0 .. t0+T-1 (dense rows ``Wd`` as in
    :func:`crfkit.kernels.lattice.unigram_scores`)."""
    psi[:T] = 0.0
    K = Wd.shape[0]
    L = psi.shape[1]
    for t in range(T):
        for j in range(tok_ptr[t0 + t], tok_ptr[t0 + t + 1]):
            o = tok_obs[j]
            v = tok_val[j]
            if o < K:
                for y in range(L):
                    psi[t, y] += v * Wd[o, y]
            else:
                for k in range(u_ptr[o], u_ptr[o + 1]):
                    psi[t, u_lab[k]] += v * W[k]


@njit(**JIT)
def bigram_scores(W, tok_ptr, tok_obs, tok_val, b_ptr, b_prev, b_cur, n_u, trans, t0, T, phi):
    """phi[t] = trans + valued observation bigrams at t, for t >= 1."""
    for t in range(1, T):
        copy_matrix(trans, phi[t])
        for j in range(tok_ptr[t0 + t], tok_ptr[t0 + t + 1]):
            o = tok_obs[j]
            v = tok_val[j]
            for k in range(b_ptr[o], b_ptr[o + 1]):
                phi[t, b_prev[k], b_cur[k]] += v * W[n_u + k]


@njit(inline="always", **JIT)
def chain_scores(W, space, tok_ptr, tok_obs, tok_val, t0, T, per_token, base, psi, phi, Wd):
    """:func:`crfkit.kernels.lattice.chain_scores` with values."""
    u_ptr, u_lab, b_ptr, b_prev, b_cur, n_u, trans_offset, has_trans = space
    unigram_scores(W, tok_ptr, tok_obs, tok_val, u_ptr, u_lab, t0, T, psi, Wd)
    if per_token:
        bigram_scores(W, tok_ptr, tok_obs, tok_val, b_ptr, b_prev, b_cur, n_u, base, t0, T,
                      phi)


# --- expectations ----------------------------------------------------------------------------
@njit(**JIT)
def unigram_expectations(G, tok_ptr, tok_obs, tok_val, u_ptr, u_lab, t0, T, L, alpha, beta,
                         Gd):
    """G += value x token marginal for every unigram feature; alpha becomes the marginals."""
    K = Gd.shape[0]
    for t in range(T):
        for y in range(L):
            alpha[t, y] *= beta[t, y]
        for j in range(tok_ptr[t0 + t], tok_ptr[t0 + t + 1]):
            o = tok_obs[j]
            v = tok_val[j]
            if o < K:
                for y in range(L):
                    Gd[o, y] += v * alpha[t, y]
            else:
                for k in range(u_ptr[o], u_ptr[o + 1]):
                    G[k] += v * alpha[t, u_lab[k]]


@njit(**JIT)
def token_pair_expectations(G, tok_ptr, tok_obs, tok_val, b_ptr, b_prev, b_cur, n_u,
                            trans_offset, has_trans, t0, T, L, alpha, beta, expu, expb, scale,
                            pair, tmp):
    """G += P(y[t-1] = a, y[t] = b) for the transitions and value x that for the
    observation bigrams, each token with its own matrix ``expb[t]``."""
    for t in range(1, T):
        token_pair_marginals(G, trans_offset, has_trans, t, L, alpha, beta, expu, expb[t],
                             scale, pair, tmp)
        for j in range(tok_ptr[t0 + t], tok_ptr[t0 + t + 1]):
            o = tok_obs[j]
            v = tok_val[j]
            for k in range(b_ptr[o], b_ptr[o + 1]):
                G[n_u + k] += v * pair[b_prev[k], b_cur[k]]


@njit(inline="always", **JIT)
def sequence_gradient(W, space, tok_ptr, tok_obs, tok_val, t0, T, L, per_token, trans,
                      exp_trans, trans_shift, Wd, Gd, work, G):
    """:func:`crfkit.kernels.gradient.sequence_gradient` with values: the same lattice,
    valued scores and expectations. Leaves psi and (with ``per_token``) phi filled. The
    per-token transition matrices are exponentiated whole (:func:`exp_transitions`): the
    binary path's shortcuts assume unit values, and valued observation bigrams are rare
    (``%v`` patterns are unigrams; attribute corpora have none)."""
    u_ptr, u_lab, b_ptr, b_prev, b_cur, n_u, trans_offset, has_trans = space
    psi, phi, expu, expb, alpha, beta, scale, pair, tmp = work
    chain_scores(W, space, tok_ptr, tok_obs, tok_val, t0, T, per_token, trans, psi, phi, Wd)
    shift = 0.0
    if per_token:
        shift = exp_transitions(phi, T, expb)
    logz = forward_backward(psi, expb, per_token, T, L, expu, alpha, beta, scale, tmp)
    if per_token:
        token_pair_expectations(G, tok_ptr, tok_obs, tok_val, b_ptr, b_prev, b_cur, n_u,
                                trans_offset, has_trans, t0, T, L, alpha, beta, expu, expb,
                                scale, pair, tmp)
    elif has_trans and T > 1:
        shared_pair_expectations(G, trans_offset, T, L, alpha, beta, expu, expb, scale, pair,
                                 tmp)
    unigram_expectations(G, tok_ptr, tok_obs, tok_val, u_ptr, u_lab, t0, T, L, alpha, beta, Gd)
    return shift, logz


@njit(**JIT)
def add_path_counts(G, space, tok_ptr, tok_obs, tok_val, L, t0, T, path, p0, coef):
    """G += coef x value for every feature firing along a label path (transitions: coef)."""
    u_ptr, u_lab, b_ptr, b_prev, b_cur, n_u, trans_offset, has_trans = space
    for t in range(T):
        y = path[p0 + t]
        yp = path[p0 + t - 1] if t else -1
        for j in range(tok_ptr[t0 + t], tok_ptr[t0 + t + 1]):
            o = tok_obs[j]
            v = coef * tok_val[j]
            for k in range(u_ptr[o], u_ptr[o + 1]):
                if u_lab[k] == y:
                    G[k] += v
            if t:
                for k in range(b_ptr[o], b_ptr[o + 1]):
                    if b_prev[k] == yp and b_cur[k] == y:
                        G[n_u + k] += v
        if t and has_trans:
            G[trans_offset + yp * L + y] += coef


# --- MEMM and MaxEnt: a softmax per token --------------------------------------------------
@njit(**JIT)
def token_scores(W, space, tok_ptr, tok_obs, tok_val, L, g, prev, score):
    """score[y] = valued unigram scores of token g (+ transition and bigram scores from
    ``prev`` >= 0)."""
    u_ptr, u_lab, b_ptr, b_prev, b_cur, n_u, trans_offset, has_trans = space
    score[:] = 0.0
    for j in range(tok_ptr[g], tok_ptr[g + 1]):
        o = tok_obs[j]
        for k in range(u_ptr[o], u_ptr[o + 1]):
            score[u_lab[k]] += tok_val[j] * W[k]
    if prev >= 0:
        if has_trans:
            base = trans_offset + prev * L
            for y in range(L):
                score[y] += W[base + y]
        for j in range(tok_ptr[g], tok_ptr[g + 1]):
            o = tok_obs[j]
            for k in range(b_ptr[o], b_ptr[o + 1]):
                if b_prev[k] == prev:
                    score[b_cur[k]] += tok_val[j] * W[n_u + k]


@njit(**JIT)
def add_expectations(G, prob, space, tok_ptr, tok_obs, tok_val, L, g, prev):
    """G += value x the local probability of every feature of token g."""
    u_ptr, u_lab, b_ptr, b_prev, b_cur, n_u, trans_offset, has_trans = space
    for j in range(tok_ptr[g], tok_ptr[g + 1]):
        o = tok_obs[j]
        for k in range(u_ptr[o], u_ptr[o + 1]):
            G[k] += tok_val[j] * prob[u_lab[k]]
    if prev >= 0:
        if has_trans:
            base = trans_offset + prev * L
            for y in range(L):
                G[base + y] += prob[y]
        for j in range(tok_ptr[g], tok_ptr[g + 1]):
            o = tok_obs[j]
            for k in range(b_ptr[o], b_ptr[o + 1]):
                if b_prev[k] == prev:
                    G[n_u + k] += tok_val[j] * prob[b_cur[k]]


@njit(**JIT)
def path_totals(G, space, seq_ptr, tok_ptr, tok_obs, tok_val, labels, L):
    """G += the feature totals of every sequence's gold path (``labels``): sums of values
    (counts where ``tok_val`` is None; transitions count 1 per token pair)."""
    for s in range(len(seq_ptr) - 1):
        t0 = seq_ptr[s]
        T = seq_ptr[s + 1] - t0
        if T == 0:
            continue
        if tok_val is None:
            add_path_counts_binary(G, space, tok_ptr, tok_obs, L, t0, T, labels, t0, 1.0)
        else:
            add_path_counts(G, space, tok_ptr, tok_obs, tok_val, L, t0, T, labels, t0, 1.0)


@njit(**JIT)
def label_totals(tok_ptr, tok_obs, tok_val, labels, o0, o1, freq, seen):
    """For observations o0..o1-1: ``seen[o - o0, y]`` if o occurs at a token labelled y,
    ``freq[o - o0, y]`` the total of its values there (counts where ``tok_val`` is None)."""
    for t in range(len(labels)):
        y = labels[t]
        for j in range(tok_ptr[t], tok_ptr[t + 1]):
            o = tok_obs[j]
            if o0 <= o < o1:
                seen[o - o0, y] = True
                if tok_val is None:
                    freq[o - o0, y] += 1.0
                else:
                    freq[o - o0, y] += tok_val[j]
