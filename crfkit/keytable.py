"""Open-addressing hash tables over 64-bit observation keys, in Numba.

Observation keys are already well-mixed hashes, so the low bits pick the
slot directly (linear probing, load factor <= 1/2). One pass interns a
whole corpus (ids in order of first appearance, with counts), and labelling
looks keys up in O(1) instead of a binary search's cache misses.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from crfkit.config import JIT


@njit(**JIT)
def _capacity(n):
    cap = 16
    while cap < 2 * n + 2:
        cap *= 2
    return cap


@njit(**JIT)
def unique_keys(keys):
    """(inverse, first, counts): id of every key in first-seen order, first index, count."""
    n = keys.size
    cap = _capacity(n)
    mask = np.uint64(cap - 1)
    slot_key = np.empty(cap, dtype=np.uint64)
    slot_id = np.full(cap, -1, dtype=np.int64)
    inverse = np.empty(n, dtype=np.int64)
    first = np.empty(n, dtype=np.int64)
    counts = np.zeros(n, dtype=np.int64)
    m = 0
    for i in range(n):
        k = keys[i]
        h = np.int64(k & mask)
        while True:
            sid = slot_id[h]
            if sid < 0:
                slot_id[h] = m
                slot_key[h] = k
                first[m] = i
                counts[m] = 1
                inverse[i] = m
                m += 1
                break
            if slot_key[h] == k:
                inverse[i] = sid
                counts[sid] += 1
                break
            h = (h + 1) & (cap - 1)
    return inverse, first[:m].copy(), counts[:m].copy()


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
def lookup(slot_key, slot_id, queries, out):
    """out[i] = id of queries[i], or -1 when absent."""
    cap = slot_key.size
    mask = np.uint64(cap - 1)
    for i in range(queries.size):
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
