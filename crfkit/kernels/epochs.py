"""Numba kernels of the online trainers: one epoch of SGD-L1, one of the averaged perceptron.

Both visit the sequences in a given order (the caller shuffles) and update
the flat weight vector ``W`` in place after each sequence, so they are
serial by nature. SGD's gradient of a sequence is the one L-BFGS uses
(:func:`crfkit.kernels.gradient.sequence_gradient`, minus the gold path's
counts, :func:`crfkit.kernels.gradient.add_path_counts`); the perceptron's
update is the gold path's counts minus the predicted path's, from the same
function. Both touch only the weights of the features firing in the current
sequence (plus the transition block), never the whole vector.

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

from crfkit import config
from crfkit.config import JIT
from crfkit.kernels.gradient import (
    add_path_counts,
    posterior_errors,
    sequence_gradient,
    work_buffers,
)
from crfkit.kernels.lattice import (
    bigram_scores,
    chain_scores,
    copy_matrix,
    exp_bigram_weights,
    load_transitions,
    longest_sequence,
    transition_buffer,
    viterbi,
)
from crfkit.kernels.sgdfused import close_epoch, next_sequence, sgd_epoch_fused, step
from crfkit.space import Dataset, FeatureSpace


@njit(**JIT)
def touched_weights(space, tok_ptr, tok_obs, L, t0, T, out):
    """Indices of every weight a sequence's features own, into ``out``; returns how many.

    A weight can be listed more than once (an observation firing at two
    tokens); the transition block comes last. ``out`` must hold
    :func:`max_touched` entries.
    """
    u_ptr, u_lab, b_ptr, b_prev, b_cur, n_u, trans_offset, has_trans = space
    n = 0
    for t in range(T):
        for j in range(tok_ptr[t0 + t], tok_ptr[t0 + t + 1]):
            o = tok_obs[j]
            for k in range(u_ptr[o], u_ptr[o + 1]):
                out[n] = k
                n += 1
            if t:
                for k in range(b_ptr[o], b_ptr[o + 1]):
                    out[n] = n_u + k
                    n += 1
    if has_trans and T > 1:
        for k in range(trans_offset, trans_offset + L * L):
            out[n] = k
            n += 1
    return n


@njit(**JIT)
def max_touched(space, seq_ptr, tok_ptr, tok_obs, L):
    """The largest :func:`touched_weights` count over all sequences (its buffer size)."""
    u_ptr, u_lab, b_ptr, b_prev, b_cur, n_u, trans_offset, has_trans = space
    most = 0
    for s in range(len(seq_ptr) - 1):
        n = L * L if has_trans else 0
        for j in range(tok_ptr[seq_ptr[s]], tok_ptr[seq_ptr[s + 1]]):
            o = tok_obs[j]
            n += (u_ptr[o + 1] - u_ptr[o]) + (b_ptr[o + 1] - b_ptr[o])
        most = max(most, n)
    return most


# --- SGD with the cumulative L1 penalty --------------------------------------------------------
# (the per-weight step and penalty are kernels.sgdfused's step and penalise; plain
# corpora run sgdfused.sgd_epoch_fused, valued ones this reference epoch)
@njit(**JIT)
def _gold_score(psi, phi, trans, per_token, labels, t0, T):
    """Score of the gold path of tokens t0 .. t0+T-1 under psi and phi (or trans)."""
    gold = 0.0
    for t in range(T):
        y = labels[t0 + t]
        gold += psi[t, y]
        if t:
            gold += phi[t, labels[t0 + t - 1], y] if per_token else trans[labels[t0 + t - 1], y]
    return gold


@njit(**JIT)
def sgd_epoch(W, order, space, data, per_token, L, eta0, alpha, rho1, seen, q, G, touched,
              expw, state, out, tok_val=None):
    """One pass of SGD-L1 over the sequences in ``order``; updates W, q, state in place.

    ``seen``: sequences processed in earlier epochs (sets the learning rate);
    ``state[0]`` carries ``u`` across epochs. ``G`` must be all zeros (it is
    left so); ``touched`` holds :func:`max_touched` indices; ``expw`` (n_b) the
    exponentiated bigram weights, kept up to date as they move. out = [sum of
    per-sequence losses (at the weights they were seen with), token errors,
    sequence errors, 1 if a sequence overflowed]. Returns the last learning rate.
    """
    seq_ptr, tok_ptr, tok_obs, labels = data
    u_ptr, u_lab, b_ptr, b_prev, b_cur, n_u, trans_offset, has_trans = space
    n_b = len(b_prev)
    exp_bigram_weights(W, n_u, n_b, expw)
    N = len(order)
    trans = np.empty((L, L))
    exp_trans = transition_buffer(L)
    Tmax = longest_sequence(seq_ptr, np.int64(0), len(seq_ptr) - 1)
    work = work_buffers(Tmax, L, per_token, exp_trans)
    psi, phi, alpha_ = work[0], work[1], work[4]
    no_dense = np.empty((0, L))  # no dense rows (see kernels.lattice.unigram_scores)
    no_factors = np.empty(0)  # scores summed, then exponentiated (no unigram_factors)
    u, l1, loss, tok_err, seq_err, eta = state[0], rho1 > 0.0, 0.0, 0, 0, eta0
    for i in range(N):
        t0, T, eta, u = next_sequence(order, i, seq_ptr, eta0, alpha, rho1, seen, u)
        if T == 0:
            continue
        trans_shift = load_transitions(W, space[6], space[7], L, trans, exp_trans)
        shift, logz = sequence_gradient(W, space, tok_ptr, tok_obs, tok_val, t0, T, L, per_token,
                                        trans, exp_trans, trans_shift, expw, no_dense, no_dense,
                                        work, G, no_factors, no_dense)
        if per_token:
            logz = shift + logz
        else:
            logz = trans_shift * (T - 1) + logz
        if not np.isfinite(logz):
            out[3] = 1.0
            break
        if per_token and tok_val is None:  # (the valued gradient leaves phi filled)
            bigram_scores(W, tok_ptr, tok_obs, None, b_ptr, b_prev, b_cur, n_u, trans, t0, T,
                          phi)
        loss += logz - _gold_score(psi, phi, trans, per_token, labels, t0, T)
        wrong = posterior_errors(alpha_, labels, t0, T)
        tok_err += wrong
        seq_err += 1 if wrong else 0
        add_path_counts(G, space, tok_ptr, tok_obs, tok_val, L, t0, T, labels, t0, -1.0)
        # W -= eta * G on every touched weight (G back to zero), then the L1 penalty
        n_touched = touched_weights(space, tok_ptr, tok_obs, L, t0, T, touched)
        for n in range(n_touched):
            step(W, G, q, touched[n], eta, u, l1)
        if per_token:
            for n in range(n_touched):
                k = touched[n] - n_u
                if 0 <= k < n_b:
                    expw[k] = np.exp(W[n_u + k])
    close_epoch(state, u, out, loss, tok_err, seq_err)
    return eta


# --- averaged perceptron ------------------------------------------------------------------------
@njit(**JIT)
def perceptron_epoch(W, U, seen, order, space, data, per_token, L, G, touched, out,
                     tok_val=None):
    """One pass of the perceptron over ``order``; W and U (Daume's sums) updated in place.

    ``seen``: sequences processed in earlier epochs; ``G`` all zeros (left so),
    ``touched`` as for :func:`sgd_epoch`. out = [token errors, sequence errors]
    of the Viterbi paths made during the pass. A wrong path's update is the
    gold path's feature counts minus the predicted path's: whole numbers, so
    W and U are exact sums whatever order they are added in.
    """
    seq_ptr, tok_ptr, tok_obs, labels = data
    Tmax = longest_sequence(seq_ptr, np.int64(0), len(seq_ptr) - 1)
    TP = Tmax if per_token else 1
    psi = np.empty((Tmax, L))
    phi = np.empty((TP, L, L))
    trans = np.empty((L, L))
    exp_trans = np.empty((1, L, L))
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
        load_transitions(W, space[6], space[7], L, trans, exp_trans)
        chain_scores(W, space, tok_ptr, tok_obs, tok_val, t0, T, per_token, trans, psi, phi,
                     no_dense)
        if not per_token:
            copy_matrix(trans, phi[0])
        viterbi(psi, phi, per_token, T, L, delta, back, path)
        wrong = 0
        for t in range(T):
            if path[t] != labels[t0 + t]:
                wrong += 1
        if wrong == 0:
            continue
        tok_err += wrong
        seq_err += 1
        add_path_counts(G, space, tok_ptr, tok_obs, tok_val, L, t0, T, labels, t0, 1.0)
        add_path_counts(G, space, tok_ptr, tok_obs, tok_val, L, t0, T, path, np.int64(0),
                        -1.0)
        for n in range(touched_weights(space, tok_ptr, tok_obs, L, t0, T, touched)):
            k = touched[n]
            d = G[k]
            if d != 0.0:
                W[k] += d
                U[k] += c * d
                G[k] = 0.0
    out[0] = tok_err
    out[1] = seq_err


# --- Python drivers: what the online optimisers of crfkit.optim call ---------------------------
class EpochBuffers:
    """A dataset's arrays and the buffers every structure's epochs reuse: the gradient (all
    zeros between sequences) and the epoch's outputs (``n_out`` of them)."""

    n_out = 0

    def __init__(self, space: FeatureSpace, data: Dataset) -> None:
        self.space, self.data = space.arrays(), data.arrays()
        self.tok_val = data.tok_val
        self.L = space.n_labels
        self.G = np.zeros(space.n_weights)
        self.out = np.zeros(self.n_out)


class _Epochs(EpochBuffers):
    """The chain's epochs: also the touched weights and exponentiated bigram weights."""

    def __init__(self, space: FeatureSpace, data: Dataset) -> None:
        super().__init__(space, data)
        self.per_token = space.n_b > 0
        self.touched = np.empty(max_touched(self.space, *self.data[:3], self.L), dtype=np.int64)
        self.expw = np.empty(space.n_b)


class SgdEpochs(_Epochs):
    """``run(W, order, seen, eta0, alpha, rho1, q, state) -> (loss, token errors, sequence
    errors, overflowed)``: one SGD-L1 epoch of a dataset (the fused epoch of
    :mod:`crfkit.kernels.sgdfused`; :func:`sgd_epoch` for valued corpora, or with
    ``fused=False``, the reference the fused one is tested against)."""

    n_out = 4

    def __init__(self, space: FeatureSpace, data: Dataset, *, fused: bool = True,
                 n_dense: int | None = None) -> None:
        """``n_dense``: observations whose weights the fused epoch keeps in dense rows
        (default: as many as the batch objective, :func:`crfkit.config.dense_observations`)."""
        super().__init__(space, data)
        self.fused = fused and self.tok_val is None
        self.n_dense = (config.dense_observations(space.n_obs, space.n_labels)
                        if n_dense is None else n_dense)

    def __call__(self, W: np.ndarray, order: np.ndarray, seen: int, eta0: float, alpha: float,
                 rho1: float, q: np.ndarray, state: np.ndarray) -> tuple[float, int, int, bool]:
        if self.fused:
            sgd_epoch_fused(W, order, self.space, self.data, self.per_token, self.L,
                            float(eta0), float(alpha), float(rho1), seen, q, self.G, self.expw,
                            state, self.out, self.n_dense)
        else:
            sgd_epoch(W, order, self.space, self.data, self.per_token, self.L, float(eta0),
                      float(alpha), float(rho1), seen, q, self.G, self.touched, self.expw,
                      state, self.out, self.tok_val)
        out = self.out
        return float(out[0]), int(out[1]), int(out[2]), bool(out[3])


class PerceptronEpochs(_Epochs):
    """``run(W, U, order, seen) -> (token errors, sequence errors)``: one perceptron epoch."""

    n_out = 2

    def __call__(self, W: np.ndarray, U: np.ndarray, order: np.ndarray,
                 seen: int) -> tuple[int, int]:
        perceptron_epoch(W, U, seen, order, self.space, self.data, self.per_token, self.L,
                         self.G, self.touched, self.out, self.tok_val)
        return int(self.out[0]), int(self.out[1])
