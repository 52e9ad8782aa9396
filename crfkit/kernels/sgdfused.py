"""The SGD-L1 epoch in three walks over a sequence's features instead of five.

:func:`crfkit.kernels.epochs.sgd_epoch` builds each step from the shared
pieces (the batch gradient, the gold path's counts, the list of touched
weights, the step over that list): five walks over the sequence's
observations, each through feature ids that miss the cache. Here one
sequence costs

1. the scores (the walk every lattice needs), then forward-backward;
2. one walk that adds, per feature occurrence, its marginal minus its gold
   indicator to ``G`` (expectation and gold counts fused; the gold path's
   score and the posterior errors come from the same loop);
3. one walk that applies the summed gradient to each weight and its
   cumulative L1 penalty, resetting ``G``, one observation's block of
   weights at a time (no list of touched ids: a weight met twice finds
   ``G == 0`` the second time, as in the reference).

The arithmetic is the reference's (the same rate, penalty and lazy updates;
a weight still moves once per sequence, by the gradient summed over the
sequence); only the order in which a feature's occurrences are added to
``G`` differs, so weights agree with the reference to rounding
(tests/test_sgdfused.py). Binary features only: valued corpora
(``tok_val``) keep the reference epoch.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from crfkit.config import JIT
from crfkit.kernels.gradient import (
    shared_pair_expectations,
    token_pair_marginals,
    work_buffers,
)
from crfkit.kernels.lattice import (
    argmax,
    exp_bigram_weights,
    exp_transitions_factors,
    forward_backward,
    load_transitions,
    longest_sequence,
    unigram_scores,
)

# Per-weight helpers called millions of times per epoch: without Numba-level inlining
# each call passes its arrays by value and costs ~100 ns (measured: the SGD update
# walk ran 6x slower than the forward-backward it follows).
INLINE_JIT = {**JIT, "inline": "always"}


@njit(**INLINE_JIT)
def penalise(W, q, k, u):
    """Tsuruoka's cumulative L1 step for weight k: pull it towards zero by what it is owed
    (``u`` minus what it received, ``q[k]``), never across zero."""
    z = W[k]
    if z > 0.0:
        W[k] = max(0.0, z - (u + q[k]))
    elif z < 0.0:
        W[k] = min(0.0, z + (u - q[k]))
    q[k] += W[k] - z


@njit(**INLINE_JIT)
def step(W, G, q, k, eta, u, l1):
    """W[k] -= eta G[k], G[k] = 0, then the penalty; nothing if G[k] is 0 (a weight already
    stepped in this sequence, or a zero gradient: the cumulative penalty catches up later)."""
    if G[k] == 0.0:
        return False
    W[k] -= eta * G[k]
    G[k] = 0.0
    if l1:
        penalise(W, q, k, u)
    return True


@njit(**JIT)
def _accumulate(G, space, tok_ptr, tok_obs, labels, t0, T, L, per_token, psi, alpha, beta,
                expu, expb, scale, pair, tmp, marg, trans, W):
    """Walk 2: G += marginal - gold indicator for every feature occurrence of the sequence.

    ``marg`` (L,) holds one token's marginals at a time (alpha[t-1] is still
    needed as is for the pair marginals of token t). Returns (the gold path's
    score, as the reference sums it; tokens whose most probable label is wrong).
    """
    u_ptr, u_lab, b_ptr, b_prev, b_cur, n_u, trans_offset, has_trans = space
    if not per_token and has_trans and T > 1:
        shared_pair_expectations(G, trans_offset, T, L, alpha, beta, expu, expb, scale, pair,
                                 tmp)
    gold = 0.0
    wrong = 0
    for t in range(T):
        y = labels[t0 + t]
        yp = labels[t0 + t - 1] if t else -1
        if t and per_token:  # pair marginals of token t
            token_pair_marginals(G, trans_offset, has_trans, t, L, alpha, beta, expu, expb[t],
                                 scale, pair, tmp)
        for c in range(L):
            marg[c] = alpha[t, c] * beta[t, c]
        if argmax(marg) != y:
            wrong += 1
        if t and has_trans:
            G[trans_offset + yp * L + y] -= 1.0
        for j in range(tok_ptr[t0 + t], tok_ptr[t0 + t + 1]):
            o = tok_obs[j]
            for k in range(u_ptr[o], u_ptr[o + 1]):
                c = u_lab[k]
                if c == y:
                    G[k] += marg[c] - 1.0
                else:
                    G[k] += marg[c]
        gold += psi[t, y]
        if t:
            edge = trans[yp, y]
            if per_token:
                for j in range(tok_ptr[t0 + t], tok_ptr[t0 + t + 1]):
                    o = tok_obs[j]
                    for k in range(b_ptr[o], b_ptr[o + 1]):
                        if b_prev[k] == yp and b_cur[k] == y:
                            G[n_u + k] += pair[yp, y] - 1.0
                            edge += W[n_u + k]
                        else:
                            G[n_u + k] += pair[b_prev[k], b_cur[k]]
            gold += edge
    return gold, wrong


@njit(**JIT)
def step_range(W, G, q, k0, k1, eta, u, l1):
    """:func:`step` for weights k0 .. k1-1, as a loop: one call per observation, not per
    weight (measured on CoNLL-2000: the update walk took 3.5 s an epoch through the
    per-weight helper, 0.4 s so)."""
    for k in range(k0, k1):
        g = G[k]
        if g == 0.0:
            continue
        G[k] = 0.0
        z = W[k] - eta * g
        if l1:
            w = z
            if z > 0.0:
                w = max(0.0, z - (u + q[k]))
            elif z < 0.0:
                w = min(0.0, z + (u - q[k]))
            q[k] += w - z
            z = w
        W[k] = z


@njit(**JIT)
def _apply(W, G, q, space, tok_ptr, tok_obs, t0, T, L, per_token, eta, u, l1, expw):
    """Walk 3: step every weight the sequence touched (G back to zero); with observation
    bigrams, keep ``expw`` = exp(bigram weights) current."""
    u_ptr, u_lab, b_ptr, b_prev, b_cur, n_u, trans_offset, has_trans = space
    for t in range(T):
        for j in range(tok_ptr[t0 + t], tok_ptr[t0 + t + 1]):
            o = tok_obs[j]
            step_range(W, G, q, u_ptr[o], u_ptr[o + 1], eta, u, l1)
            if t and per_token:
                step_range(W, G, q, n_u + b_ptr[o], n_u + b_ptr[o + 1], eta, u, l1)
                for k in range(b_ptr[o], b_ptr[o + 1]):
                    expw[k] = np.exp(W[n_u + k])
    if has_trans and T > 1:
        step_range(W, G, q, trans_offset, trans_offset + L * L, eta, u, l1)


@njit(**JIT)
def sgd_epoch_fused(W, order, space, data, per_token, L, eta0, alpha, rho1, seen, q, G, expw,
                    state, out):
    """One pass of SGD-L1 over ``order``; the contract of
    :func:`crfkit.kernels.epochs.sgd_epoch` (binary features, no ``touched`` buffer)."""
    seq_ptr, tok_ptr, tok_obs, labels = data
    u_ptr, u_lab, b_ptr, b_prev, b_cur, n_u, trans_offset, has_trans = space
    exp_bigram_weights(W, n_u, len(b_prev), expw)
    N = len(order)
    trans = np.empty((L, L))
    exp_trans = np.empty((1, L, L))
    work = work_buffers(longest_sequence(seq_ptr, 0, len(seq_ptr) - 1), L, per_token, exp_trans)
    psi, phi, expu, expb, alpha_, beta, scale, pair, tmp = work
    no_dense = np.empty((0, L))
    marg = np.empty(L)
    u = state[0]
    loss = 0.0
    tok_err = 0
    seq_err = 0
    eta = eta0
    l1 = rho1 > 0.0
    for i in range(N):
        s = order[i]
        eta = eta0 * alpha ** ((seen + i) / N)
        u += eta * rho1 / N
        t0 = seq_ptr[s]
        T = seq_ptr[s + 1] - t0
        if T == 0:
            continue
        trans_shift = load_transitions(W, trans_offset, has_trans, L, trans, exp_trans)
        unigram_scores(W, tok_ptr, tok_obs, None, u_ptr, u_lab, t0, T, psi, no_dense)
        shift = 0.0
        if per_token:
            shift = exp_transitions_factors(W, b_ptr, b_prev, b_cur, n_u, tok_ptr, tok_obs, t0,
                                            T, trans, exp_trans[0], trans_shift, expw, phi, expb)
        logz = forward_backward(psi, expb, per_token, T, L, expu, alpha_, beta, scale, tmp)
        logz = shift + logz if per_token else trans_shift * (T - 1) + logz
        if not np.isfinite(logz):
            out[3] = 1.0
            break
        gold, wrong = _accumulate(G, space, tok_ptr, tok_obs, labels, t0, T, L, per_token, psi,
                                  alpha_, beta, expu, expb, scale, pair, tmp, marg, trans, W)
        loss += logz - gold
        tok_err += wrong
        if wrong:
            seq_err += 1
        _apply(W, G, q, space, tok_ptr, tok_obs, t0, T, L, per_token, eta, u, l1, expw)
    state[0] = u
    out[0] = loss
    out[1] = tok_err
    out[2] = seq_err
    return eta
