"""The sparse observations' features, laid out in the order the CRF training kernel reads them.

An observation past the dense rows (:func:`crfkit.kernels.lattice.dense_rows`; a
quarter of the occurrences on CoNLL-2000, 2.3 features each) reaches its features
through ``u_ptr[o]``, then ``u_lab[k]`` and the weight ``k``: two dependent loads from
arrays of megabytes, then a loop whose trip count changes from one occurrence to the
next. That was most of the time spent building the tokens' unigram factors and
scattering their expectations, though three quarters of the occurrences are dense.

:func:`sparse_runs` copies each sparse occurrence's (feature, label) pairs once, in
corpus order, the last label of each occurrence complemented (``~y < 0``), so that the
runs can be split back into occurrences. The kernel reads them as a stream with a cursor
that only moves forward, keeping only the weight or gradient entry as a scattered access.

The kernel reads each token's observations dense ones first (:func:`dense_first`, each
part in its order; :class:`crfkit.kernels.objective.Objective` keeps such a copy, and
builds runs only over it). The runs say where each token's leading dense rows end
(``dense_end``) and where its pairs end (``pair_end``), so a token is two loops of known
length: no test of each occurrence's kind, and no end mark tested pair by pair. Those
branches depend on loaded data and went each way often enough for the processor to
mispredict them several times a token. For the same occurrences the factors are the same
products taken in the same order, the expectations the same additions in the same order,
so the results are the same bits as :func:`crfkit.kernels.lattice.unigram_factors` and
:func:`crfkit.kernels.gradient.unigram_expectations` on the same copy.

``runs = (start, feature, label, dense_end, pair_end)``: ``start[s]`` is where sequence
s's pairs begin; ``dense_end[t]`` the occurrence after token t's leading dense rows,
``pair_end[t]`` the pair after its last (t counts the corpus's tokens).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from crfkit.config import JIT
from crfkit.kernels.gradient import add_row, add_transition_expectations, marginals_row
from crfkit.kernels.lattice import multiply_row
from crfkit.kernels.scaled import shared_logz


def sparse_runs(seq_ptr: np.ndarray, tok_ptr: np.ndarray, tok_obs: np.ndarray,
                u_ptr: np.ndarray, u_lab: np.ndarray, n_dense: int) -> tuple | None:
    """The runs of a corpus whose observations from ``n_dense`` on are sparse; None when a
    sparse occurrence has no feature (an end marker could not be put on it), or when the
    runs would take more memory than the corpus's occurrences (:data:`MAX_RUNS_SHARE`)."""
    n_pairs = runs_size(tok_obs, u_ptr, u_lab, n_dense)
    if n_pairs is None:
        return None
    return fill_sparse_runs(seq_ptr, tok_ptr, tok_obs, u_ptr, u_lab, n_dense, n_pairs)


def runs_size(tok_obs: np.ndarray, u_ptr: np.ndarray, u_lab: np.ndarray,
              n_dense: int) -> int | None:
    """How many pairs :func:`sparse_runs` would hold, or None if it builds no runs."""
    n_pairs = count_pairs(tok_obs, u_ptr, n_dense)
    if n_pairs < 0:
        return None
    feature, label = runs_types(u_lab)
    if n_pairs * (np.dtype(feature).itemsize + np.dtype(label).itemsize) \
            > MAX_RUNS_SHARE * tok_obs.nbytes:
        return None
    return int(n_pairs)


def fill_sparse_runs(seq_ptr: np.ndarray, tok_ptr: np.ndarray, tok_obs: np.ndarray,
                     u_ptr: np.ndarray, u_lab: np.ndarray, n_dense: int, n_pairs: int) -> tuple:
    """The runs of :func:`sparse_runs`, of the size :func:`runs_size` gave."""
    feature_type, label_dtype = runs_types(u_lab)
    feature = np.empty(n_pairs, dtype=feature_type)
    label = np.empty(n_pairs, dtype=label_dtype)
    start = np.zeros(len(seq_ptr), dtype=np.int64)
    dense_end = np.empty(len(tok_ptr) - 1, dtype=np.int64)
    pair_end = np.zeros(len(tok_ptr) - 1, dtype=np.int64)
    if n_pairs == 0:  # every observation dense (a small corpus): nothing to compile
        dense_end[:] = tok_ptr[1:]
        return start, feature, label, dense_end, pair_end
    fill_runs(seq_ptr, tok_ptr, tok_obs, u_ptr, u_lab, n_dense, start, feature, label,
              dense_end, pair_end)
    return start, feature, label, dense_end, pair_end


# Runs pay where the unigram work dominates: few labels, so few features an occurrence
# (CoNLL-2000's 22 labels: 0.7x the occurrences' bytes, a fifth off the kernel). With many
# labels the forward-backward dominates and the runs grow with the labels seen per
# observation (Brown's 92 tags: about 150 MB more at the peak, no time saved): past this
# share of the occurrences' bytes the kernel reads the features as before.
MAX_RUNS_SHARE = 1.0

# Empty runs, for the kernels that read none (always these types: one compiled version each)
NO_RUNS = (np.zeros(1, dtype=np.int64), np.empty(0, dtype=np.int32), np.empty(0, dtype=np.int8),
           np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64))


def runs_types(u_lab: np.ndarray) -> tuple[type, type]:
    """The types of the runs' features and labels for a feature space's ``u_lab``."""
    return (np.int32 if len(u_lab) < 2 ** 31 else np.int64), label_type(u_lab)


def standin_runs(u_lab: np.ndarray) -> tuple:
    """Empty runs of the types :func:`sparse_runs` builds for ``u_lab``: to compile the
    kernel that reads them while they are built (on a first run, :mod:`crfkit.kernels.aside`)."""
    feature, label = runs_types(u_lab)
    return (np.zeros(1, dtype=np.int64), np.empty(0, dtype=feature), np.empty(0, dtype=label),
            np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64))


def label_type(u_lab: np.ndarray) -> type:
    """The narrowest integer type that holds the labels and their complements: a byte for
    up to 128 labels (CoNLL-2000's runs: 2.2 million pairs, 6.7 MB less than int32)."""
    top = int(u_lab.max()) if len(u_lab) else 0
    return np.int8 if top < 2 ** 7 else np.int16 if top < 2 ** 15 else u_lab.dtype


# count_pairs reads the occurrences this many at a time (its temporaries: ~30 MB).
COUNT_CHUNK = 1 << 20


def count_pairs(tok_obs: np.ndarray, u_ptr: np.ndarray, K: int) -> int:
    """The sparse occurrences' features, or -1 if one of them has none.

    numpy, not a kernel: a first run would compile it before anything else could start
    (:mod:`crfkit.kernels.aside`), and it runs once a training."""
    n = 0
    for lo in range(0, tok_obs.size, COUNT_CHUNK):
        obs = tok_obs[lo:lo + COUNT_CHUNK]
        obs = obs[obs >= K]
        features = u_ptr[obs + 1] - u_ptr[obs]
        if not features.all():
            return -1
        n += int(features.sum())
    return n


@njit(**JIT)
def fill_runs(seq_ptr, tok_ptr, tok_obs, u_ptr, u_lab, K, start, feature, label, dense_end,
              pair_end):
    """Fill :func:`sparse_runs`' arrays (sized by :func:`count_pairs`)."""
    m = 0
    for s in range(seq_ptr.size - 1):
        start[s] = m
        for t in range(seq_ptr[s], seq_ptr[s + 1]):
            for j in range(tok_ptr[t], tok_ptr[t + 1]):
                o = tok_obs[j]
                if o < K:
                    continue
                last = u_ptr[o + 1] - 1
                for k in range(u_ptr[o], last + 1):
                    feature[m] = k
                    label[m] = u_lab[k] if k < last else ~u_lab[k]
                    m += 1
            pair_end[t] = m
            j = tok_ptr[t]
            while j < tok_ptr[t + 1] and tok_obs[j] < K:
                j += 1
            dense_end[t] = j
    start[seq_ptr.size - 1] = m


@njit(**JIT)
def dense_first(tok_ptr, tok_obs, K, out):
    """out = tok_obs with each token's observations below ``K`` (its dense rows) first,
    each part in its order."""
    for t in range(len(tok_ptr) - 1):
        token_dense_first(tok_obs, tok_ptr[t], tok_ptr[t + 1], K, out, tok_ptr[t])


@njit(inline="always", **JIT)
def token_dense_first(tok_obs, j0, j1, K, out, m):
    """out[m:] = tok_obs[j0:j1] with those below ``K`` first, each part in its order;
    returns where the copy ends."""
    for j in range(j0, j1):
        if tok_obs[j] < K:
            out[m] = tok_obs[j]
            m += 1
    for j in range(j0, j1):
        if tok_obs[j] >= K:
            out[m] = tok_obs[j]
            m += 1
    return m


@njit(**JIT)
def run_factors(expW, tok_ptr, tok_obs, feature, label, dense_end, pair_end, c, t0, T, expu,
                expWd):
    """expu[:T] = :func:`crfkit.kernels.lattice.unigram_factors` of tokens t0 .. t0+T-1,
    the sparse features read from the runs at ``c`` (their sequence's start)."""
    expu[:T] = 1.0
    for t in range(T):
        for j in range(tok_ptr[t0 + t], dense_end[t0 + t]):
            multiply_row(expu, t, expWd, tok_obs[j])
        stop = pair_end[t0 + t]
        for p in range(c, stop):
            expu[t, label_at(label, p)] *= expW[feature[p]]
        c = stop


@njit(**JIT)
def run_expectations(G, tok_ptr, tok_obs, feature, label, dense_end, pair_end, c, t0, T, L,
                     alpha, beta, Gd):
    """:func:`crfkit.kernels.gradient.unigram_expectations` (binary corpus), the sparse
    features read from the runs at ``c``: G += the token marginals, alpha turned into
    them, the dense rows' into ``Gd``."""
    for t in range(T):
        marginals_row(alpha, beta, t, L)
        c = token_expectations(G, tok_ptr, tok_obs, feature, label, dense_end, pair_end, c,
                               t0, t, L, alpha, Gd)


@njit(**JIT)
def run_marginal_expectations(G, tok_ptr, tok_obs, feature, label, dense_end, pair_end, c, t0,
                              T, L, marg, Gd):
    """:func:`run_expectations` given the token marginals ``marg`` (the second order's)."""
    for t in range(T):
        c = token_expectations(G, tok_ptr, tok_obs, feature, label, dense_end, pair_end, c,
                               t0, t, L, marg, Gd)


@njit(inline="always", **JIT)
def token_expectations(G, tok_ptr, tok_obs, feature, label, dense_end, pair_end, c, t0, t, L,
                       marg, Gd):
    """G and Gd += token t's marginals ``marg[t]`` for its features, its pairs read from
    ``c``; returns where the next token's pairs begin."""
    for j in range(tok_ptr[t0 + t], dense_end[t0 + t]):
        add_row(Gd, tok_obs[j], marg, t, L, 1.0)
    stop = pair_end[t0 + t]
    for p in range(c, stop):
        G[feature[p]] += marg[t, label_at(label, p)]
    return stop


@njit(inline="always", **JIT)
def label_at(label, c):
    """The label of the runs' pair c, its end mark taken off (``~y`` if ``y < 0``) without
    a branch."""
    y = np.int64(label[c])
    return y ^ (y >> 63)


@njit(inline="always", **JIT)
def run_gradient(space, tok_ptr, tok_obs, t0, T, L, exp_trans, work, G, expW, expWd, Gd, runs,
                 s):
    """:func:`crfkit.kernels.gradient.factored_gradient` of sequence s (tokens t0 ..
    t0+T-1) for a binary corpus whose tokens share one transition matrix, its sparse
    features read from ``runs``; returns (shift, logz) as it does."""
    trans_offset, has_trans = space[6], space[7]
    expu, alpha, beta, scale, pair, tmp = work[2], work[4], work[5], work[6], work[7], work[8]
    start, feature, label, dense_end, pair_end = runs
    run_factors(expW, tok_ptr, tok_obs, feature, label, dense_end, pair_end, start[s], t0, T,
                expu, expWd)
    pairs = has_trans and T > 1
    logz = shared_logz(expu, exp_trans[0], exp_trans[1], T, L, alpha, beta, scale, tmp, pair,
                       pairs, 0.0)
    if pairs and logz == logz:
        add_transition_expectations(G, trans_offset, L, pair, exp_trans[0])
    run_expectations(G, tok_ptr, tok_obs, feature, label, dense_end, pair_end, start[s], t0, T,
                     L, alpha, beta, Gd)
    return 0.0, logz
