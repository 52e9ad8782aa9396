"""The batch loss kernels: one block of sequences -> its loss and gradient row.

Each kernel handles the sequences ``s0 .. s1-1`` of one block and writes only
that block's gradient row ``G`` and its ``out`` row (sum of log-normalisers,
token errors, sequence errors); :mod:`crfkit.kernels.objective` runs blocks on
threads and sums rows in block order, so results never depend on the thread
count. Argument groups (see :mod:`crfkit.kernels.gradient`)::

    space = (u_ptr, u_lab, b_ptr, b_prev, b_cur, n_u, trans_offset, has_trans)
    data  = (seq_ptr, tok_ptr, tok_obs, labels)

* CRF (:func:`crf_loss_block`): forward-backward per sequence through
  :func:`crfkit.kernels.gradient.sequence_gradient`;
* MEMM and MaxEnt (:func:`local_loss_block`): a softmax per token, with the
  gold previous label for a MEMM (teacher forcing), so no forward-backward:

      f(w) = sum_t log sum_y exp s_t(y) - w . empirical + rho2/2 |w|^2

  where ``s_t`` is the score row of token t given the gold previous label.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from crfkit.config import JIT
from crfkit.kernels.gradient import (
    factored_gradient,
    posterior_errors,
    unigram_expectations,
)
from crfkit.kernels.grouped import grouped_block
from crfkit.kernels.lattice import (
    argmax,
    exp_bigram_weights,
    fill_dense_rows,
    flush_dense,
    load_transitions,
    max_of,
    occurrence_value,
)
from crfkit.kernels.runs import NO_RUNS, run_expectations, run_gradient


# --- CRF -------------------------------------------------------------------------------------
def shared_scores(W: np.ndarray, u_ptr: np.ndarray, u_lab: np.ndarray, n_u: int, n_b: int,
                  trans_offset: int, has_trans: bool, L: int, n_dense: int) -> tuple:
    """What every block of an evaluation at W reads: the transition block, its exponential
    (``exp_trans[0]``, shifted by the returned max), the exponentiated bigram weights and
    the dense rows of the ``n_dense`` most frequent observations
    (:func:`crfkit.kernels.lattice.dense_rows`).

    Allocated here, filled by kernels: an allocation inside a kernel compiles numpy's
    ``empty``/``zeros`` for each shape, a first run's time before training starts."""
    trans = np.empty((L, L))
    exp_trans = np.empty((2, L, L))  # (lattice.transition_buffer)
    trans_shift = load_transitions(W, trans_offset, has_trans, L, trans, exp_trans)
    expw = np.empty(n_b)
    exp_bigram_weights(W, n_u, n_b, expw)
    Wd = np.zeros((n_dense, L))
    fill_dense_rows(W, u_ptr, u_lab, Wd)
    return trans, exp_trans, trans_shift, expw, Wd


def _crf_loss_kernel(per_token: bool, factored: bool, runs_read: bool, grouped: bool):
    """The kernel :func:`crf_loss_block` calls, for transitions that vary per token
    (observation bigrams) or one transition matrix shared by all tokens, and for
    scores multiplied out of exponentiated weights (``factored``,
    :func:`crfkit.kernels.gradient.factors_given`) or summed and exponentiated;
    ``runs_read``: the sparse features are read from the runs
    (:mod:`crfkit.kernels.runs`; factored scores and one shared matrix only).

    Both are constants of the closure, and the per-sequence gradient is
    inlined, so Numba drops the other branches before compiling: a first run
    compiles only the version its corpus needs (the bigram half is a third of
    the lattice code; the summed scores, a first run on a binary corpus never
    needs, an eighth of the kernel's compile time). ``grouped``: the sequences run
    through forward-backward in groups (:mod:`crfkit.kernels.grouped`; factored
    scores, one shared matrix, no runs read), else one at a time.
    """

    @njit(**JIT)
    def kernel(W, space, data, L, s0, s1, trans, exp_trans, trans_shift, expw, Wd, expW, expWd,
               Gd, G, out, tok_val, runs, buffers):
        seq_ptr, tok_ptr, tok_obs, labels = data
        Gd[:] = 0.0
        G[:] = 0.0
        if grouped:
            grouped_block(space, data, L, s0, s1, exp_trans, trans_shift, expW, expWd, Gd, G, out)
            flush_dense(G, Gd, space.u_ptr, space.u_lab)
            return
        b = buffers
        work = (b[0], b[1], b[2], b[3] if per_token else exp_trans, b[4], b[5], b[6], b[7], b[8])
        alpha = work[4]
        logz_sum = 0.0
        tok_err = 0
        seq_err = 0
        for s in range(s0, s1):
            t0 = seq_ptr[s]
            T = seq_ptr[s + 1] - t0
            if T == 0:
                continue
            if runs_read:
                shift, logz = run_gradient(space, tok_ptr, tok_obs, t0, T, L, exp_trans, work, G,
                                           expW, expWd, Gd, runs, s)
            else:
                shift, logz = factored_gradient(factored, W, space, tok_ptr, tok_obs, tok_val,
                                                t0, T, L, per_token, trans, exp_trans,
                                                trans_shift, expw, Wd, Gd, work, G, expW, expWd)
            if per_token:
                logz_sum += shift
            else:
                logz_sum += trans_shift * (T - 1)
            logz_sum += logz
            wrong = posterior_errors(alpha, labels, t0, T)
            tok_err += wrong
            if wrong:
                seq_err += 1
        flush_dense(G, Gd, space.u_ptr, space.u_lab)
        out[0] = logz_sum
        out[1] = tok_err
        out[2] = seq_err

    return kernel


def block_buffers(longest: int, L: int, per_token: bool) -> tuple:
    """The loss kernel's work buffers for sequences of up to ``longest`` tokens
    (:func:`crfkit.kernels.gradient.work_buffers`; without observation bigrams the kernel
    puts the shared transitions in the fourth's place). Allocated by the caller, once a
    thread: allocating in the kernel compiles numpy's ``empty`` for each shape, in a first
    run's wait for the kernel."""
    TP = longest if per_token else 1
    return (np.empty((longest, L)), np.empty((TP, L, L)), np.empty((longest, L)),
            np.empty((TP if per_token else 0, L, L)), np.empty((longest, L)),
            np.empty((longest, L)), np.empty(longest), np.empty((L, L)), np.empty(L))


# (per_token, factored, runs_read, grouped) -> kernel
CRF_LOSS_KERNELS = {key: _crf_loss_kernel(*key) for key in
                    [(per_token, factored, runs, False) for per_token in (False, True)
                     for factored in (True, False) for runs in (False, True)
                     if not runs or (factored and not per_token)] + [(False, True, False, True)]}

# From this many labels on, a corpus whose tokens share one transition matrix runs through
# forward-backward in groups of sequences (:mod:`crfkit.kernels.grouped`). On one thread the
# kernels took the same time at 44 labels (CoNLL-2000's POS tags), the grouped one 1.1-1.3x
# less at 91-92 (Brown), 1.6x more at 22 (CoNLL-2000's chunks: the per-sequence one reads runs).
GROUPED_LABELS = 48


def crf_loss_kernel(per_token: bool, factored: bool, runs: tuple | None, n_labels: int) -> tuple:
    """The kernel for a corpus (:func:`_crf_loss_kernel`) of ``n_labels`` labels and the
    runs to give it (``runs`` None: the corpus has none)."""
    grouped = factored and not per_token and n_labels >= GROUPED_LABELS
    read = runs is not None and factored and not per_token and not grouped
    return (CRF_LOSS_KERNELS[bool(per_token), factored, read, grouped],
            runs if read else NO_RUNS)


def last_callees(space: tuple, data: tuple, L: int, Gd: np.ndarray, G: np.ndarray,
                 tok_val: np.ndarray | None, runs: tuple = NO_RUNS
                 ) -> list[tuple[object, tuple]]:
    """The kernels the CRF loss kernel calls last, with arguments of the types it calls
    them with (the kernel's own, stand-ins for its work buffers and indices). Numba
    compiles a kernel's callees in the order it meets them, and a callee found in the
    cache is loaded instead: compiled by the training process right after it forks the
    child that compiles the kernel (:mod:`crfkit.kernels.aside`), these are in the
    cache before the child gets to them, and the two processes share the work.
    ``runs``: those :func:`crf_loss_kernel` gives the kernel."""
    tok_ptr, tok_obs, u_ptr, u_lab = data[1], data[2], space[0], space[1]
    marginals, t = np.empty((1, L)), np.int64(0)
    if runs is NO_RUNS:
        expectations = (unigram_expectations, (G, tok_ptr, tok_obs, tok_val, u_ptr, u_lab, t,
                                               t, L, marginals, marginals, Gd))
    else:
        expectations = (run_expectations, (G, tok_ptr, tok_obs, *runs[1:], t, t, t, L,
                                           marginals, marginals, Gd))
    return [expectations, (posterior_errors, (marginals, data[3], t, t)),
            (flush_dense, (G, Gd, u_ptr, u_lab))]


def crf_loss_block(W: np.ndarray, space: tuple, data: tuple, per_token: bool, L: int, s0: int,
                   s1: int, trans: np.ndarray, exp_trans: np.ndarray, trans_shift: float,
                   expw: np.ndarray, Wd: np.ndarray, expW: np.ndarray, expWd: np.ndarray,
                   Gd: np.ndarray, G: np.ndarray, out: np.ndarray,
                   tok_val: np.ndarray | None, runs: tuple | None, buffers: tuple) -> None:
    """Sequences s0..s1-1: the sum of their log Z into out[0], expected counts into G.

    out[1] / out[2] count token / sequence errors of posterior decoding
    (argmax of marginals), a free by-product used for the progress line.
    ``trans``, ``exp_trans``, ``trans_shift``, ``expw`` and ``Wd`` come from
    :func:`shared_scores`, ``expW``/``expWd`` from
    :meth:`crfkit.kernels.objective.Objective.factors` (empty: exponentiate the scores). The
    observations that have a row in ``Wd`` use dense rows of weights and of expectations
    (``Gd``, the same shape: scratch, zeroed here); each of their features' gradient is
    still the same additions in the same order, from zero.
    ``per_token``: the model has observation bigrams (``phi`` differs per token).
    ``tok_val``: the data's occurrence values (None: all 1). ``runs``: the data's
    :func:`crfkit.kernels.runs.sparse_runs` for ``Gd``'s dense rows (None: none).
    ``buffers``: :func:`block_buffers` for the block's longest sequence or a longer one.
    """
    factored = tok_val is None and len(expW) > 0  # (gradient.factors_given)
    kernel, runs = crf_loss_kernel(per_token, factored, runs, L)
    kernel(W, space, data, L, s0, s1, trans, exp_trans, trans_shift, expw, Wd, expW, expWd, Gd, G,
           out, tok_val, runs, buffers)


# --- MEMM and MaxEnt: a softmax per token ---------------------------------------------------
@njit(**JIT)
def _token_scores(W, space, tok_ptr, tok_obs, tok_val, L, g, prev, score):
    """score[y] = (valued) unigram scores of token g (+ transition and bigram scores from
    ``prev`` >= 0)."""
    u_ptr, u_lab, b_ptr, b_prev, b_cur, n_u, trans_offset, has_trans = space
    score[:] = 0.0
    for j in range(tok_ptr[g], tok_ptr[g + 1]):
        o = tok_obs[j]
        v = occurrence_value(tok_val, j)
        for k in range(u_ptr[o], u_ptr[o + 1]):
            score[u_lab[k]] += v * W[k]
    if prev >= 0:
        if has_trans:
            base = trans_offset + prev * L
            for y in range(L):
                score[y] += W[base + y]
        for j in range(tok_ptr[g], tok_ptr[g + 1]):
            o = tok_obs[j]
            v = occurrence_value(tok_val, j)
            for k in range(b_ptr[o], b_ptr[o + 1]):
                if b_prev[k] == prev:
                    score[b_cur[k]] += v * W[n_u + k]


@njit(**JIT)
def _softmax_inplace(score):
    """Turn scores into probabilities; return log sum exp of the scores."""
    m = max_of(score)
    total = 0.0
    for y in range(score.shape[0]):
        score[y] = np.exp(score[y] - m)
        total += score[y]
    inv = 1.0 / total
    for y in range(score.shape[0]):
        score[y] *= inv
    return m + np.log(total)


@njit(**JIT)
def _add_expectations(G, prob, space, tok_ptr, tok_obs, tok_val, L, g, prev):
    """G += the expected counts (values) of token g's features under its local
    distribution ``prob``."""
    u_ptr, u_lab, b_ptr, b_prev, b_cur, n_u, trans_offset, has_trans = space
    for j in range(tok_ptr[g], tok_ptr[g + 1]):
        o = tok_obs[j]
        v = occurrence_value(tok_val, j)
        for k in range(u_ptr[o], u_ptr[o + 1]):
            G[k] += v * prob[u_lab[k]]
    if prev >= 0:
        if has_trans:
            base = trans_offset + prev * L
            for y in range(L):
                G[base + y] += prob[y]
        for j in range(tok_ptr[g], tok_ptr[g + 1]):
            o = tok_obs[j]
            v = occurrence_value(tok_val, j)
            for k in range(b_ptr[o], b_ptr[o + 1]):
                if b_prev[k] == prev:
                    G[n_u + k] += v * prob[b_cur[k]]


@njit(**JIT)
def local_loss_block(W, space, data, use_prev, L, s0, s1, G, out, tok_val=None):
    """Sequences s0..s1-1: the sum of the local log-normalisers into out[0], expectations into G.

    ``use_prev``: MEMM (condition on the gold previous label) or MaxEnt.
    out[1] / out[2] count token / sequence errors of the per-token argmax
    given the gold previous label (for the progress line).
    """
    seq_ptr, tok_ptr, tok_obs, labels = data
    score = np.empty(L)
    G[:] = 0.0
    lse_sum = 0.0
    tok_err = 0
    seq_err = 0
    for s in range(s0, s1):
        wrong = 0
        for g in range(seq_ptr[s], seq_ptr[s + 1]):
            prev = labels[g - 1] if use_prev and g > seq_ptr[s] else -1
            _token_scores(W, space, tok_ptr, tok_obs, tok_val, L, g, prev, score)
            if argmax(score) != labels[g]:
                wrong += 1
            lse_sum += _softmax_inplace(score)
            _add_expectations(G, score, space, tok_ptr, tok_obs, tok_val, L, g, prev)
        tok_err += wrong
        if wrong:
            seq_err += 1
    out[0] = lse_sum
    out[1] = tok_err
    out[2] = seq_err



# --- summing blocks ----------------------------------------------------------------------------
@njit(**JIT)
def add_blocks(G_blocks, fresh, g):
    """g (+)= G_blocks[0] + G_blocks[1] + ..., in row order (``fresh``: g starts at row 0).

    Called once per wave of blocks, in block order, so the sum of every
    weight's gradient is taken in the same order whatever the wave size.
    """
    start = 0
    if fresh:
        for i in range(g.size):
            g[i] = G_blocks[0, i]
        start = 1
    for b in range(start, G_blocks.shape[0]):
        for i in range(g.size):
            g[i] += G_blocks[b, i]


@njit(**JIT)
def finish_gradient(empirical, W, rho2, g):
    """g += rho2 * W - empirical: expectations minus counts, plus the L2 term.

    One loop, so the split between vectorised and scalar (possibly
    differently contracted) iterations depends only on the size.
    """
    for i in range(g.size):
        g[i] += rho2 * W[i] - empirical[i]
