"""The best label path of every sequence of a batch, in numpy only.

Why this exists beside the Numba kernels of :mod:`crfkit.kernels.decoder`: start-up
cost. Importing Numba takes about half a second and loading its cached
kernels almost a second more on the first call, so ``crfkit label`` spent
1.8 s on a single sentence, nearly all of it before decoding began. The
plain labelling (best path only: no n-best, scores, marginals or posterior
decoding) is the common case in shell pipelines; vectorised numpy does it
in about 0.15 s for the CoNLL-2000 test file (the kernels: 0.08 s, once
loaded), with nothing to import beyond numpy. Everything else still goes
to :mod:`crfkit.kernels.decoder`.

The result is the one of ``decode(model, data, nbest=1)``: the same lattice
(model types, ``token_ok`` / ``trans_ok`` masks as ``-inf``), the same
floating-point additions in the same order, and the same tie-breaking as
:func:`crfkit.kernels.lattice.viterbi`: the lower previous label wins a tie in the
max, the lower label a tie among final labels (``np.argmax`` returns the
first maximum, the kernel keeps the first strictly larger value). So the
paths are the same, ties included, and the scores too (to the bit on
CoNLL-2000); only a MEMM's or MaxEnt's log-softmax may differ in the last
bit (numpy's ``exp``/``log`` are not Numba's), which matters only between
paths tied to the last bit. A sequence with no allowed path scores
``-inf``, an empty one too.

How it is vectorised:

* unigram scores ``psi[t, y]``: each observation used by the batch gets a
  dense row of L weights once, and a token's scores are the sum of its
  rows, one observation slot after the other (see :func:`_add_unigrams`);
* transitions: one dense ``L x L`` matrix for every token, or with
  observation bigrams (or a MEMM's per-token normalisation) one block per
  token, built for a chunk of tokens at a time so that a step never holds
  more than about ``CHUNK_CELLS`` floats;
* Viterbi runs time-major: sequences sorted by decreasing length, so those
  still running at step ``t`` are a prefix, and each step adds the
  ``[label, sequence]`` scores to the transitions as one ``(L, L, sequence)``
  block (chunked) and takes its maximum over the previous label. The
  forward pass keeps maxima only; the backward pass recomputes, at each
  step and for all sequences at once, the previous label that gave the
  label their path takes (cheaper than tracking an argmax for every label
  of every token).

One Python iteration per token of the longest sequence: fine for sentences,
slow (seconds) for a batch made of one 50,000-token sequence.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from crfkit.config import NORM_MAXENT, NORM_MEMM
from crfkit.kernels.decoded import Decoded, Weighted, Weights  # noqa: F401  (their old home)
from crfkit.space import Dataset, FeatureSpace

CHUNK_CELLS = 1 << 20  # floats in one (L, L, rows) block of transitions: 8 MB
DENSE_CELLS = 1 << 22  # floats in the table of observation rows of unigram scores: 32 MB
ROW_CHUNK = 4096  # tokens whose scores are summed at once (their block stays in cache)


def best_paths(model: Weighted, data: Dataset, *, token_ok: np.ndarray | None = None,
               trans_ok: np.ndarray | None = None) -> Decoded:
    """Best path and score of every sequence: ``decode(model, data, nbest=1)`` without Numba.

    ``token_ok`` (n_tokens, L) and ``trans_ok`` (L, L) are boolean masks of
    allowed labels / transitions. ``log_z`` is left NaN, as decode leaves it
    when not asked for.
    """
    L = model.space.n_labels
    if token_ok is not None and token_ok.shape != (data.n_tokens, L):
        raise ValueError(f"token_ok has shape {token_ok.shape}, expected {(data.n_tokens, L)}")
    lattice = Lattice(model, data, token_ok, trans_ok)
    paths, scores = viterbi(lattice, data.seq_ptr)
    return Decoded(paths=paths[:, None], scores=scores[:, None],
                   log_z=np.full(data.n_seqs, np.nan), marginals=None)


# --- lattice: features -> scores ---------------------------------------------------------------
def _expand(ptr: np.ndarray, owners: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Concatenated ranges ``ptr[o]:ptr[o+1]`` of every ``o`` in ``owners``, in order.

    Returns the flat indices and, for each, its position in ``owners``: one
    level of CSR walked for a whole batch without a Python loop.
    """
    starts = ptr[owners]
    counts = ptr[owners + 1] - starts
    position = np.repeat(np.arange(len(owners)), counts)
    # index = start of its range + its rank inside the range
    first = np.cumsum(counts) - counts
    index = np.arange(int(counts.sum()), dtype=np.int64) + np.repeat(starts - first, counts)
    return index, position


def unigram_scores(W: np.ndarray, space: FeatureSpace, data: Dataset) -> np.ndarray:
    """psi[t, y]: the sum of the weights of the unigram features firing at token t for y."""
    psi = np.zeros((data.n_tokens, space.n_labels))
    _add_unigrams(psi, W, space, data, 0, data.n_tokens)
    return psi


def _add_unigrams(psi: np.ndarray, W: np.ndarray, space: FeatureSpace, data: Dataset,
                  t0: int, t1: int) -> None:
    """psi[t0:t1] += unigram scores, through dense rows of the observations these tokens use.

    Walking the sparse features of every (token, observation) pair costs
    half a dozen numpy passes over ~150 features per token (CoNLL-2000);
    the observations of a batch are far fewer than its pairs, so each gets
    its dense row of L scores once, and a token's scores are then the sum
    of its rows, added one observation slot after the other: the kernels'
    order, with 0.0 added where a label has no feature (exact). The table
    holds at most ``DENSE_CELLS`` floats: a range of tokens that needs more
    is split in halves.
    """
    tok_ptr = data.tok_ptr
    obs = data.tok_obs[tok_ptr[t0]:tok_ptr[t1]]
    present = np.zeros(space.n_obs, dtype=np.bool_)
    present[obs] = True
    ids = np.flatnonzero(present)
    if len(ids) * space.n_labels > DENSE_CELLS and t1 - t0 > 1:
        middle = (t0 + t1) // 2
        _add_unigrams(psi, W, space, data, t0, middle)
        _add_unigrams(psi, W, space, data, middle, t1)
        return
    table = _observation_rows(W, space, ids)
    row_of = np.empty(space.n_obs + 1, dtype=np.int32)  # observation id -> row of the table
    row_of[ids] = np.arange(len(ids), dtype=np.int32)
    row_of[-1] = len(ids)  # no observation (-1): the row of zeros
    rows = [row_of[column] for column in _slot_columns(data, t0, t1)]
    buffer = np.empty((min(ROW_CHUNK, t1 - t0), space.n_labels))
    for c0 in range(0, t1 - t0, ROW_CHUNK):
        c1 = min(t1 - t0, c0 + ROW_CHUNK)
        out, buf = psi[t0 + c0:t0 + c1], buffer[:c1 - c0]
        for row in rows:
            # Every row index is in range: "clip" only skips the bounds check (~30% faster).
            np.take(table, row[c0:c1], axis=0, out=buf, mode="clip")
            out += buf


def _slot_columns(data: Dataset, t0: int, t1: int) -> list[np.ndarray]:
    """Observation ids of tokens t0..t1 slot by slot (-1 past a token's last): column k
    holds each token's k-th observation, so adding the columns in order is the kernels'
    order. The pattern columns of ``data.obs_matrix`` are such columns (with -1 holes,
    which add zeros); without it they are built from the lists."""
    if data.obs_matrix is not None:
        return [data.obs_matrix[t0:t1, j] for j in range(data.obs_matrix.shape[1])]
    tok_ptr = data.tok_ptr
    counts = np.diff(tok_ptr[t0:t1 + 1])
    slots = np.full((int(counts.max(initial=0)), t1 - t0), -1, dtype=np.int32)
    token = np.repeat(np.arange(t1 - t0), counts)
    rank = np.arange(int(tok_ptr[t1] - tok_ptr[t0])) - np.repeat(tok_ptr[t0:t1] - tok_ptr[t0],
                                                                  counts)
    slots[rank, token] = data.tok_obs[tok_ptr[t0]:tok_ptr[t1]]
    return list(slots)


def _observation_rows(W: np.ndarray, space: FeatureSpace, ids: np.ndarray) -> np.ndarray:
    """Dense unigram weights (len(ids) + 1, L) of observations ``ids``; the last row is zeros."""
    table = np.zeros((len(ids) + 1, space.n_labels))
    feat, row = _expand(space.u_ptr, ids)
    table[row, space.u_lab[feat]] = W[feat]
    return table


def transition_block(W: np.ndarray, space: FeatureSpace) -> np.ndarray:
    """The dense L x L transition scores [previous, label] (zeros when the model has none)."""
    L = space.n_labels
    if not space.has_trans:
        return np.zeros((L, L))
    return W[space.trans_offset:space.trans_offset + L * L].reshape(L, L).copy()


def log_softmax(x: np.ndarray, axis: int) -> np.ndarray:
    """x - log sum exp(x) along ``axis``, with the kernels' max shift."""
    m = x.max(axis=axis, keepdims=True)
    return x - (m + np.log(np.exp(x - m).sum(axis=axis, keepdims=True)))


class Lattice:
    """Unigram scores of a batch and the transition scores into any of its tokens.

    Follows :func:`crfkit.kernels.decoder.decode_block`: transition penalties (0 or
    ``-inf``) are added to the dense block before the observation bigrams; a
    MaxEnt's ``psi`` is log-softmaxed per token; a MEMM normalises
    ``psi[t] + phi[t, a]`` over the label for every previous label ``a``
    (see :func:`crfkit.kernels.decoder.local_normalise`) from the *raw* scores, gets
    its penalties afterwards, and keeps only ``psi[0]`` (log-softmaxed).
    Token masks come last, so constraints restrict the model's own scores.
    """

    def __init__(self, model: Weighted, data: Dataset, token_ok: np.ndarray | None,
                 trans_ok: np.ndarray | None) -> None:
        s, W = model.space, model.weights
        self.space, self.data, self.W = s, data, W
        self.L = L = s.n_labels
        self.memm = model.normalisation == NORM_MEMM
        self.per_token = s.n_b > 0 or self.memm  # else one matrix serves every token
        self._b_cell: np.ndarray | None = None  # see _bigram_blocks
        self._b_weight: np.ndarray | None = None
        self.pen = np.zeros((L, L))
        if trans_ok is not None:
            self.pen[~trans_ok] = -np.inf
        self.raw = transition_block(W, s)
        self.trans = self.raw + self.pen
        psi = unigram_scores(W, s, data)
        if model.normalisation == NORM_MAXENT:
            psi = log_softmax(psi, axis=1)
        if self.memm:
            self.psi_raw = psi
            psi = np.zeros_like(psi)
            first = data.seq_ptr[:-1][np.diff(data.seq_ptr) > 0]
            psi[first] = log_softmax(self.psi_raw[first], axis=1)
        if token_ok is not None:
            psi[~token_ok] = -np.inf
        self.psi = psi

    def transitions(self, tok: np.ndarray) -> np.ndarray:
        """phi[a, b, r]: score of label a at the token before ``tok[r]``, then b at ``tok[r]``.

        The last axis has length 1 (broadcast) when the model has neither
        observation bigrams nor per-token normalisation.
        """
        if not self.per_token:
            return self.trans[:, :, None]
        if not self.memm:
            return self._bigram_blocks(tok, self.trans)
        blocks = self._bigram_blocks(tok, self.raw)
        blocks += self.psi_raw[tok].T[None]
        blocks = log_softmax(blocks, axis=1)
        blocks += self.pen[:, :, None]
        return blocks

    def _bigram_blocks(self, tok: np.ndarray, base: np.ndarray) -> np.ndarray:
        """base + the observation bigrams firing at each token of ``tok``, as (L, L, len(tok)).

        Weights are added one by one in the kernels' order: ``np.bincount`` sums
        its input in order, so each cell gets 0 + base first, then its weights,
        as ``np.add.at`` on ``base`` would, bit for bit, ~6x faster.
        """
        s, L, n = self.space, self.L, len(tok)
        if self._b_cell is None:  # each bigram feature's (previous, current) cell, once
            self._b_cell = s.b_prev.astype(np.int64) * L + s.b_cur
            self._b_weight = self.W[s.n_u:s.n_u + s.n_b]
        obs_index, obs_pos = _expand(self.data.tok_ptr, tok)
        feat, feat_obs = _expand(s.b_ptr, self.data.tok_obs[obs_index].astype(np.int64))
        flat = self._b_cell[feat] * n + obs_pos[feat_obs]
        cells = L * L * n
        sums = np.bincount(np.concatenate([np.arange(cells), flat]),
                           weights=np.concatenate([np.repeat(base.ravel(), n),
                                                   self._b_weight[feat]]),
                           minlength=cells)
        return sums.reshape(L, L, n)


# --- Viterbi ---------------------------------------------------------------------------------
@dataclass
class TimeMajor:
    """Where each token of a batch sits when sequences are sorted by decreasing length and
    their tokens laid out time step after time step.

    ``running[t]`` sequences have a token t: the first ``running[t]`` in
    ``longest_first``; their tokens at t are ``tokens[offset[t]:offset[t] + running[t]]``.
    """

    longest_first: np.ndarray  # sequence ids
    lengths: np.ndarray  # their lengths
    running: np.ndarray  # (T_max + 1,)
    offset: np.ndarray  # (T_max + 1,)
    tokens: np.ndarray  # (n_tokens,) token ids in time-major order

    @classmethod
    def of(cls, seq_ptr: np.ndarray) -> TimeMajor:
        lengths = np.diff(seq_ptr)
        by_length = np.argsort(-lengths, kind="stable")
        lens = lengths[by_length]
        T_max = int(lens[0]) if len(lens) else 0
        running = np.searchsorted(-lens, -np.arange(T_max + 1), side="left")
        offset = np.concatenate([[0], np.cumsum(running[:-1])])
        row = np.repeat(np.arange(len(by_length)), lens)  # sorted sequence of each token
        t = np.arange(len(row)) - np.repeat(np.cumsum(lens) - lens, lens)
        tokens = np.empty(len(row), dtype=np.int64)
        tokens[offset[t] + row] = seq_ptr[:-1][by_length][row] + t
        return cls(longest_first=by_length, lengths=lens, running=running, offset=offset,
                   tokens=tokens)

    def step(self, t: int, k: int | None = None) -> slice:
        """Time-major columns of the first ``k`` (default: all) running sequences at step t."""
        return slice(self.offset[t], self.offset[t] + (self.running[t] if k is None else k))


def viterbi(lattice: Lattice, seq_ptr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Best path (int32 per token) and score (per sequence) of every sequence of a batch.

    All sequences advance together, one time step per iteration, and scores
    are laid out ``[label, time-major token]`` so that every numpy operation
    runs over contiguous rows. The forward pass keeps only maxima (half the
    work of also tracking the argmax); the backward pass recomputes, for the
    one label each sequence's path takes, which previous label gave it.
    """
    n_tok = int(seq_ptr[-1])
    scores = np.full(len(seq_ptr) - 1, -np.inf)
    if not n_tok:
        return np.zeros(0, dtype=np.int32), scores
    tm = TimeMajor.of(seq_ptr)
    psi = np.ascontiguousarray(lattice.psi[tm.tokens].T)
    delta = psi.copy()  # best prefix score ending in each label at each token
    for t in range(1, len(tm.running) - 1):
        cols = tm.step(t)
        previous = delta[:, tm.step(t - 1, tm.running[t])]
        _max_plus(lattice, previous, tm.tokens[cols], out=delta[:, cols])
        delta[:, cols] += psi[:, cols]
    alive = np.arange(tm.running[0])  # sorted sequences of at least one token
    final = delta[:, tm.offset[tm.lengths[alive] - 1] + alive]
    last = final.argmax(axis=0)  # ties: the lower label, as the kernel
    scores[tm.longest_first[alive]] = final[last, alive]
    return _backtrack(lattice, delta, tm, last), scores


def _chunks(lattice: Lattice, k: int) -> list[slice]:
    """The running sequences a step handles at once: as many as keep an (L, L, chunk)
    block of sums near ``CHUNK_CELLS`` floats."""
    size = max(1, CHUNK_CELLS // lattice.L**2)
    return [slice(r0, r0 + size) for r0 in range(0, k, size)]


def _max_plus(lattice: Lattice, previous: np.ndarray, tok: np.ndarray, out: np.ndarray
              ) -> None:
    """out[b, r] = max over a of previous[a, r] + phi[a, b] at token tok[r].

    All sums of a chunk at once, then one maximum over a: two numpy calls
    per step and chunk, rather than two per previous label.
    """
    for r in _chunks(lattice, len(tok)):
        sums = lattice.transitions(tok[r]) + previous[:, None, r]
        np.maximum.reduce(sums, axis=0, out=out[:, r])


def _best_previous(lattice: Lattice, previous: np.ndarray, tok: np.ndarray,
                   label: np.ndarray) -> np.ndarray:
    """The first a maximising previous[a, r] + phi[a, label[r]] at token tok[r].

    The same sums as in the forward pass, so the same bits: the first
    maximum is the lower previous label on ties, as in
    :func:`crfkit.kernels.lattice.viterbi`, and label 0 when all are ``-inf``.
    Per-token transitions are built a second time for this.
    """
    out = np.empty(len(tok), dtype=np.int64)
    for r in _chunks(lattice, len(tok)):
        phi, b = lattice.transitions(tok[r]), label[r]
        column = phi[:, b, np.arange(len(b)) if lattice.per_token else 0]  # (L, chunk)
        out[r] = (previous[:, r] + column).argmax(axis=0)
    return out


def _backtrack(lattice: Lattice, delta: np.ndarray, tm: TimeMajor, last: np.ndarray
               ) -> np.ndarray:
    """Paths of all sequences at once, from their last labels back to their starts."""
    label = last.copy()
    path = np.empty(len(tm.tokens), dtype=np.int32)  # time-major
    for t in range(len(tm.running) - 2, -1, -1):
        k = tm.running[t]
        cols = tm.step(t)
        path[cols] = label[:k]
        if t:
            previous = delta[:, tm.step(t - 1, k)]
            label[:k] = _best_previous(lattice, previous, tm.tokens[cols], label[:k])
    paths = np.empty_like(path)
    paths[tm.tokens] = path
    return paths
