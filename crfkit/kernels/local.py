"""Locally normalised models: MaxEnt and MEMM, on the CRF's feature space and weights.

Both use the weight layout of :mod:`crfkit.space` unchanged; only the
normalisation differs from the CRF's (one softmax per token instead of one
partition function per sequence), so training needs no forward-backward.

* ``maxent`` labels each token on its own::

      p(y_t | x) = softmax_y psi[t, y]

  It has no label-pair features: the trainer builds its space without
  observation bigrams or a transition block (bigram-only patterns are
  dropped). A CRF with no label-pair features *is* this model (its Z
  factorises over tokens), which the tests use as an oracle.

* ``memm`` conditions on the previous label::

      p(y_t | y_{t-1}, x) = softmax_y (psi[t, y] + phi[t, y_{t-1}, y])   for t >= 1
      p(y_0 | x)          = softmax_y psi[0, y]

  The first token has *no transition* rather than a special start state:
  this matches the CRF, where ``phi[0]`` is unused and observation bigrams
  never fire at the first token, so the same feature space and the same
  empirical counts serve both, and no extra label must live in the model.

Training (teacher forcing: the previous label is the gold one) minimises

    f(w) = sum_t log sum_y exp s_t(y) - w . empirical + rho2/2 |w|^2

where ``s_t`` is the score row of token t given the gold previous label; the
gold path score is ``w . empirical`` as for the CRF. The gradient is the
expected feature counts under each token's softmax minus the empirical
counts. As in :mod:`crfkit.kernels.objective`, sequences are split into fixed
blocks, each block fills its own gradient buffer, and the buffers are summed
in block order: the result does not depend on the thread count.

Decoding a MEMM is Viterbi over the log *local* probabilities: with
``psi'[0] = log softmax psi[0]``, ``psi'[t>0] = 0`` and
``phi'[t, a, b] = psi[t, b] + phi[t, a, b] - log sum_b' exp(psi[t, b'] + phi[t, a, b'])``
the max-plus recursion of :func:`crfkit.kernels.lattice.viterbi` finds the path of
highest probability, and its score is that path's log-probability
(:func:`crfkit.kernels.lattice.local_normalise` rewrites the scores).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from crfkit import config
from crfkit.config import JIT
from crfkit.errors import UsageError
from crfkit.kernels import lattice
from crfkit.kernels.blocks import partition_blocks, run_blocks
from crfkit.kernels.objective import Objective
from crfkit.space import Dataset, FeatureSpace

LOCAL_TYPES = ("memm", "maxent")


# --- helpers over one token ------------------------------------------------------------------
@njit(**JIT)
def _token_scores(W, tok_ptr, tok_obs, u_ptr, u_lab, b_ptr, b_prev, b_cur, n_u, trans_offset,
                  has_trans, L, g, prev, score):
    """score[y] = unigram scores of token g (+ transition and bigram scores from ``prev`` >= 0)."""
    score[:] = 0.0
    for j in range(tok_ptr[g], tok_ptr[g + 1]):
        o = tok_obs[j]
        for k in range(u_ptr[o], u_ptr[o + 1]):
            score[u_lab[k]] += W[k]
    if prev >= 0:
        if has_trans:
            base = trans_offset + prev * L
            for y in range(L):
                score[y] += W[base + y]
        for j in range(tok_ptr[g], tok_ptr[g + 1]):
            o = tok_obs[j]
            for k in range(b_ptr[o], b_ptr[o + 1]):
                if b_prev[k] == prev:
                    score[b_cur[k]] += W[n_u + k]


@njit(**JIT)
def _softmax_inplace(score):
    """Turn scores into probabilities; return log sum exp of the scores."""
    m = lattice._max(score)
    total = 0.0
    for y in range(score.shape[0]):
        score[y] = np.exp(score[y] - m)
        total += score[y]
    inv = 1.0 / total
    for y in range(score.shape[0]):
        score[y] *= inv
    return m + np.log(total)


@njit(**JIT)
def _add_expectations(G, prob, tok_ptr, tok_obs, u_ptr, u_lab, b_ptr, b_prev, b_cur, n_u,
                      trans_offset, has_trans, L, g, prev):
    """G += the expected counts of token g's features under its local distribution ``prob``."""
    for j in range(tok_ptr[g], tok_ptr[g + 1]):
        o = tok_obs[j]
        for k in range(u_ptr[o], u_ptr[o + 1]):
            G[k] += prob[u_lab[k]]
    if prev >= 0:
        if has_trans:
            base = trans_offset + prev * L
            for y in range(L):
                G[base + y] += prob[y]
        for j in range(tok_ptr[g], tok_ptr[g + 1]):
            o = tok_obs[j]
            for k in range(b_ptr[o], b_ptr[o + 1]):
                if b_prev[k] == prev:
                    G[n_u + k] += prob[b_cur[k]]


# --- batch kernel: one block of sequences (kernels.blocks runs them on threads) ---
@njit(**JIT)
def local_loss_block(W, seq_ptr, tok_ptr, tok_obs, labels, u_ptr, u_lab, b_ptr, b_prev, b_cur,
                     n_u, trans_offset, has_trans, use_prev, L, s0, s1, G, out):
    """Sequences s0..s1-1: the sum of the local log-normalisers into out[0], expectations into G.

    ``use_prev``: MEMM (condition on the gold previous label) or MaxEnt.
    out[1] / out[2] count token / sequence errors of the per-token argmax
    given the gold previous label (for the progress line).
    """
    score = np.empty(L)
    G[:] = 0.0
    lse_sum = 0.0
    tok_err = 0
    seq_err = 0
    for s in range(s0, s1):
        wrong = 0
        for g in range(seq_ptr[s], seq_ptr[s + 1]):
            prev = labels[g - 1] if use_prev and g > seq_ptr[s] else -1
            _token_scores(W, tok_ptr, tok_obs, u_ptr, u_lab, b_ptr, b_prev, b_cur, n_u,
                          trans_offset, has_trans, L, g, prev, score)
            if lattice.argmax(score) != labels[g]:
                wrong += 1
            lse_sum += _softmax_inplace(score)
            _add_expectations(G, score, tok_ptr, tok_obs, u_ptr, u_lab, b_ptr, b_prev, b_cur,
                              n_u, trans_offset, has_trans, L, g, prev)
        tok_err += wrong
        if wrong:
            seq_err += 1
    out[0] = lse_sum
    out[1] = tok_err
    out[2] = seq_err


# --- Python API --------------------------------------------------------------------------------
class LocalObjective(Objective):
    """Callable ``f = objective(w, g)`` of a MEMM or MaxEnt; same interface and
    buffers as :class:`crfkit.kernels.objective.Objective`, one softmax per token instead of
    forward-backward."""

    overflow = "numerical overflow in the local softmax"

    def __init__(self, model_type: str, space: FeatureSpace, data: Dataset,
                 empirical: np.ndarray, rho2: float) -> None:
        if model_type not in LOCAL_TYPES:
            raise UsageError(f"not a locally normalised model type: {model_type!r}")
        if model_type == "maxent" and (space.has_trans or space.n_b):
            raise ValueError("a maxent feature space must have no label-pair features")
        if len(data.labels) != data.n_tokens:
            raise ValueError("training data must carry gold labels")
        self.use_prev = model_type == "memm"
        super().__init__(space, data, empirical, rho2)

    def _shared(self, w: np.ndarray) -> tuple:
        return ()

    def _loss_block(self, w: np.ndarray, shared: tuple, s0: int, s1: int, G: np.ndarray,
                    out: np.ndarray) -> None:
        s, d = self.space, self.data
        local_loss_block(w, d.seq_ptr, d.tok_ptr, d.tok_obs, d.labels, s.u_ptr, s.u_lab,
                         s.b_ptr, s.b_prev, s.b_cur, s.n_u, s.trans_offset, s.has_trans,
                         self.use_prev, s.n_labels, s0, s1, G, out)


def decode_local_scored(model_type: str, W: np.ndarray, data: Dataset, space: FeatureSpace
                        ) -> tuple[np.ndarray, np.ndarray]:
    """Best label ids per token (int32, n_tokens) and a score per sequence (float64).

    For ``memm``/``maxent`` the score is the path's log-probability; for
    ``crf`` it is the unnormalised Viterbi score (see
    :func:`crfkit.kernels.lattice.viterbi_block`).
    """
    if model_type not in ("crf", *LOCAL_TYPES):
        raise UsageError(f"unknown model type {model_type!r}")
    if W.shape != (space.n_weights,) or W.dtype != np.float64:
        raise ValueError(f"weights must be float64 of shape ({space.n_weights},)")
    labels = np.zeros(data.n_tokens, dtype=np.int32)
    scores = np.zeros(data.n_seqs)
    if data.n_seqs == 0:
        return labels, scores
    blocks = partition_blocks(data.lengths, config.N_BLOCKS)
    s = space
    trans = lattice.transition_block(W, s.trans_offset, s.has_trans, s.n_labels)
    local = lattice.LOCAL[model_type]
    per_token = s.n_b > 0 or local == lattice.LOCAL_MEMM  # a MEMM's phi depends on psi

    def block(b: int) -> None:
        lattice.viterbi_block(W, data.seq_ptr, data.tok_ptr, data.tok_obs, s.u_ptr, s.u_lab,
                              s.b_ptr, s.b_prev, s.b_cur, s.n_u, per_token, local, s.n_labels,
                              blocks[b], blocks[b + 1], trans, labels, scores)

    run_blocks(block, len(blocks) - 1)
    return labels, scores


def decode_local(model_type: str, W: np.ndarray, data: Dataset, space: FeatureSpace
                 ) -> np.ndarray:
    """Best label id of every token (int32, n_tokens) under a model of ``model_type``.

    This is what labelling must use for ``memm`` models (CRF Viterbi would
    ignore the local normalisation); ``maxent`` and ``crf`` are accepted
    too, so callers need no special case.
    """
    return decode_local_scored(model_type, W, data, space)[0]
