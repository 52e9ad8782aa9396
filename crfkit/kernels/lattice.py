"""Numba kernels: feature scores, scaled forward-backward, expectations, Viterbi.

Shapes and meaning (one sequence of ``T`` tokens, ``L`` labels):

* ``psi[t, y]``      unigram score: sum of the weights of the unigram features
                     firing at ``t`` for label ``y``;
* ``phi[t, a, b]``   transition score from label ``a`` at ``t-1`` to ``b`` at
                     ``t``: the dense transition block plus the observation
                     bigrams firing at ``t``. When no observation bigram exists
                     (``per_token`` false) only ``phi[0]`` is used, for all t.
* ``alpha, beta``    scaled forward/backward vectors (CRFsuite's method): each
                     ``alpha[t]`` sums to one, its normaliser is ``scale[t]``,
                     and ``alpha[t] * beta[t]`` is the marginal of token ``t``.

Recurrences, with ``U[t] = exp(psi[t] - max psi[t])`` and ``M = exp(phi - max phi)``:

    alpha[0]   = U[0] / scale[0]
    alpha[t,b] = U[t,b] * sum_a alpha[t-1,a] M[t,a,b] / scale[t]
    beta[T-1]  = 1
    beta[t,a]  = sum_b M[t+1,a,b] U[t+1,b] beta[t+1,b] / scale[t+1]
    log Z      = sum_t log scale[t] + the subtracted maxima
    P(y[t-1]=a, y[t]=b) = alpha[t-1,a] M[t,a,b] U[t,b] beta[t,b] / scale[t]

Subtracting the maxima keeps every factor in [0, 1], so nothing overflows.
The batch CRF objective skips the unigram maxima when it can: ``U[t]`` is then
the unshifted product of the token's exponentiated weights
(:func:`unigram_factors`), taken only while every such product is bounded by
``exp(+-FACTOR_RANGE)``; the scales absorb what the maxima did.
Viterbi works in log space (max-plus) and needs no exponentials at all.
Nothing here parses text or allocates inside a per-token loop.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from crfkit.config import JIT, NORM_MAXENT, NORM_MEMM
from crfkit.kernels.scaled import scaled_logz


# --- encoding: features -> scores ----------------------------------------------------------
@njit(**JIT)
def unigram_scores(W, tok_ptr, tok_obs, tok_val, u_ptr, u_lab, t0, T, psi, Wd):
    """psi[:T] = unigram scores of tokens t0 .. t0+T-1 (each weight times its
    occurrence's value: :func:`occurrence_value`).

    ``Wd`` (K, L) holds the weights of observations 0..K-1 as dense rows
    (see :func:`dense_rows`; K may be 0): their scores are added as whole
    rows, which vectorises, instead of feature by feature through ``u_lab``.
    Adding a row's zeros changes nothing, so the scores are the same bits.
    """
    psi[:T] = 0.0
    K = Wd.shape[0]
    L = psi.shape[1]
    for t in range(T):
        for j in range(tok_ptr[t0 + t], tok_ptr[t0 + t + 1]):
            o = tok_obs[j]
            v = occurrence_value(tok_val, j)
            if o < K:
                for y in range(L):
                    psi[t, y] += v * Wd[o, y]
            else:
                for k in range(u_ptr[o], u_ptr[o + 1]):
                    psi[t, u_lab[k]] += v * W[k]


@njit(**JIT)
def unigram_factors(expW, tok_ptr, tok_obs, u_ptr, u_lab, t0, T, expu, expWd):
    """expu[:T] = exp(unigram scores) of tokens t0 .. t0+T-1, unshifted, as the products
    of their features' exponentiated weights (``expW``; ``expWd`` for the dense rows).

    What :func:`unigram_scores` then :func:`exp_shifted` give up to rounding (and the
    shift, which forward-backward's scaling makes unnecessary), without an exponential
    per token and label: the exponentials are taken once per weight and evaluation
    (:func:`exp_range`), a token costs one multiplication per feature instead of
    one addition, and its L exponentials are gone (~13% of an evaluation's CPU time on
    CoNLL-2000).
    """
    expu[:T] = 1.0
    for t in range(T):
        for j in range(tok_ptr[t0 + t], tok_ptr[t0 + t + 1]):
            o = tok_obs[j]
            if o < expWd.shape[0]:
                multiply_row(expu, t, expWd, o)
            else:
                for k in range(u_ptr[o], u_ptr[o + 1]):
                    expu[t, u_lab[k]] *= expW[k]


@njit(inline="always", **JIT)
def multiply_row(expu, t, expWd, o):
    """expu[t] *= expWd[o]: a dense row's factors."""
    for y in range(expu.shape[1]):
        expu[t, y] *= expWd[o, y]


# The products of unigram_factors stay within exp(+-FACTOR_RANGE), far inside the normal
# doubles (exp(+-708)): forward-backward's sums and scales keep their headroom. Weights
# W allow them when max|W| * (the most features a token has per label) stays below it,
# or failing that the tighter factor_bound (crfkit.kernels.objective.Objective.factors);
# else the scores are summed as before.
FACTOR_RANGE = 300.0


@njit(**JIT)
def max_abs(W, n):
    """max |W[k]| over k < n (0 for n = 0)."""
    m = 0.0
    for k in range(n):
        m = max(m, abs(W[k]))
    return m


@njit(**JIT)
def factor_bound(W, u_ptr, tok_ptr, tok_obs, obs_max):
    """The largest |log| a product of :func:`unigram_factors` can reach at W: over the
    tokens, the sum of each feature's largest |W| over its labels (``obs_max``: scratch,
    one per observation). Tighter than max|W| times the most features a token has:
    the largest weights rarely fire together."""
    for o in range(len(u_ptr) - 1):
        m = 0.0
        for k in range(u_ptr[o], u_ptr[o + 1]):
            m = max(m, abs(W[k]))
        obs_max[o] = m
    bound = 0.0
    for t in range(len(tok_ptr) - 1):
        s = 0.0
        for j in range(tok_ptr[t], tok_ptr[t + 1]):
            s += obs_max[tok_obs[j]]
        bound = max(bound, s)
    return bound


@njit(**JIT)
def exp_range(W, out, lo, hi):
    """out[lo:hi] = exp(W[lo:hi]): one thread's share of the exponentiated weights."""
    for k in range(lo, hi):
        out[k] = np.exp(W[k])


@njit(**JIT)
def dense_factors(expW, u_ptr, u_lab, expWd):
    """expWd (K, L) = the exponentiated weights of observations 0..K-1 as dense rows, 1
    (exp 0) for a label without a feature: :func:`dense_rows` for :func:`unigram_factors`."""
    K, L = expWd.shape
    for o in range(K):
        for y in range(L):
            expWd[o, y] = 1.0
        for k in range(u_ptr[o], u_ptr[o + 1]):
            expWd[o, u_lab[k]] = expW[k]


@njit(inline="always", **JIT)
def occurrence_value(tok_val, j):
    """The value of observation occurrence j: ``tok_val[j]``, or 1 in a binary corpus.

    A binary corpus passes ``tok_val=None``; Numba compiles a kernel per
    argument type and prunes the ``is None`` branch, and a product by the
    constant 1.0 is folded away, so the binary kernels compute exactly what
    they computed before values existed (same machine code, same bits), and
    one function serves binary and valued corpora.
    """
    if tok_val is None:
        return 1.0
    return tok_val[j]


@njit(**JIT)
def dense_rows(W, u_ptr, u_lab, K, L):
    """The unigram weights of observations 0..K-1 as a dense (K, L) table.

    Observation ids go to the most frequent first, so the first few thousand
    cover most of the features that fire (91% on CoNLL-2000 for K=4096).
    """
    Wd = np.zeros((K, L))
    fill_dense_rows(W, u_ptr, u_lab, Wd)
    return Wd


@njit(**JIT)
def fill_dense_rows(W, u_ptr, u_lab, Wd):
    """:func:`dense_rows` into a table of zeros (K, L) given."""
    for o in range(Wd.shape[0]):
        for k in range(u_ptr[o], u_ptr[o + 1]):
            Wd[o, u_lab[k]] = W[k]


@njit(**JIT)
def flush_dense(G, Gd, u_ptr, u_lab):
    """G[k] += Gd[o, label of k] for the features of observations 0..K-1 (see accumulate)."""
    for o in range(Gd.shape[0]):
        for k in range(u_ptr[o], u_ptr[o + 1]):
            G[k] += Gd[o, u_lab[k]]


@njit(**JIT)
def copy_matrix(src, dst):
    """dst[:, :] = src, as a loop: Numba's array assignment checks the shapes, and compiling
    the error message of that check took seconds of a first run."""
    for a in range(src.shape[0]):
        for b in range(src.shape[1]):
            dst[a, b] = src[a, b]


@njit(**JIT)
def bigram_scores(W, tok_ptr, tok_obs, tok_val, b_ptr, b_prev, b_cur, n_u, trans, t0, T, phi):
    """phi[t] = trans + (valued) observation bigrams at t, for t >= 1."""
    for t in range(1, T):
        copy_matrix(trans, phi[t])
        for j in range(tok_ptr[t0 + t], tok_ptr[t0 + t + 1]):
            o = tok_obs[j]
            v = occurrence_value(tok_val, j)
            for k in range(b_ptr[o], b_ptr[o + 1]):
                phi[t, b_prev[k], b_cur[k]] += v * W[n_u + k]


@njit(**JIT)
def longest_sequence(seq_ptr, s0, s1):
    """Length of the longest of sequences s0..s1-1 (at least 1): a block's buffer size.

    Callers in jitted code pass ``np.int64(0)``, not ``0``: a literal argument makes
    Numba compile a second, Literal[int] specialisation (the same holds for literal
    bools given to the other shared kernels: ``np.bool_(True)``)."""
    longest = 1
    for s in range(s0, s1):
        longest = max(longest, seq_ptr[s + 1] - seq_ptr[s])
    return longest


@njit(**JIT)
def transition_block(W, trans_offset, has_trans, L):
    """The dense L x L transition scores (zeros when the model has none)."""
    trans = np.zeros((L, L))
    if has_trans:
        for a in range(L):
            for b in range(L):
                trans[a, b] = W[trans_offset + a * L + b]
    return trans


# A feature space as the kernels take it (FeatureSpace.arrays()):
#     space = (u_ptr, u_lab, b_ptr, b_prev, b_cur, n_u, trans_offset, has_trans)
@njit(inline="always", **JIT)
def chain_scores(W, space, tok_ptr, tok_obs, tok_val, t0, T, per_token, base, psi, phi, Wd):
    """psi[:T] of tokens t0 .. t0+T-1 and, with ``per_token``, phi[1:T] = ``base`` + the
    observation bigrams (without, every token shares one matrix and phi is left alone).

    Inlined into its callers (``inline="always"``), so a caller whose ``per_token``
    is a compile-time constant does not compile the bigram half at all.
    """
    u_ptr, u_lab, b_ptr, b_prev, b_cur, n_u, trans_offset, has_trans = space
    unigram_scores(W, tok_ptr, tok_obs, tok_val, u_ptr, u_lab, t0, T, psi, Wd)
    if per_token:
        bigram_scores(W, tok_ptr, tok_obs, tok_val, b_ptr, b_prev, b_cur, n_u, base, t0, T,
                      phi)


@njit(**JIT)
def load_transitions(W, trans_offset, has_trans, L, trans, exp_trans):
    """trans = the L x L transition block (zeros without one) and exp_trans[0] its
    exponential shifted by the returned maximum, written into given buffers; with a
    second slice (:func:`transition_buffer`), exp_trans[1] = exp_trans[0] transposed,
    for :func:`shared_forward`."""
    shift = -np.inf  # the max, as max_of finds it (NaN if any entry is)
    for a in range(L):
        for b in range(L):
            v = W[trans_offset + a * L + b] if has_trans else 0.0
            trans[a, b] = v
            if shift == shift and (v > shift or v != v):
                shift = v
    # exp_shifted's arithmetic, written out: a first run compiles neither it nor a reshape
    if not np.isfinite(shift):
        shift = 0.0
    for a in range(L):
        for b in range(L):
            exp_trans[0, a, b] = np.exp(trans[a, b] - shift)
    if exp_trans.shape[0] > 1:
        for a in range(L):
            for b in range(L):
                exp_trans[1, b, a] = exp_trans[0, a, b]
    return shift


@njit(**JIT)
def transition_buffer(L):
    """Room for the exponentiated transition block and its transpose (load_transitions)."""
    return np.empty((2, L, L))


# --- lattice: scores -> log Z, marginals, best path ----------------------------------------
@njit(**JIT)
def max_of(src):
    """max(src) of a row or a matrix, NaN if any entry is NaN (as ``src.max()``).

    Loops: ``ndarray.max`` and ``np.argmax`` are generic in Numba and cost
    about a second of compilation each on a first run.
    """
    m = -np.inf
    if src.ndim == 1:
        for i in range(src.shape[0]):
            if src[i] > m or src[i] != src[i]:
                m = src[i]
                if m != m:
                    break
    else:
        for a in range(src.shape[0]):
            for b in range(src.shape[1]):
                if src[a, b] > m or (src[a, b] != src[a, b] and m == m):
                    m = src[a, b]
    return m


@njit(**JIT)
def argmax(row):
    """Index of the first largest entry of a row, or of its first NaN (as ``np.argmax``)."""
    arg = 0
    for y in range(1, row.shape[0]):
        if row[arg] != row[arg]:
            break
        if row[y] > row[arg] or row[y] != row[y]:
            arg = y
    return arg


@njit(inline="always", **JIT)
def shift_of(src):
    """The shift :func:`exp_shifted` takes off ``src``: its max, 0 if that is not finite."""
    m = max_of(src)
    return m if np.isfinite(m) else 0.0


@njit(**JIT)
def exp_shifted(src, dst):
    """dst = exp(src - max(src)) for a row or a matrix; returns the max (0 if it is not finite).

    ``src.ndim`` is a compile-time constant, so Numba keeps only the loop of
    the rank it compiles for: as fast as a function per rank (a flat
    ``reshape`` view costs ~20% at small label counts).
    """
    m = shift_of(src)
    if src.ndim == 1:
        for i in range(src.shape[0]):
            dst[i] = np.exp(src[i] - m)
    else:
        for a in range(src.shape[0]):
            for b in range(src.shape[1]):
                dst[a, b] = np.exp(src[a, b] - m)
    return m


@njit(**JIT)
def exp_transitions(phi, T, expb):
    """expb[t] = exp(phi[t] - max) for t >= 1; returns the sum of the maxima."""
    shift = 0.0
    for t in range(1, T):
        shift += exp_shifted(phi[t], expb[t])
    return shift


# exp(700) ~ 1e304: an entry past it could overflow forward-backward's sums.
EXP_SAFE = float(np.exp(700.0))


@njit(**JIT)
def exp_bigram_weights(W, n_u, n_b, expw):
    """expw[k] = exp(weight of bigram feature k): once per evaluation, not per occurrence."""
    for k in range(n_b):
        expw[k] = np.exp(W[n_u + k])


@njit(**JIT)
def exp_transitions_factors(W, b_ptr, b_prev, b_cur, n_u, tok_ptr, tok_obs, t0, T, trans,
                            exp_trans, trans_shift, expw, phi, expb):
    """expb[t] = exp(phi[t] - trans_shift) for t >= 1, with no exponential per token.

    phi[t] is the transition block plus the observation bigrams firing at t, so
    its exponential is the exponentiated block (``exp_trans``) times
    ``expw[k] = exp(w_k)`` for each bigram feature k firing there: a copy and
    a multiplication per feature instead of an exponential per feature
    (CoNLL-2000 with Wapiti-style ``*`` patterns: ~600 per token). A token
    whose product would leave the safe range is recomputed from its scores
    (``phi[t]``, filled here only then) with its own shift. Returns the sum
    of the shifts.
    """
    shift = 0.0
    for t in range(1, T):
        copy_matrix(exp_trans, expb[t])
        safe = True
        for j in range(tok_ptr[t0 + t], tok_ptr[t0 + t + 1]):
            o = tok_obs[j]
            for k in range(b_ptr[o], b_ptr[o + 1]):
                v = expb[t, b_prev[k], b_cur[k]] * expw[k]
                expb[t, b_prev[k], b_cur[k]] = v
                if not v < EXP_SAFE:
                    safe = False
        if safe:
            shift += trans_shift
            continue
        copy_matrix(trans, phi[t])
        for j in range(tok_ptr[t0 + t], tok_ptr[t0 + t + 1]):
            o = tok_obs[j]
            for k in range(b_ptr[o], b_ptr[o + 1]):
                phi[t, b_prev[k], b_cur[k]] += W[n_u + k]
        shift += exp_shifted(phi[t], expb[t])
    return shift


@njit(**JIT)
def forward_backward(psi, expb, per_token, T, L, expu, alpha, beta, scale, tmp):
    """Scaled forward-backward over one sequence, transitions already exponentiated.

    Returns log Z minus the transition maxima (see :func:`exp_transitions`;
    the caller adds them), or NaN if a scale underflows.
    """
    logz = exp_unigrams(psi, T, expu)
    return scaled_logz(expu, expb, per_token, T, L, alpha, beta, scale, tmp, logz)


@njit(inline="always", **JIT)
def exp_unigrams(psi, T, expu):
    """expu[t] = exp(psi[t] - max psi[t]) for t < T; returns the sum of the maxima."""
    shift = 0.0
    for t in range(T):
        shift += exp_shifted(psi[t], expu[t])
    return shift


@njit(**JIT)
def max_forward(psi, phi, per_token, T, L, delta, back):
    """delta[t, b]: the best score of a path ending in b at t (max-plus forward); with rows
    in ``back`` (it may have none), the best predecessor too. Ties go to the lower label."""
    keep = back.shape[0] > 0
    for y in range(L):
        delta[0, y] = psi[0, y]
    for t in range(1, T):
        M = phi[t] if per_token else phi[0]
        for b in range(L):
            best = -np.inf
            arg = 0
            for a in range(L):
                v = delta[t - 1, a] + M[a, b]
                if v > best:
                    best = v
                    arg = a
            delta[t, b] = best + psi[t, b]
            if keep:
                back[t, b] = arg


@njit(**JIT)
def viterbi(psi, phi, per_token, T, L, delta, back, path):
    """Best label path of one sequence (max-plus); returns its score. Ties go to the lower label."""
    max_forward(psi, phi, per_token, T, L, delta, back)
    best = delta[T - 1, 0]
    arg = 0
    for y in range(1, L):
        if delta[T - 1, y] > best:
            best = delta[T - 1, y]
            arg = y
    path[T - 1] = arg
    for t in range(T - 1, 0, -1):
        path[t - 1] = back[t, path[t]]
    return best


@njit(**JIT)
def _log_softmax(src, dst):
    """dst = src - log sum exp(src) (src and dst may be the same row)."""
    m = max_of(src)
    total = 0.0
    for y in range(src.shape[0]):
        total += np.exp(src[y] - m)
    lse = m + np.log(total)
    for y in range(src.shape[0]):
        dst[y] = src[y] - lse


@njit(**JIT)
def local_normalise(psi, phi, T, L, local, row):
    """Rewrite a MEMM's or MaxEnt's scores so that path scores are log-probabilities.

    MaxEnt: ``psi[t] = log softmax psi[t]``. MEMM (see :mod:`crfkit.kernels.loss`):
    ``psi[0] = log softmax psi[0]``, ``phi[t, a] = log softmax (psi[t] +
    phi[t, a])`` and ``psi[t] = 0`` for t >= 1. The CRF lattice code then
    works unchanged, with log Z = 0 unless constraints remove paths.
    """
    if local == NORM_MEMM:
        for t in range(1, T):
            for a in range(L):
                for b in range(L):
                    row[b] = psi[t, b] + phi[t, a, b]
                _log_softmax(row, phi[t, a])
            psi[t] = 0.0
        _log_softmax(psi[0], psi[0])
    elif local == NORM_MAXENT:
        for t in range(T):
            _log_softmax(psi[t], psi[t])
