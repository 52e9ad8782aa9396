"""The plain best path of a batch in one compiled pass per sequence.

Why a third best-path decoder, beside :mod:`crfkit.kernels.bestpath` (numpy) and
:mod:`crfkit.kernels.decoder` (Numba, every mode): on a large input the numpy
labeller spends about half its time building an ``n_tokens x L`` array of unigram
sums and walking it time step by time step, and the general decoder tracks an
argmax for every label of every token. Here each sequence's unigram sums go into
a small buffer that stays in cache, the forward pass keeps maxima only (its inner
loop runs over contiguous labels, which vectorises), and the backward pass
recomputes the one predecessor each token's label needs. Loading Numba costs a
few tenths of a second, so the caller uses this only for a large input
(:func:`crfkit.labelling.label.fused_decoding_pays`).

It serves what the numpy labeller's :class:`~crfkit.kernels.bestpath.Lattice` builds
for a globally normalised model without observation bigrams or valued
occurrences (the caller checks: :meth:`crfkit.structures.base.Structure.fused_best_path`),
and gives its result bit for bit: the same additions in the same order
(a token's weights added observation after observation, as the numpy labeller adds
its dense rows, whose zeros change nothing; no ``fastmath``, so the compiler keeps
that order), the same masks (forbidden transitions as ``-inf`` added to the
transition block, forbidden labels as ``-inf`` unigram scores), and the same ties
(the first maximum: the lower previous label, the lower final label). NaN compares
differently in the two (numpy's maximum keeps it), so a batch whose scores are not
all finite before masking is left to the numpy labeller.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from crfkit.kernels.bestpath import transition_block
from crfkit.kernels.decoded import Decoded, Weighted
from crfkit.kernels.flavour import read_only
from crfkit.space import Dataset

# compile seconds on a first run (README's 2-core machine, empty cache)
FUSED_COMPILE_SECONDS = 2

# No fastmath: the additions must stay in the numpy labeller's order.
EXACT_JIT = {"cache": True, "nogil": True, "error_model": "numpy", "boundscheck": False,
             "no_cfunc_wrapper": True}


def fused_best_paths(model: Weighted, data: Dataset, *, token_ok: np.ndarray | None = None,
                     trans_ok: np.ndarray | None = None) -> Decoded | None:
    """``best_paths(model, data, token_ok=..., trans_ok=...)`` of the numpy labeller, or
    None when a score is not finite (the caller then asks the numpy labeller)."""
    s, L = model.space, model.space.n_labels
    trans = transition_block(model.weights, s)
    finite = bool(np.isfinite(trans).all())
    if trans_ok is not None:
        trans[~trans_ok] = -np.inf
    use_mask = token_ok is not None
    mask = np.ones((1, L), dtype=np.bool_) if token_ok is None else token_ok
    paths = np.zeros(data.n_tokens, dtype=np.int32)
    scores = np.full(data.n_seqs, -np.inf)
    # the model's arrays read-only, whether it was loaded or just trained: one compiled version
    if not finite or not batch_paths(
            read_only(np.asarray(model.weights, dtype=np.float64)),
            read_only(np.asarray(s.u_ptr, dtype=np.int64)),
            read_only(np.asarray(s.u_lab, dtype=np.int32)),
            np.asarray(data.seq_ptr, dtype=np.int64), np.asarray(data.tok_ptr, dtype=np.int64),
            np.asarray(data.tok_obs, dtype=np.int32),
            trans, np.ascontiguousarray(mask, dtype=np.bool_), use_mask, paths, scores,
            dense_rows(s.n_obs, L, len(data.tok_obs))):
        return None
    return Decoded(paths=paths[:, None], scores=scores[:, None],
                   log_z=np.full(data.n_seqs, np.nan), marginals=None)


# The dense rows :func:`batch_paths` fills, in floats (2 MB). A batch fills one table,
# where training keeps one per block in flight (crfkit.config.DENSE_ROW_CELLS, half as
# many): a row costs one contiguous read where a sparse observation's features are
# scattered ones, so more rows pay, up to a few MB (the benchmarks page, "The byte path").
LABEL_DENSE_CELLS = 1 << 18


def dense_rows(n_obs: int, n_labels: int, occurrences: int) -> int:
    """How many of the most frequent observations :func:`batch_paths` reads as dense rows:
    :data:`LABEL_DENSE_CELLS` worth, but no more rows than a batch has occurrences per
    label, so that a small batch does not spend longer filling the rows than reading
    its features. Any count gives the same sums: a row's zeros change none."""
    L = max(1, n_labels)
    return min(n_obs, LABEL_DENSE_CELLS // L, occurrences // L)


def load_kernel(model: Weighted) -> None:
    """Load the kernel now (from Numba's cache, or compile it) for ``model``'s arrays: before
    a fork, both processes then share it instead of loading it twice."""
    one_token = Dataset(seq_ptr=np.array([0, 1]), tok_ptr=np.zeros(2, dtype=np.int64),
                        tok_obs=np.zeros(0, dtype=np.int32), labels=np.zeros(0, np.int32))
    fused_best_paths(model, one_token)


@njit(**EXACT_JIT)
def batch_paths(W, u_ptr, u_lab, seq_ptr, tok_ptr, tok_obs, trans, token_ok, use_mask,
                paths, scores, n_dense):
    """Best path and score of every sequence into ``paths`` / ``scores``; False (the
    outputs then incomplete) as soon as a token's unigram sum is not finite. The
    weights of observations ``0 .. n_dense-1`` (the most frequent) are read as dense
    rows (:func:`unigram_sums`)."""
    L = trans.shape[0]
    longest = 0
    most = 0  # observation occurrences of a sequence
    for s in range(len(seq_ptr) - 1):
        longest = max(longest, seq_ptr[s + 1] - seq_ptr[s])
        most = max(most, tok_ptr[seq_ptr[s + 1]] - tok_ptr[seq_ptr[s]])
    psi = np.empty((longest, L))
    delta = np.empty((longest, L))
    ranges = np.empty((2, most), dtype=np.int64)
    # lattice.fill_dense_rows on a zeroed table, written out: importing the training
    # lattice would add its kernels' set-up to every large labelling's start
    dense = np.empty((n_dense, L))
    for o in range(n_dense):
        for y in range(L):
            dense[o, y] = 0.0
        for k in range(u_ptr[o], u_ptr[o + 1]):
            dense[o, u_lab[k]] = W[k]
    for s in range(len(seq_ptr) - 1):
        t0 = seq_ptr[s]
        T = seq_ptr[s + 1] - t0
        if T == 0:
            continue
        if not unigram_sums(W, u_ptr, u_lab, tok_ptr, tok_obs, t0, T, psi, ranges, dense):
            return False
        if use_mask:
            for t in range(T):
                for y in range(L):
                    if not token_ok[t0 + t, y]:
                        psi[t, y] = -np.inf
        scores[s] = sequence_path(psi, trans, T, delta, paths[t0:t0 + T])
    return True


@njit(**EXACT_JIT)
def unigram_sums(W, u_ptr, u_lab, tok_ptr, tok_obs, t0, T, psi, ranges, dense):
    """psi[:T] = the unigram weights of tokens t0 .. t0+T-1 summed observation after
    observation; False if a sum is not finite.

    The feature ranges of all the sequence's observations are read first, in a loop
    without branches, so that their (scattered) loads overlap; then the weights are
    added, in the same order as without that first pass. An observation with a row in
    ``dense`` (the most frequent: most occurrences, with most of the labels) adds its
    whole row, zeros included, which vectorises and changes no sum, as the numpy
    labeller's dense rows do.
    """
    L = psi.shape[1]
    K = dense.shape[0]
    j0 = tok_ptr[t0]
    for j in range(j0, tok_ptr[t0 + T]):
        o = tok_obs[j]
        ranges[0, j - j0] = u_ptr[o] if o >= K else -1 - o
        ranges[1, j - j0] = u_ptr[o + 1]
    for t in range(T):
        row = psi[t]
        for y in range(L):
            row[y] = 0.0
        for j in range(tok_ptr[t0 + t] - j0, tok_ptr[t0 + t + 1] - j0):
            lo = ranges[0, j]
            if lo < 0:
                d = dense[-1 - lo]
                for y in range(L):
                    row[y] += d[y]
                continue
            for k in range(lo, ranges[1, j]):
                row[u_lab[k]] += W[k]
        finite = True
        for y in range(L):  # no exit inside: the loop vectorises
            finite &= np.abs(row[y]) < np.inf
        if not finite:
            return False
    return True


@njit(**EXACT_JIT)
def sequence_path(psi, trans, T, delta, path):
    """Viterbi over psi[:T] with one transition block: the path into ``path``, its score
    returned. The forward pass keeps maxima only; the backward pass finds, for each
    token's label, the first previous label that reaches its maximum.

    The forward pass takes four previous labels at a time: a maximum is the same
    whatever the order of its candidates (the scores are finite or -inf, never NaN),
    and the row of maxima is read and written a quarter as often."""
    L = trans.shape[0]
    for y in range(L):
        delta[0, y] = psi[0, y]
    by_four = L - L % 4
    for t in range(1, T):
        cur = delta[t]
        prev = delta[t - 1]
        for b in range(L):
            cur[b] = -np.inf
        for a in range(0, by_four, 4):
            p0, p1, p2, p3 = prev[a], prev[a + 1], prev[a + 2], prev[a + 3]
            r0, r1, r2, r3 = trans[a], trans[a + 1], trans[a + 2], trans[a + 3]
            for b in range(L):  # selects, not branches: the loop vectorises
                v0 = p0 + r0[b]
                v1 = p1 + r1[b]
                v2 = p2 + r2[b]
                v3 = p3 + r3[b]
                v01 = v0 if v0 > v1 else v1
                v23 = v2 if v2 > v3 else v3
                v = v01 if v01 > v23 else v23
                cur[b] = v if v > cur[b] else cur[b]
        for a in range(by_four, L):
            p = prev[a]
            row = trans[a]
            for b in range(L):
                v = p + row[b]
                cur[b] = v if v > cur[b] else cur[b]
        for b in range(L):
            cur[b] += psi[t, b]
    label = first_max(delta[T - 1], L)
    best = delta[T - 1, label]
    path[T - 1] = label
    for t in range(T - 1, 0, -1):
        prev = delta[t - 1]
        arg = 0
        top = prev[0] + trans[0, label]
        for a in range(1, L):
            v = prev[a] + trans[a, label]
            if v > top:
                top = v
                arg = a
        label = arg
        path[t - 1] = label
    return best


@njit(**EXACT_JIT)
def first_max(row, L):
    """Index of the first largest of row[:L]."""
    arg = 0
    for y in range(1, L):
        if row[y] > row[arg]:
            arg = y
    return arg
