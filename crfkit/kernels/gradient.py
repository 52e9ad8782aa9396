"""The gradient of one sequence: the one place where a CRF's expectations are computed.

:func:`sequence_gradient` takes one sequence from its features to its log
partition and its expected feature counts (scores -> exponentials -> scaled
forward-backward -> expectations). L-BFGS's batch kernel
(:mod:`crfkit.kernels.loss`) and the SGD epoch (:mod:`crfkit.kernels.epochs`)
both call it; :func:`add_path_counts` adds a label path's feature counts, which
SGD subtracts for the gold path and the perceptron adds (gold) and subtracts
(predicted). The negative log-likelihood of a sequence is

    log Z - score(gold path),   its gradient   E_model[counts] - counts(gold path)

Work buffers of one block (allocated once per block, sized to its longest
sequence, never inside the per-sequence loop)::

    work = (psi (T, L), phi (TP, L, L), expu (T, L), expb (TP, L, L),
            alpha (T, L), beta (T, L), scale (T,), pair (L, L), tmp (L,))

with TP = T when transitions vary per token (observation bigrams); else ``expb``
is the shared exponentiated transition block and its transpose (2, L, L), from
:func:`crfkit.kernels.lattice.load_transitions` into a
:func:`crfkit.kernels.lattice.transition_buffer`.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from crfkit.config import JIT
from crfkit.kernels.lattice import (
    bigram_scores,
    exp_transitions,
    exp_transitions_factors,
    exp_unigrams,
    forward_backward,
    occurrence_value,
    unigram_factors,
    unigram_scores,
)
from crfkit.kernels.scaled import scaled_logz, shared_logz


@njit(**JIT)
def work_buffers(Tmax, L, per_token, exp_trans):
    """The ``work`` tuple of a block whose longest sequence has Tmax tokens (the L-BFGS
    loss kernel takes the same shapes from the caller: :func:`crfkit.kernels.loss.block_buffers`,
    to be changed with this)."""
    TP = Tmax if per_token else 1
    expb = np.empty((TP, L, L)) if per_token else exp_trans
    return (np.empty((Tmax, L)), np.empty((TP, L, L)), np.empty((Tmax, L)), expb,
            np.empty((Tmax, L)), np.empty((Tmax, L)), np.empty(Tmax), np.empty((L, L)),
            np.empty(L))


@njit(inline="always", **JIT)
def sequence_gradient(W, space, tok_ptr, tok_obs, tok_val, t0, T, L, per_token, trans,
                      exp_trans, trans_shift, expw, Wd, Gd, work, G, expW, expWd):
    """Expected feature counts of tokens t0 .. t0+T-1 added to G; returns (shift, logz).

    log Z of the sequence is ``shift + logz`` with observation bigrams
    (``per_token``), else ``trans_shift * (T - 1) + logz``: the caller adds
    the parts itself, so that every trainer sums them in the same order.
    ``trans``/``exp_trans``/``trans_shift`` come from
    :func:`crfkit.kernels.lattice.load_transitions`, ``expw`` (the exponentiated
    bigram weights, used with ``per_token``) from
    :func:`crfkit.kernels.lattice.exp_bigram_weights`; observations below
    ``len(Wd)`` are scored and accumulated as dense rows (``Wd``, ``Gd``; may be
    empty); ``tok_val`` the occurrence values (None: all 1; with values the bigram
    factors, which assume unit values, give way to exponentiating the valued
    scores whole). ``expW``/``expWd``: the exponentiated unigram weights of
    :meth:`crfkit.kernels.objective.Objective.factors`, or empty: each token's scores are then
    summed and exponentiated (always with values). Leaves the token marginals in
    ``work``'s alpha. Inlined, so a caller whose ``per_token`` is a compile-time
    constant compiles only its half.
    """
    return factored_gradient(factors_given(tok_val, expW), W, space, tok_ptr, tok_obs, tok_val,
                             t0, T, L, per_token, trans, exp_trans, trans_shift, expw, Wd, Gd,
                             work, G, expW, expWd)


@njit(inline="always", **JIT)
def factors_given(tok_val, expW):
    """Whether :func:`sequence_gradient` multiplies the tokens' scores out of the
    exponentiated weights ``expW`` (binary corpus, tables given) or sums and
    exponentiates them."""
    return tok_val is None and expW.shape[0] > 0


@njit(inline="always", **JIT)
def factored_gradient(factored, W, space, tok_ptr, tok_obs, tok_val, t0, T, L, per_token, trans,
                      exp_trans, trans_shift, expw, Wd, Gd, work, G, expW, expWd):
    """:func:`sequence_gradient` with ``factored`` (:func:`factors_given`) given: a caller
    for which it is a compile-time constant (the batch kernel) compiles one way only,
    and a first run only the factored one (the other is for valued corpora and weights
    too large for products of factors)."""
    u_ptr, u_lab, b_ptr, b_prev, b_cur, n_u, trans_offset, has_trans = space
    psi, phi, expu, expb, alpha, beta, scale, pair, tmp = work
    if factored:
        unigram_factors(expW, tok_ptr, tok_obs, u_ptr, u_lab, t0, T, expu, expWd)
    else:
        unigram_scores(W, tok_ptr, tok_obs, tok_val, u_ptr, u_lab, t0, T, psi, Wd)
    shift = 0.0
    if per_token and tok_val is None:
        shift = exp_transitions_factors(W, b_ptr, b_prev, b_cur, n_u, tok_ptr, tok_obs, t0, T,
                                        trans, exp_trans[0], trans_shift, expw, phi, expb)
    elif per_token:  # the factors assume unit values: valued bigram scores, exponentiated
        bigram_scores(W, tok_ptr, tok_obs, tok_val, b_ptr, b_prev, b_cur, n_u, trans, t0, T,
                      phi)
        shift = exp_transitions(phi, T, expb)
    if per_token:
        if factored:
            logz = scaled_logz(expu, expb, per_token, T, L, alpha, beta, scale, tmp, 0.0)
        else:
            logz = forward_backward(psi, expb, per_token, T, L, expu, alpha, beta, scale, tmp)
        token_pair_expectations(G, tok_ptr, tok_obs, tok_val, b_ptr, b_prev, b_cur, n_u,
                                trans_offset, has_trans, t0, T, L, alpha, beta, expu, expb,
                                scale, pair, tmp)
    else:
        logz = 0.0 if factored else exp_unigrams(psi, T, expu)
        pairs = has_trans and T > 1
        logz = shared_logz(expu, expb[0], expb[1], T, L, alpha, beta, scale, tmp, pair, pairs,
                           logz)
        if pairs and logz == logz:
            add_transition_expectations(G, trans_offset, L, pair, expb[0])
    unigram_expectations(G, tok_ptr, tok_obs, tok_val, u_ptr, u_lab, t0, T, L, alpha, beta,
                         Gd)
    return shift, logz


@njit(**JIT)
def posterior_errors(marginals, labels, t0, T):
    """Tokens whose most probable label (posterior decoding; ties to the lower label, as
    :func:`crfkit.kernels.lattice.argmax`) is not the gold one.

    A token is wrong when some label beats the gold one's marginal: counted without
    branches, so the loop vectorises (finding the argmax took a tenth of a Brown
    evaluation)."""
    wrong = 0
    for t in range(T):
        gold = labels[t0 + t]
        g = marginals[t, gold]
        beaten = 0
        for y in range(marginals.shape[1]):
            m = marginals[t, y]
            beaten += (m > g) | ((m == g) & (y < gold))
        if beaten:
            wrong += 1
    return wrong


@njit(**JIT)
def add_path_counts(G, space, tok_ptr, tok_obs, tok_val, L, t0, T, path, p0, coef):
    """G += coef (times the occurrence's value, transitions: coef) for every feature
    that fires along a label path of tokens t0 .. t0+T-1.

    ``path[p0 + t]`` is the label of token t0 + t. Features the space lacks (a
    combination never seen in training) are skipped.
    """
    u_ptr, u_lab, b_ptr, b_prev, b_cur, n_u, trans_offset, has_trans = space
    for t in range(T):
        y = path[p0 + t]
        yp = path[p0 + t - 1] if t else -1
        for j in range(tok_ptr[t0 + t], tok_ptr[t0 + t + 1]):
            o = tok_obs[j]
            v = coef * occurrence_value(tok_val, j)
            for k in range(u_ptr[o], u_ptr[o + 1]):
                if u_lab[k] == y:
                    G[k] += v
            if t:
                for k in range(b_ptr[o], b_ptr[o + 1]):
                    if b_prev[k] == yp and b_cur[k] == y:
                        G[n_u + k] += v
        if t and has_trans:
            G[trans_offset + yp * L + y] += coef


# --- expectations: marginals -> gradient -----------------------------------------------------
@njit(inline="always", **JIT)
def backward_factors(expu, beta, scale, t, L, tmp):
    """tmp[b] = U[t, b] beta[t, b] / scale[t]: what a label pair ending at token t is
    multiplied by, besides alpha[t-1] and the transition factor."""
    inv = 1.0 / scale[t]
    for b in range(L):
        tmp[b] = expu[t, b] * beta[t, b] * inv


@njit(inline="always", **JIT)
def token_pair_marginals(G, trans_offset, has_trans, t, L, alpha, beta, expu, M, scale, pair,
                         tmp):
    """pair[a, b] = P(y[t-1] = a, y[t] = b) from the scaled forward-backward tables and
    token t's transition factors ``M`` (``tmp``: L scratch); added to the transition
    block of G when the model has one. Shared by the batch, valued and SGD kernels."""
    backward_factors(expu, beta, scale, t, L, tmp)
    for a in range(L):
        w = alpha[t - 1, a]
        for b in range(L):
            pair[a, b] = w * M[a, b] * tmp[b]
    if has_trans:
        for a in range(L):
            for b in range(L):
                G[trans_offset + a * L + b] += pair[a, b]


@njit(**JIT)
def token_pair_expectations(G, tok_ptr, tok_obs, tok_val, b_ptr, b_prev, b_cur, n_u,
                            trans_offset, has_trans, t0, T, L, alpha, beta, expu, expb, scale,
                            pair, tmp):
    """G += P(y[t-1] = a, y[t] = b) for the transition features and (times the
    occurrence's value) the observation-bigram features of every token, each with its
    own matrix ``expb[t]``."""
    for t in range(1, T):
        token_pair_marginals(G, trans_offset, has_trans, t, L, alpha, beta, expu, expb[t],
                             scale, pair, tmp)
        for j in range(tok_ptr[t0 + t], tok_ptr[t0 + t + 1]):
            o = tok_obs[j]
            v = occurrence_value(tok_val, j)
            for k in range(b_ptr[o], b_ptr[o + 1]):
                G[n_u + k] += v * pair[b_prev[k], b_cur[k]]


@njit(**JIT)
def add_transition_expectations(G, trans_offset, L, pair, M):
    """G's transition block += pair * M: the expectations of
    :func:`crfkit.kernels.scaled.shared_logz`'s pair sums."""
    for a in range(L):
        for b in range(L):
            G[trans_offset + a * L + b] += pair[a, b] * M[a, b]


@njit(**JIT)
def shared_pair_expectations(G, trans_offset, T, L, alpha, beta, expu, expb, scale, pair, tmp):
    """G += sum_t P(y[t-1] = a, y[t] = b) for the transition block, when every token
    shares the one matrix ``expb[0]``:

        sum_t P(a, b at t) = M[a, b] * sum_t alpha[t-1, a] U[t, b] beta[t, b] / scale[t]
    """
    pair[:, :] = 0.0
    for t in range(1, T):
        backward_factors(expu, beta, scale, t, L, tmp)
        for a in range(L):
            w = alpha[t - 1, a]
            for b in range(L):
                pair[a, b] += w * tmp[b]
    add_transition_expectations(G, trans_offset, L, pair, expb[0])


@njit(**JIT)
def unigram_expectations(G, tok_ptr, tok_obs, tok_val, u_ptr, u_lab, t0, T, L, alpha, beta,
                         Gd):
    """G += the token marginals of the unigram features (times the occurrence's value);
    turns alpha into the marginals (alpha[t] * beta[t]). Those of observations 0..K-1
    go to the dense rows ``Gd`` (K, L) instead (K may be 0), added whole;
    :func:`flush_dense` moves them into G."""
    K = Gd.shape[0]
    for t in range(T):
        marginals_row(alpha, beta, t, L)
        for j in range(tok_ptr[t0 + t], tok_ptr[t0 + t + 1]):
            o = tok_obs[j]
            v = occurrence_value(tok_val, j)
            if o < K:
                add_row(Gd, o, alpha, t, L, v)
            else:
                for k in range(u_ptr[o], u_ptr[o + 1]):
                    G[k] += v * alpha[t, u_lab[k]]


@njit(inline="always", **JIT)
def marginals_row(alpha, beta, t, L):
    """alpha[t] *= beta[t]: token t's marginals, from the scaled forward-backward tables."""
    for y in range(L):
        alpha[t, y] *= beta[t, y]


@njit(inline="always", **JIT)
def add_row(Gd, o, alpha, t, L, v):
    """Gd[o] += v * alpha[t]: a dense row's expectations (v: the occurrence's value)."""
    for y in range(L):
        Gd[o, y] += v * alpha[t, y]
