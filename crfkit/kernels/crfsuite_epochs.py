"""Epoch kernels of CRFsuite's online trainers: averaged perceptron, SGD with L2,
Passive-Aggressive, AROW.

All four visit the sequences in the caller's order and update the weights
after each one, touching only the weights of the features that fire in it
(plus the transition block). Values (``tok_val``, :mod:`crfkit.kernels.valued`)
are honoured everywhere; ``tok_val is None`` is resolved when Numba compiles.
``frozen[k]`` marks weights that must stay zero (label pairs never seen in
training, CRFsuite's ``feature.possible_transitions=0``).

* **ap** (Collins, 2002, as CRFsuite's train_averaged_perceptron.c): decode
  with Viterbi; if the path is wrong, ``w += d`` with ``d = counts(gold) -
  counts(predicted)``; the loss CRFsuite reports (and stops on) is each wrong
  sequence's ratio of wrong labels. Frozen label pairs stay out of both paths'
  counts, as CRFsuite has no feature for them.
* **l2sgd** (Shalev-Shwartz et al.'s Pegasos schedule, as CRFsuite's train_l2sgd.c):
  minimise ``sum_s loss_s(w) + lam N / 2 |w|^2`` with, per sequence, the decay
  ``v = (1 - eta lam) w`` first, then the step ``w <- v - eta grad loss_s(v)``
  (the loss and gradient at the decayed weights, as CRFsuite scores them) and
  ``eta = 1 / (lam (t0 + t))`` (t: sequences seen). The decay applies to every
  weight; it is applied lazily: ``last[k]`` is the log of the cumulative decay
  when weight k was last brought up to date, ``state[0]`` the current one.
* **pa** (Crammer et al., 2006): decode with Viterbi; if the path is wrong,
  ``d = counts(gold) - counts(predicted)``, ``loss = score(pred) - score(gold)
  + cost`` (``cost`` = sqrt(errors) if error-sensitive, else 1) and the step
  ``tau d`` with ``tau = loss / |d|^2`` (PA), ``min(C, loss / |d|^2)`` (PA-I)
  or ``loss / (|d|^2 + 1 / 2C)`` (PA-II). The loss of every wrong sequence
  counts, even when ``d`` is empty and no step is taken. Averaging keeps
  Daume's sums ``U`` as ``ap`` does.
* **arow** (Crammer et al., 2009, as CRFsuite's train_arow.c): a mean ``W``
  and a diagonal variance ``S`` per weight; ``loss = score(pred) -
  score(gold) + errors``, ``alpha = loss / (gamma + sum_k S_k d_k^2)``,
  ``W += alpha S d`` and each variance shrinks on its own (CRFsuite's
  diagonal update, not the full-matrix one): ``1/S_k += d_k^2 / gamma``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from crfkit.config import JIT
from crfkit.kernels import gradient
from crfkit.kernels.decoder import path_score
from crfkit.kernels.epochs import touched_weights
from crfkit.kernels.lattice import (
    bigram_scores,
    chain_scores,
    copy_matrix,
    load_transitions,
    longest_sequence,
    transition_buffer,
    viterbi,
)

SMALLEST_DECAY = 1e-300  # l2sgd's first decay factor, where 1 - eta lam <= 0


@njit(**JIT)
def _best_path(W, space, tok_ptr, tok_obs, tok_val, t0, T, L, per_token, trans, exp_trans, psi,
               phi, delta, back, path, no_dense):
    """Viterbi path of one sequence under W into ``path``; returns its score (psi and phi
    are left holding the sequence's scores, phi[0] the transitions without bigrams)."""
    load_transitions(W, space.trans_offset, space.has_trans, L, trans, exp_trans)
    chain_scores(W, space, tok_ptr, tok_obs, tok_val, t0, T, per_token, trans, psi, phi,
                 no_dense)
    if not per_token:
        copy_matrix(trans, phi[0])
    return viterbi(psi, phi, per_token, T, L, delta, back, path)


@njit(**JIT)
def _difference(G, space, tok_ptr, tok_obs, tok_val, L, t0, T, labels, path, frozen, touched,
                idx, val):
    """d = counts(gold path) - counts(``path``) as a compact list (idx, val) without frozen
    weights; G is left at zero. Returns the list's length."""
    gradient.add_path_counts(G, space, tok_ptr, tok_obs, tok_val, L, t0, T, labels, t0, 1.0)
    gradient.add_path_counts(G, space, tok_ptr, tok_obs, tok_val, L, t0, T, path, np.int64(0),
                             -1.0)
    m = 0
    for q in range(touched_weights(space, tok_ptr, tok_obs, L, t0, T, touched)):
        k = touched[q]
        d = G[k]
        if d != 0.0:
            G[k] = 0.0
            if not frozen[k]:
                idx[m] = k
                val[m] = d
                m += 1
    return m


# The margin a wrong path must be beaten by, from its number of wrong labels d:
# 1 (PA, not error-sensitive), sqrt(d) (PA), d (AROW, as CRFsuite's train_arow.c);
# none: the bare score difference (CRF++'s MIRA adds its own term, crfkit.kernels.mira).
# np.int64, not int: a jitted caller passing a global int passes a literal, and Numba
# would compile margin_loss once per margin kind instead of once.
MARGIN_ONE, MARGIN_SQRT, MARGIN_ERRORS, MARGIN_NONE = (np.int64(k) for k in range(4))


@njit(**JIT)
def margin_loss(W, space, data, per_token, L, s, margin, bufs, tok_val, G, frozen, touched,
                 idx, val):
    """Decode sequence s; returns (errors, loss, length of d) -- d in (idx, val)."""
    seq_ptr, tok_ptr, tok_obs, labels = data
    trans, exp_trans, psi, phi, delta, back, path, no_dense = bufs
    t0 = seq_ptr[s]
    T = seq_ptr[s + 1] - t0
    if T == 0:
        return 0, 0.0, 0
    best = _best_path(W, space, tok_ptr, tok_obs, tok_val, t0, T, L, per_token, trans,
                      exp_trans, psi, phi, delta, back, path, no_dense)
    errors = 0
    for t in range(T):
        if path[t] != labels[t0 + t]:
            errors += 1
    if errors == 0:
        return 0, 0.0, 0
    gold = path_score(psi, phi, per_token, T, labels[t0:t0 + T])
    if margin == MARGIN_SQRT:
        cost = np.sqrt(errors)
    elif margin == MARGIN_ERRORS:
        cost = float(errors)
    elif margin == MARGIN_NONE:
        cost = 0.0
    else:
        cost = 1.0
    m = _difference(G, space, tok_ptr, tok_obs, tok_val, L, t0, T, labels, path, frozen,
                    touched, idx, val)
    return errors, best - gold + cost, m


@njit(**JIT)
def online_buffers(seq_ptr, L, per_token):
    Tmax = longest_sequence(seq_ptr, np.int64(0), len(seq_ptr) - 1)
    TP = Tmax if per_token else 1
    return (np.empty((L, L)), np.empty((1, L, L)), np.empty((Tmax, L)), np.empty((TP, L, L)),
            np.empty((Tmax, L)), np.empty((Tmax, L), dtype=np.int32),
            np.empty(Tmax, dtype=np.int32), np.empty((0, L)))


# --- averaged perceptron ------------------------------------------------------------------
@njit(**JIT)
def ap_epoch(W, U, seen, order, space, data, per_token, L, frozen, G, touched, idx, val, out,
             tok_val=None):
    """One averaged-perceptron pass over ``order``: a wrong path moves W by d (gold counts
    minus predicted counts) and U by ``(seen + i) d`` (Daume's sums). out = [sum over the
    wrong sequences of their ratio of wrong labels (CRFsuite's loss), token errors,
    sequence errors]."""
    bufs = online_buffers(data[0], L, per_token)
    seq_ptr = data[0]
    loss_sum = 0.0
    tok_err = 0
    seq_err = 0
    for i in range(len(order)):
        c = float(seen + i)
        s = order[i]
        errors, _, m = margin_loss(W, space, data, per_token, L, s, MARGIN_ONE, bufs, tok_val,
                                    G, frozen, touched, idx, val)
        if errors == 0:
            continue
        tok_err += errors
        seq_err += 1
        loss_sum += errors / (seq_ptr[s + 1] - seq_ptr[s])
        for q in range(m):
            W[idx[q]] += val[q]
            U[idx[q]] += c * val[q]
    out[0] = loss_sum
    out[1] = tok_err
    out[2] = seq_err


# --- Passive-Aggressive ---------------------------------------------------------------------
@njit(**JIT)
def pa_epoch(W, U, seen, order, space, data, per_token, L, pa_type, C, error_sensitive,
             frozen, G, touched, idx, val, out, tok_val=None):
    """One PA pass over ``order`` (module docstring); W and U updated in place.
    out = [sum of losses, token errors, sequence errors]."""
    bufs = online_buffers(data[0], L, per_token)
    margin = MARGIN_SQRT if error_sensitive else MARGIN_ONE
    loss_sum = 0.0
    tok_err = 0
    seq_err = 0
    for i in range(len(order)):
        c = float(seen + i)
        errors, loss, m = margin_loss(W, space, data, per_token, L, order[i], margin, bufs,
                                       tok_val, G, frozen, touched, idx, val)
        if errors == 0:
            continue
        tok_err += errors
        seq_err += 1
        loss_sum += loss
        norm2 = 0.0
        for q in range(m):
            norm2 += val[q] * val[q]
        if norm2 == 0.0:  # both paths fire the same features: no step moves them apart
            continue
        if pa_type == 0:
            tau = loss / norm2
        elif pa_type == 1:
            tau = min(C, loss / norm2)
        else:
            tau = loss / (norm2 + 0.5 / C)
        for q in range(m):
            W[idx[q]] += tau * val[q]
            U[idx[q]] += c * tau * val[q]
    out[0] = loss_sum
    out[1] = tok_err
    out[2] = seq_err


# --- AROW ------------------------------------------------------------------------------------
@njit(**JIT)
def arow_epoch(W, S, order, space, data, per_token, L, gamma, frozen, G, touched, idx, val, out,
               tok_val=None):
    """One AROW pass over ``order`` (module docstring); W (means) and S (variances) updated
    in place. out = [sum of losses, token errors, sequence errors]."""
    bufs = online_buffers(data[0], L, per_token)
    loss_sum = 0.0
    tok_err = 0
    seq_err = 0
    for i in range(len(order)):
        errors, loss, m = margin_loss(W, space, data, per_token, L, order[i], MARGIN_ERRORS,
                                       bufs, tok_val, G, frozen, touched, idx, val)
        if errors == 0:
            continue
        tok_err += errors
        seq_err += 1
        loss_sum += loss
        confidence = gamma
        for q in range(m):
            confidence += S[idx[q]] * val[q] * val[q]
        alpha = loss / confidence
        for q in range(m):
            k = idx[q]
            W[k] += alpha * S[k] * val[q]
            S[k] = 1.0 / (1.0 / S[k] + val[q] * val[q] / gamma)
    out[0] = loss_sum
    out[1] = tok_err
    out[2] = seq_err


# --- SGD with L2 -------------------------------------------------------------------------------
@njit(**JIT)
def l2sgd_epoch(W, last, state, order, space, data, per_token, L, lam, t0_, frozen, G, touched,
                expw, out, tok_val=None):
    """One pass of SGD-L2 over ``order`` (module docstring); W, last and state updated in
    place (state = [log of the cumulative decay, sequences seen]). Weights not touched by
    the pass are left behind: :func:`catch_up` brings them up to date. ``expw`` (n_b): the
    exponentiated bigram weights the binary gradient reads, refreshed for the bigram
    features of each sequence once their weights are up to date. out = [sum of the
    sequences' losses, token errors, sequence errors, 1 if a sequence overflowed]."""
    seq_ptr, tok_ptr, tok_obs, labels = data
    u_ptr, u_lab, b_ptr, b_prev, b_cur, n_u, trans_offset, has_trans = space
    n_b = len(b_prev)
    trans = np.empty((L, L))
    exp_trans = transition_buffer(L)
    Tmax = longest_sequence(seq_ptr, np.int64(0), len(seq_ptr) - 1)
    work = gradient.work_buffers(Tmax, L, per_token, exp_trans)
    psi, phi, alpha = work[0], work[1], work[4]
    no_dense = np.empty((0, L))
    no_factors = np.empty(0)  # scores summed, then exponentiated (no unigram_factors)
    log_a = state[0]
    t = state[1]
    loss = 0.0
    tok_err = 0
    seq_err = 0
    for i in range(len(order)):
        s = order[i]
        t0 = seq_ptr[s]
        T = seq_ptr[s + 1] - t0
        if T == 0:
            continue
        n = touched_weights(space, tok_ptr, tok_obs, L, t0, T, touched)
        eta = 1.0 / (lam * (t0_ + t))  # a first factor <= 0 (t0 < 1) decays zero weights
        log_a += np.log(max(1.0 - eta * lam, SMALLEST_DECAY))
        _bring_up_to_date(W, last, log_a, touched, n, per_token, n_u, n_b, expw)
        trans_shift = load_transitions(W, space.trans_offset, space.has_trans, L, trans, exp_trans)
        shift, logz = gradient.sequence_gradient(W, space, tok_ptr, tok_obs, tok_val, t0, T, L,
                                                 per_token, trans, exp_trans, trans_shift, expw,
                                                 no_dense, no_dense, work, G, no_factors,
                                                 no_dense)
        gradient.add_path_counts(G, space, tok_ptr, tok_obs, tok_val, L, t0, T, labels, t0, -1.0)
        if per_token and tok_val is None:  # phi for the gold path's score (valued: filled)
            bigram_scores(W, tok_ptr, tok_obs, None, b_ptr, b_prev, b_cur, n_u, trans, t0, T,
                          phi)
        logz += shift if per_token else trans_shift * (T - 1)
        if not np.isfinite(logz):
            out[3] = 1.0
            break
        if not per_token:
            copy_matrix(trans, phi[0])
        loss += logz - path_score(psi, phi, per_token, T, labels[t0:t0 + T])
        wrong = gradient.posterior_errors(alpha, labels, t0, T)
        tok_err += wrong
        if wrong:
            seq_err += 1
        _l2_step(W, G, frozen, touched, n, eta)
        t += 1.0
    state[0] = log_a
    state[1] = t
    out[0] = loss
    out[1] = tok_err
    out[2] = seq_err


@njit(**JIT)
def _bring_up_to_date(W, last, log_a, touched, n, per_token, n_u, n_b, expw):
    """Apply the pending decay of the ``n`` weights a sequence reads (and refresh the
    exponentiated bigram weights the binary gradient reads)."""
    for q in range(n):
        k = touched[q]
        if last[k] != log_a:
            W[k] *= np.exp(log_a - last[k])
            last[k] = log_a
        if per_token and n_u <= k < n_u + n_b:
            expw[k - n_u] = np.exp(W[k])


@njit(**JIT)
def _l2_step(W, G, frozen, touched, n, eta):
    """The gradient step ``-eta G`` on the touched weights (already decayed), G cleared: a
    weight touched twice gets its step once."""
    for q in range(n):
        k = touched[q]
        if not frozen[k]:
            W[k] -= eta * G[k]
        G[k] = 0.0


@njit(**JIT)
def catch_up(W, last, log_a):
    """Apply every weight's pending decay (before the weights are read as a whole)."""
    for k in range(W.size):
        if last[k] != log_a:
            W[k] *= np.exp(log_a - last[k])
            last[k] = log_a


# --- Python drivers: what crfkit.optim.l2sgd / pa / arow call ---------------------------------
class OnlineEpochs:
    """A dataset's arrays and the buffers the epochs reuse; ``frozen`` holds the indices of
    the weights that must stay zero (or None)."""

    def __init__(self, space, data, frozen: np.ndarray | None = None) -> None:
        from crfkit.kernels.epochs import max_touched

        self.space, self.data, self.tok_val = space.arrays(), data.arrays(), data.tok_val
        self.per_token, self.L = space.n_b > 0, space.n_labels
        self.G = np.zeros(space.n_weights)
        size = max_touched(self.space, *self.data[:3], self.L)
        self.touched = np.empty(size, dtype=np.int64)
        self.idx = np.empty(size, dtype=np.int64)
        self.val = np.empty(size)
        self.expw = np.empty(space.n_b)
        self.frozen = np.zeros(space.n_weights, dtype=np.bool_)
        if frozen is not None:
            self.frozen[frozen] = True
        self.out = np.zeros(4)

    def ap(self, W: np.ndarray, U: np.ndarray, order: np.ndarray,
           seen: int) -> tuple[float, int, int]:
        ap_epoch(W, U, seen, order, self.space, self.data, self.per_token, self.L, self.frozen,
                 self.G, self.touched, self.idx, self.val, self.out, self.tok_val)
        return float(self.out[0]), int(self.out[1]), int(self.out[2])

    def pa(self, W: np.ndarray, U: np.ndarray, order: np.ndarray, seen: int, pa_type: int,
           C: float, error_sensitive: bool) -> tuple[float, int, int]:
        pa_epoch(W, U, seen, order, self.space, self.data, self.per_token, self.L, pa_type,
                 float(C), error_sensitive, self.frozen, self.G, self.touched, self.idx,
                 self.val, self.out, self.tok_val)
        return float(self.out[0]), int(self.out[1]), int(self.out[2])

    def arow(self, W: np.ndarray, S: np.ndarray, order: np.ndarray,
             gamma: float) -> tuple[float, int, int]:
        arow_epoch(W, S, order, self.space, self.data, self.per_token, self.L, float(gamma),
                   self.frozen, self.G, self.touched, self.idx, self.val, self.out,
                   self.tok_val)
        return float(self.out[0]), int(self.out[1]), int(self.out[2])

    def l2sgd(self, W: np.ndarray, last: np.ndarray, state: np.ndarray, order: np.ndarray,
              lam: float, t0: float) -> tuple[float, int, int, bool]:
        self.out[3] = 0.0
        l2sgd_epoch(W, last, state, order, self.space, self.data, self.per_token, self.L,
                    float(lam), float(t0), self.frozen, self.G, self.touched, self.expw,
                    self.out, self.tok_val)
        catch_up(W, last, state[0])
        return float(self.out[0]), int(self.out[1]), int(self.out[2]), bool(self.out[3])
