"""Numba kernels of the online trainers: one epoch of SGD-L1, one of the averaged perceptron.

Both visit the sequences in a given order (the caller shuffles) and update
the flat weight vector ``W`` in place after each sequence, so they are
serial by nature; they reuse the lattice kernels of :mod:`crfkit.kernels.lattice`
and touch only the weights of the features firing in the current sequence
(plus the transition block), never the whole vector.

SGD with the cumulative L1 penalty (Tsuruoka, Tsujii & Ananiadou, 2009)
minimises ``sum_s loss_s(w) + rho1 |w|_1`` one sequence at a time with the
learning rate ``eta_k = eta0 * alpha**(k / N)`` (k: sequences seen so far, N:
sequences per epoch). Plain SGD steps never land on zero; the cumulative
penalty does. ``u`` is the total L1 penalty each weight could have received
so far (``sum_k eta_k rho1 / N``), ``q[i]`` what weight i actually received;
after the gradient step a touched weight is pulled towards zero by
``u + q[i]`` (``u - q[i]`` if negative) and clipped at zero. Weights not
touched by a sequence wait until they are: the penalty is applied lazily.

The averaged perceptron (Collins, 2002) decodes each sequence with Viterbi
and, if the path is wrong, adds the gold path's features and subtracts the
predicted path's (features the space lacks are skipped). The average of the
weight vectors after every sequence is kept with Daumé's trick: an update
``d`` made at sequence number ``c`` (0-based, counted over all epochs) also
adds ``c * d`` to ``U``; after ``C`` sequences the average is ``W - U / C``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from crfkit.config import JIT
from crfkit.kernels import lattice

# Tiny per-weight helpers called millions of times per epoch: without Numba-level
# inlining each call passes its arrays by value and costs ~100 ns (measured: the
# SGD update walk ran 6x slower than the forward-backward it follows).
INLINE_JIT = {**JIT, "inline": "always"}


@njit(**JIT)
def _load_transitions(W, trans_offset, has_trans, L, trans):
    """trans = the current L x L transition block (zeros without one)."""
    for a in range(L):
        for b in range(L):
            trans[a, b] = W[trans_offset + a * L + b] if has_trans else 0.0


@njit(**JIT)
def _sequence_scores(W, tok_ptr, tok_obs, u_ptr, u_lab, b_ptr, b_prev, b_cur, n_u, trans_offset,
                     has_trans, per_token, L, t0, T, trans, psi, phi, no_dense):
    """trans, psi[:T] and phi of tokens t0 .. t0+T-1 at the current weights.

    With ``per_token`` phi[1:T] holds the transition scores of each token,
    else only phi[0] is used and holds the transition block.
    """
    _load_transitions(W, trans_offset, has_trans, L, trans)
    lattice.unigram_scores(W, tok_ptr, tok_obs, u_ptr, u_lab, t0, T, psi, no_dense)
    if per_token:
        lattice.bigram_scores(W, tok_ptr, tok_obs, b_ptr, b_prev, b_cur, n_u, trans, t0, T, phi)
    else:
        lattice.copy_matrix(trans, phi[0])


# --- SGD with the cumulative L1 penalty --------------------------------------------------------
@njit(**INLINE_JIT)
def _penalise(W, q, k, u):
    """Tsuruoka's cumulative L1 step for weight k (module docstring)."""
    z = W[k]
    if z > 0.0:
        W[k] = max(0.0, z - (u + q[k]))
    elif z < 0.0:
        W[k] = min(0.0, z + (u - q[k]))
    q[k] += W[k] - z


@njit(**INLINE_JIT)
def _step(W, G, q, k, eta, u, l1):
    """Apply the gradient collected in G[k] and reset it, then the L1 penalty.

    A weight fired twice in a sequence is visited twice; the second visit
    finds G[k] == 0 and does nothing, so each weight moves once per sequence
    without a "visited" mark. (A gradient of exactly 0 also skips the
    penalty; being cumulative, the penalty catches up at the next visit.)
    """
    if G[k] == 0.0:
        return
    W[k] -= eta * G[k]
    G[k] = 0.0
    if l1:
        _penalise(W, q, k, u)


@njit(**JIT)
def sgd_epoch(W, order, seq_ptr, tok_ptr, tok_obs, labels, u_ptr, u_lab, b_ptr, b_prev, b_cur,
              n_u, trans_offset, has_trans, per_token, L, eta0, alpha, rho1, seen, q, G, state,
              out):
    """One pass of SGD-L1 over the sequences in ``order``; updates W, q, state in place.

    ``seen``: sequences processed in earlier epochs (sets the learning rate);
    ``state[0]`` carries ``u`` across epochs. ``G`` must be all zeros (it is
    left so). out = [sum of per-sequence losses (at the weights they were
    seen with), token errors, sequence errors, 1 if a sequence overflowed].
    Returns the last learning rate.
    """
    N = len(order)
    Tmax = lattice.longest_sequence(seq_ptr, 0, len(seq_ptr) - 1)
    TP = Tmax if per_token else 1
    psi = np.empty((Tmax, L))
    phi = np.empty((TP, L, L))
    trans = np.empty((L, L))
    expu = np.empty((Tmax, L))
    expb = np.empty((TP, L, L))
    alpha_ = np.empty((Tmax, L))
    beta = np.empty((Tmax, L))
    scale = np.empty(Tmax)
    pair = np.empty((L, L))
    tmp = np.empty(L)
    no_dense = np.empty((0, L))  # no dense rows (see lattice.unigram_scores)
    u = state[0]
    loss = 0.0
    tok_err = 0
    seq_err = 0
    eta = eta0
    l1 = rho1 > 0.0
    for i in range(N):
        s = order[i]
        counter = seen + i
        eta = eta0 * alpha ** (counter / N)
        u += eta * rho1 / N
        t0 = seq_ptr[s]
        T = seq_ptr[s + 1] - t0
        if T == 0:
            continue
        _sequence_scores(W, tok_ptr, tok_obs, u_ptr, u_lab, b_ptr, b_prev, b_cur, n_u,
                         trans_offset, has_trans, per_token, L, t0, T, trans, psi, phi,
                         no_dense)
        if per_token:
            shift = lattice.exp_transitions(phi, T, expb)
        else:
            shift = lattice._exp_shifted(trans, expb[0]) * (T - 1)
        logz = shift + lattice.forward_backward(psi, expb, per_token, T, L, expu, alpha_, beta,
                                                scale, tmp)
        if not np.isfinite(logz):
            out[3] = 1.0
            break
        gold = 0.0
        for t in range(T):
            y = labels[t0 + t]
            gold += psi[t, y]
            if t:
                gold += phi[t, labels[t0 + t - 1], y] if per_token else trans[labels[t0 + t - 1], y]
        loss += logz - gold
        lattice.accumulate_expectations(G, tok_ptr, tok_obs, u_ptr, u_lab, b_ptr, b_prev, b_cur,
                                        n_u, trans_offset, has_trans, per_token, t0, T, L,
                                        alpha_, beta, expu, expb, scale, pair, tmp, no_dense)
        wrong = 0
        for t in range(T):
            if lattice.argmax(alpha_[t]) != labels[t0 + t]:
                wrong += 1
        tok_err += wrong
        if wrong:
            seq_err += 1
        # G -= gold feature counts
        for t in range(T):
            y = labels[t0 + t]
            yp = labels[t0 + t - 1] if t else -1
            for j in range(tok_ptr[t0 + t], tok_ptr[t0 + t + 1]):
                o = tok_obs[j]
                for k in range(u_ptr[o], u_ptr[o + 1]):
                    if u_lab[k] == y:
                        G[k] -= 1.0
                if t:
                    for k in range(b_ptr[o], b_ptr[o + 1]):
                        if b_prev[k] == yp and b_cur[k] == y:
                            G[n_u + k] -= 1.0
            if t and has_trans:
                G[trans_offset + yp * L + y] -= 1.0
        # W -= eta * G on every touched weight (G back to zero), then the L1 penalty
        for t in range(T):
            for j in range(tok_ptr[t0 + t], tok_ptr[t0 + t + 1]):
                o = tok_obs[j]
                for k in range(u_ptr[o], u_ptr[o + 1]):
                    _step(W, G, q, k, eta, u, l1)
                if t:
                    for k in range(b_ptr[o], b_ptr[o + 1]):
                        _step(W, G, q, n_u + k, eta, u, l1)
        if has_trans and T > 1:
            for k in range(trans_offset, trans_offset + L * L):
                _step(W, G, q, k, eta, u, l1)
    state[0] = u
    out[0] = loss
    out[1] = tok_err
    out[2] = seq_err
    return eta


# --- averaged perceptron ------------------------------------------------------------------------
@njit(**INLINE_JIT)
def _find_unigram(u_ptr, u_lab, o, y):
    """Weight index of observation o's unigram feature for label y, or -1 if it does not exist."""
    for k in range(u_ptr[o], u_ptr[o + 1]):
        if u_lab[k] == y:
            return k
    return -1


@njit(**INLINE_JIT)
def _find_bigram(b_ptr, b_prev, b_cur, n_u, o, a, b):
    """Weight index of observation o's bigram feature (a, b), or -1 if it does not exist."""
    for k in range(b_ptr[o], b_ptr[o + 1]):
        if b_prev[k] == a and b_cur[k] == b:
            return n_u + k
    return -1


@njit(**INLINE_JIT)
def _bump(W, U, k, d, c):
    if k >= 0:
        W[k] += d
        U[k] += c * d


@njit(**JIT)
def perceptron_epoch(W, U, seen, order, seq_ptr, tok_ptr, tok_obs, labels, u_ptr, u_lab, b_ptr,
                     b_prev, b_cur, n_u, trans_offset, has_trans, per_token, L, out):
    """One pass of the perceptron over ``order``; W and U (Daumé's sums) updated in place.

    ``seen``: sequences processed in earlier epochs. out = [token errors,
    sequence errors] of the Viterbi paths made during the pass.
    """
    Tmax = lattice.longest_sequence(seq_ptr, 0, len(seq_ptr) - 1)
    TP = Tmax if per_token else 1
    psi = np.empty((Tmax, L))
    phi = np.empty((TP, L, L))
    trans = np.empty((L, L))
    delta = np.empty((Tmax, L))
    back = np.empty((Tmax, L), dtype=np.int32)
    path = np.empty(Tmax, dtype=np.int32)
    no_dense = np.empty((0, L))
    tok_err = 0
    seq_err = 0
    for i in range(len(order)):
        s = order[i]
        c = float(seen + i)
        t0 = seq_ptr[s]
        T = seq_ptr[s + 1] - t0
        if T == 0:
            continue
        _sequence_scores(W, tok_ptr, tok_obs, u_ptr, u_lab, b_ptr, b_prev, b_cur, n_u,
                         trans_offset, has_trans, per_token, L, t0, T, trans, psi, phi,
                         no_dense)
        lattice.viterbi(psi, phi, per_token, T, L, delta, back, path)
        wrong = 0
        for t in range(T):
            if path[t] != labels[t0 + t]:
                wrong += 1
        if wrong == 0:
            continue
        tok_err += wrong
        seq_err += 1
        for t in range(T):
            y = labels[t0 + t]
            p = path[t]
            yp = labels[t0 + t - 1] if t else -1
            pp = path[t - 1] if t else -1
            same_pair = t == 0 or (yp == pp and y == p)
            if not same_pair and has_trans:
                _bump(W, U, trans_offset + yp * L + y, 1.0, c)
                _bump(W, U, trans_offset + pp * L + p, -1.0, c)
            if y == p and same_pair:
                continue
            for j in range(tok_ptr[t0 + t], tok_ptr[t0 + t + 1]):
                o = tok_obs[j]
                if y != p:
                    _bump(W, U, _find_unigram(u_ptr, u_lab, o, y), 1.0, c)
                    _bump(W, U, _find_unigram(u_ptr, u_lab, o, p), -1.0, c)
                if not same_pair:
                    _bump(W, U, _find_bigram(b_ptr, b_prev, b_cur, n_u, o, yp, y), 1.0, c)
                    _bump(W, U, _find_bigram(b_ptr, b_prev, b_cur, n_u, o, pp, p), -1.0, c)
    out[0] = tok_err
    out[1] = seq_err
