"""64-bit observation keys and the vectorised open-addressing index that finds them.

An observation is a tuple of command values (string-table ids); its key is a
splitmix64 hash of the tuple seeded by the pattern index. Keys are checked
to be distinct when a vocabulary is built or loaded, so two observations can
never merge silently.
"""

from __future__ import annotations

import numpy as np

_MASK64 = (1 << 64) - 1
_MUL1 = np.uint64(0xBF58476D1CE4E5B9)
_MUL2 = np.uint64(0x94D049BB133111EB)
_PRIME = np.uint64(0x100000001B3)


def tuple_keys(pattern_index: int, rows: np.ndarray) -> np.ndarray:
    """The 64-bit key of each row of command values (splitmix64, seeded by the pattern).

    The one definition of an observation's key: training computes it for
    each distinct tuple, labelling for every token, and the model stores it.
    """
    with np.errstate(over="ignore"):
        seed = _mix(np.full(len(rows), (pattern_index + 1) & _MASK64, dtype=np.uint64))
        h = seed
        for j in range(rows.shape[1]):
            h = _mix(h * _PRIME + (rows[:, j].astype(np.int64) + 1).astype(np.uint64))
    return h


def _mix(h: np.ndarray) -> np.ndarray:
    """splitmix64 finaliser on uint64 arrays (wrapping arithmetic)."""
    h = h ^ (h >> np.uint64(30))
    h = h * _MUL1
    h = h ^ (h >> np.uint64(27))
    h = h * _MUL2
    return h ^ (h >> np.uint64(31))


class KeyIndex:
    """Finds 64-bit keys among given ones, vectorised: an open-addressing hash table.

    The keys are hashes, so their top bits are uniform: they address a table
    of 2 to 4 slots per key directly, with linear probing. Building and
    finding are loops over probe rounds, each one whole-array numpy step over
    the keys not yet placed (or found): most settle in the first round, so
    building costs a few passes over the keys rather than a sort (which made
    loading a model 60 ms slower). ``repeated`` tells whether a key was given
    twice: the integrity check of a vocabulary, free while building.
    """

    def __init__(self, keys: np.ndarray) -> None:
        self.keys = np.ascontiguousarray(keys, dtype=np.uint64)
        n = len(self.keys)
        self.bits = n.bit_length() + 1
        self.shift = np.uint64(64 - self.bits)
        self.mask = (1 << self.bits) - 1
        self.slots = np.full(1 << self.bits, -1, dtype=np.int32)
        self.repeated = False
        self.longest = 0  # probes of the longest search
        todo = np.arange(n, dtype=np.int32)
        slot = self._home(self.keys)
        while len(todo):
            self.longest += 1
            free = self.slots[slot] < 0
            # Several keys may claim one free slot: one write lands, the others probe on.
            self.slots[slot[free]] = todo[free]
            occupant = self.slots[slot]
            placed = occupant == todo
            todo, slot, occupant = todo[~placed], slot[~placed], occupant[~placed]
            # Equal keys share their home, so they probe in step: one is placed where
            # the other then finds it.
            if (self.keys[occupant] == self.keys[todo]).any():
                self.repeated = True
            slot = (slot + 1) & self.mask

    def _home(self, keys: np.ndarray) -> np.ndarray:
        return (keys >> self.shift).astype(np.int64)

    def find(self, queries: np.ndarray) -> np.ndarray:
        """Id of each query key, -1 if absent (int32)."""
        if not len(self.keys):
            return np.full(len(queries), -1, dtype=np.int32)
        # First probe over whole arrays (it settles almost every query). An empty
        # slot (-1) reads the last key; a "match" there still yields -1.
        slot = self._home(queries)
        occupant = self.slots[slot]
        hit = self.keys[occupant] == queries
        out = np.where(hit, occupant, np.int32(-1))
        todo = np.flatnonzero(~hit & (occupant >= 0))
        slot = slot[todo]
        for _ in range(self.longest - 1):
            if not len(todo):
                break
            slot = (slot + 1) & self.mask
            occupant = self.slots[slot]
            hit = self.keys[occupant] == queries[todo]
            out[todo[hit]] = occupant[hit]
            going_on = ~hit & (occupant >= 0)
            todo, slot = todo[going_on], slot[going_on]
        return out

