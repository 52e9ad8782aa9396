"""Observation keys in Numba: command gathering, 64-bit hashing, hash tables.

A pattern's observation at a token is the tuple of its command values
(table ids). :func:`gather_commands` builds those tuples for a whole batch,
:func:`hash_rows` turns each into a 64-bit key (splitmix64 mixing), and
open-addressing tables (linear probing, load factor <= 1/2; the keys are
well mixed, so their low bits pick the slot) intern a corpus in one pass
(ids in order of first appearance, with counts) or look keys up in O(1).
Distinct tuples that hash alike are detected when a corpus is interned.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from crfkit.config import JIT

_MUL1 = np.uint64(0xBF58476D1CE4E5B9)
_MUL2 = np.uint64(0x94D049BB133111EB)
_PRIME = np.uint64(0x100000001B3)


@njit(**JIT)
def _mix(h):
    """splitmix64 finaliser: a cheap, well-spread 64-bit mix (wrapping arithmetic)."""
    h = h ^ (h >> np.uint64(30))
    h = h * _MUL1
    h = h ^ (h >> np.uint64(27))
    h = h * _MUL2
    return h ^ (h >> np.uint64(31))


@njit(**JIT)
def gather_commands(token_values, cmd_transform, cmd_offset, cmd_absolute, pad_ids, seq_ptr):
    """Command values of one pattern at every token: (n_tokens, n_commands) int32.

    ``token_values[k, t]`` is transform k's value id at token t; ``pad_ids[j, d]``
    the padding value of command j at distance d outside the sequence.
    Relative offsets address ``i + offset``; absolute ones ``offset - 1`` (>0)
    or ``n + offset`` (<0).
    """
    n_tok = seq_ptr[-1]
    w = cmd_transform.size
    comps = np.empty((n_tok, w), dtype=np.int32)
    for s in range(seq_ptr.size - 1):
        t0 = seq_ptr[s]
        n = seq_ptr[s + 1] - t0
        for j in range(w):
            off = cmd_offset[j]
            row = token_values[cmd_transform[j]]
            for i in range(n):
                if cmd_absolute[j]:
                    p = off - 1 if off > 0 else n + off
                else:
                    p = i + off
                if p < 0:
                    comps[t0 + i, j] = pad_ids[j, -p]
                elif p >= n:
                    comps[t0 + i, j] = pad_ids[j, p - n + 1]
                else:
                    comps[t0 + i, j] = row[t0 + p]
    return comps


@njit(**JIT)
def hash_rows(pattern_index, comps, salt=0):
    """64-bit key of every row of command values, seeded by the pattern index.

    A different ``salt`` gives an independent hash (used to detect collisions).
    """
    n = comps.shape[0]
    keys = np.empty(n, dtype=np.uint64)
    seed = _mix(np.uint64(pattern_index + 1) + np.uint64(salt) * _MUL2)
    for i in range(n):
        h = seed
        for j in range(comps.shape[1]):
            h = _mix(h * _PRIME + np.uint64(np.int64(comps[i, j]) + 1))
        keys[i] = h
    return keys


@njit(**JIT)
def _capacity(n):
    cap = 16
    while cap < 2 * n + 2:
        cap *= 2
    return cap


@njit(**JIT)
def _insert_slot(slots, k, check, sid):
    mask = slots.shape[0] - 1
    h = np.int64(k & np.uint64(mask))
    while slots[h, 2] != 0:
        h = (h + 1) & mask
    slots[h, 0] = k
    slots[h, 1] = check
    slots[h, 2] = sid + 1


@njit(**JIT)
def unique_keys(keys, checks):
    """(inverse, first, counts, clash) of keys in first-seen order.

    ``inverse[i]`` is the id of key i, ``first[id]`` where it was first seen,
    ``counts[id]`` how often. ``checks`` is a second, independent hash of
    what each key stands for; ``clash`` is true if two keys agree but their
    checks differ (a 64-bit collision, detected with 128 bits). A slot holds
    (key, check, id + 1) in one cache line, and the table starts small and
    doubles, so a pattern with few distinct values stays in cache.
    """
    n = keys.size
    cap = 1024
    slots = np.zeros((cap, 3), dtype=np.uint64)
    inverse = np.empty(n, dtype=np.int64)
    first = np.empty(n, dtype=np.int64)
    counts = np.zeros(n, dtype=np.int64)
    clash = False
    m = 0
    for i in range(n):
        k = keys[i]
        c = checks[i]
        h = np.int64(k & np.uint64(cap - 1))
        while True:
            sid = np.int64(slots[h, 2]) - 1
            if sid < 0:
                slots[h, 0] = k
                slots[h, 1] = c
                slots[h, 2] = m + 1
                first[m] = i
                counts[m] = 1
                inverse[i] = m
                m += 1
                if 2 * m > cap:  # grow: rehash every key seen so far
                    cap *= 2
                    slots = np.zeros((cap, 3), dtype=np.uint64)
                    for r in range(m):
                        _insert_slot(slots, keys[first[r]], checks[first[r]], r)
                break
            if slots[h, 0] == k:
                inverse[i] = sid
                counts[sid] += 1
                if slots[h, 1] != c:
                    clash = True
                break
            h = (h + 1) & (cap - 1)
    return inverse, first[:m].copy(), counts[:m].copy(), clash


@njit(**JIT)
def build_table(keys):
    """Slots for ``keys`` (assumed distinct): (slot_key, slot_id)."""
    cap = _capacity(keys.size)
    mask = np.uint64(cap - 1)
    slot_key = np.zeros(cap, dtype=np.uint64)
    slot_id = np.full(cap, -1, dtype=np.int32)
    for i in range(keys.size):
        k = keys[i]
        h = np.int64(k & mask)
        while slot_id[h] >= 0:
            h = (h + 1) & (cap - 1)
        slot_key[h] = k
        slot_id[h] = i
    return slot_key, slot_id


@njit(**JIT)
def lookup(slot_key, slot_id, queries, rows, out):
    """out[i] = id of queries[i], or -1 when absent or when rows[i] has an unknown (-1) value."""
    cap = slot_key.size
    mask = np.uint64(cap - 1)
    for i in range(queries.size):
        unknown = False
        for j in range(rows.shape[1]):
            if rows[i, j] < 0:
                unknown = True
        if unknown:
            out[i] = -1
            continue
        k = queries[i]
        h = np.int64(k & mask)
        found = -1
        while True:
            sid = slot_id[h]
            if sid < 0:
                break
            if slot_key[h] == k:
                found = sid
                break
            h = (h + 1) & (cap - 1)
        out[i] = found
