"""Numba kernels that count what a training corpus contains.

Two questions, each answered in one pass over the corpus with no per-token
Python and no sort of the whole corpus:

* :func:`intern_rows` — which distinct observations does a pattern produce?
  A pattern's observation at a token is the tuple of its command values
  (string-table ids). The kernel gathers each tuple straight from the
  per-token value rows (padding outside the sequence) and interns it, in
  order of first appearance, with a count. Small value spaces (a POS
  trigram, a suffix) are addressed directly by their mixed-radix code;
  large ones (word bigrams) go through an open-addressing hash table that
  compares whole tuples, so interning is exact, never a hash guess;
* :func:`observed_pairs` — which (observation, label) or (observation,
  label pair) combinations occur, and how often? A counting sort by
  observation, then a per-observation tally in a scratch array of L (or
  L*L) slots that is reset only where it was touched.

Only training needs these; labelling looks observations up by key in numpy
(:class:`crfkit.features.vocab.ObservationVocab`), so it never waits for Numba.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from crfkit.config import JIT

_MUL1 = np.uint64(0xBF58476D1CE4E5B9)
_MUL2 = np.uint64(0x94D049BB133111EB)


@njit(**JIT)
def mix(h):
    """splitmix64 finaliser (wrapping arithmetic): spreads a tuple's bits over the slot mask."""
    h = h ^ (h >> np.uint64(30))
    h = h * _MUL1
    h = h ^ (h >> np.uint64(27))
    h = h * _MUL2
    return h ^ (h >> np.uint64(31))


@njit(**JIT)
def _tuple_hash(vals):
    h = np.uint64(0)
    for j in range(vals.size):
        h = mix(h + np.uint64(vals[j] + 1))
    return h


@njit(**JIT)
def _gather(vals, token_values, cmd_transform, cmd_offset, cmd_absolute, pad_ids, t0, i, n):
    """Command values of token ``i`` of the sequence starting at ``t0`` (length ``n``).

    Relative offsets address ``i + offset``; absolute ones ``offset - 1`` (> 0)
    or ``n + offset`` (< 0); ``pad_ids[j, d]`` is command j's padding value
    ``d`` steps outside the sequence.
    """
    for j in range(vals.size):
        p, outside = command_position(cmd_offset[j], cmd_absolute[j], i, n)
        vals[j] = pad_ids[j, outside] if outside else token_values[cmd_transform[j], t0 + p]


@njit(**JIT)
def command_position(offset, absolute, i, n):
    """(index, 0) that a command addresses from token ``i`` of a sequence of ``n``, or
    (index, d) when that index is d steps outside the sequence."""
    p = (offset - 1 if offset > 0 else n + offset) if absolute else i + offset
    if p < 0:
        return p, -p
    if p >= n:
        return p, p - n + 1
    return p, 0


@njit(**JIT)
def _same_row(rows, sid, vals):
    for j in range(vals.size):
        if rows[sid, j] != vals[j]:
            return False
    return True


@njit(**JIT)
def intern_rows(token_values, cmd_transform, cmd_offset, cmd_absolute, pad_ids, seq_ptr, radix,
                direct, inverse):
    """Distinct command-value tuples of one pattern: (rows, counts), and ``inverse``.

    ``inverse[t]`` (int32, filled in: a column of the caller's id matrix) is
    the id of token t's tuple, ids in order of first appearance; ``rows[id]``
    the tuple; ``counts[id]`` how often it occurs.
    ``radix[j]`` bounds command j's values. With ``direct`` a tuple is
    addressed by its mixed-radix code (the caller checks that the product of
    ``radix`` is small); otherwise through a hash table sized for the worst
    case (every token distinct), so it never grows: rebinding an array inside
    the loop would cost Numba reference counting on every token.
    """
    n_tok = seq_ptr[-1]
    w = cmd_transform.size
    vals = np.zeros(w, dtype=np.int64)
    size = 1
    if direct:
        for j in range(w):
            size *= radix[j]
    else:
        while size < 2 * n_tok:
            size *= 2
    # At most one tuple per token, and with direct addressing one per slot: a POS
    # pattern needs 48 rows, not one per token (these buffers are paid per pattern).
    capacity = max(min(n_tok, size) if direct else n_tok, 1)
    rows = np.empty((capacity, w), dtype=np.int32)
    counts = np.zeros(capacity, dtype=np.int64)
    slots = np.full(size, -1, dtype=np.int32)
    mask = np.uint64(size - 1)
    m = 0
    for s in range(seq_ptr.size - 1):
        t0 = seq_ptr[s]
        n = seq_ptr[s + 1] - t0
        for i in range(n):
            _gather(vals, token_values, cmd_transform, cmd_offset, cmd_absolute, pad_ids, t0, i, n)
            if direct:
                slot = 0
                for j in range(w):
                    slot = slot * radix[j] + vals[j]
                sid = slots[slot]
            else:
                slot = np.int64(_tuple_hash(vals) & mask)
                while True:
                    sid = slots[slot]
                    if sid < 0 or _same_row(rows, sid, vals):
                        break
                    slot = (slot + 1) & (size - 1)
            if sid < 0:
                sid = m
                slots[slot] = m
                for j in range(w):
                    rows[m, j] = vals[j]
                m += 1
            counts[sid] += 1
            inverse[t0 + i] = sid
    return rows[:m].copy(), counts[:m].copy()


@njit(**JIT)
def renumber(obs, new_id, first):
    """``obs[t, j] = new_id[first[j] + obs[t, j]]``: per-pattern ids to vocabulary ids."""
    for j in range(obs.shape[1]):
        base = first[j]
        for t in range(obs.shape[0]):
            obs[t, j] = new_id[base + obs[t, j]]


@njit(**JIT)
def observed_pairs(obs, columns, labels, first_token, n_obs, n_labels, pairs):
    """Distinct (observation, label) combinations of a corpus, with counts.

    Entries are ``obs[t, j]`` for the flagged ``columns`` (-1: none). With
    ``pairs`` false an entry's code is ``labels[t]``; with ``pairs`` true it
    is ``labels[t-1] * L + labels[t]``, skipping tokens that start a sequence.
    Returns CSR ``(ptr (n_obs + 1,), codes, counts)``: observation o's
    distinct codes, ascending, are ``codes[ptr[o]:ptr[o + 1]]``.
    """
    L = n_labels
    start, entries = _codes_by_observation(obs, columns, labels, first_token, n_obs, L, pairs)
    return _distinct_codes(entries, start, n_obs, L * L if pairs else L)


@njit(**JIT)
def _codes_by_observation(obs, columns, labels, first_token, n_obs, L, pairs):
    """Every entry's code, grouped by observation: ``entries[start[o]:start[o + 1]]``."""
    n_tok = obs.shape[0]
    start = np.zeros(n_obs + 1, dtype=np.int64)
    for t in range(n_tok):
        if pairs and first_token[t]:
            continue
        for j in range(columns.size):
            o = obs[t, columns[j]]
            if o >= 0:
                start[o + 1] += 1
    for o in range(n_obs):
        start[o + 1] += start[o]
    fill = start[:-1].copy()
    entries = np.empty(start[-1], dtype=np.int32)
    for t in range(n_tok):
        if pairs and first_token[t]:
            continue
        code = labels[t - 1] * L + labels[t] if pairs else labels[t]
        for j in range(columns.size):
            o = obs[t, columns[j]]
            if o >= 0:
                entries[fill[o]] = code
                fill[o] += 1
    return start, entries


@njit(**JIT)
def _distinct_codes(entries, start, n_obs, K):
    """Each observation's distinct codes (of ``K``), ascending, and their counts, as CSR.

    The distinct codes overwrite ``entries`` in place: observation o's are written at
    m <= start[o], after its own entries have been tallied.
    """
    tally = np.zeros(K, dtype=np.int64)
    touched = np.empty(K, dtype=np.int32)
    ptr = np.zeros(n_obs + 1, dtype=np.int64)
    codes = entries
    counts = np.empty(start[-1], dtype=np.int32)
    m = 0
    for o in range(n_obs):
        k = 0
        for e in range(start[o], start[o + 1]):
            c = entries[e]
            if tally[c] == 0:
                touched[k] = c
                k += 1
            tally[c] += 1
        if k * k > K:  # many codes: a scan of the tally is cheaper than sorting them
            for c in range(K):
                if tally[c]:
                    codes[m] = c
                    counts[m] = tally[c]
                    tally[c] = 0
                    m += 1
        else:  # few codes: insertion sort
            for a in range(1, k):
                c = touched[a]
                b = a
                while b > 0 and touched[b - 1] > c:
                    touched[b] = touched[b - 1]
                    b -= 1
                touched[b] = c
            for a in range(k):
                c = touched[a]
                codes[m] = c
                counts[m] = tally[c]
                tally[c] = 0
                m += 1
        ptr[o + 1] = m
    return ptr, codes[:m].copy(), counts[:m].copy()
