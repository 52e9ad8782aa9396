"""The observation vocabulary: observation id <-> 64-bit key, and what prints it."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from crfkit.features.keys import KeyIndex, tuple_keys


class ObservationVocab:
    """Observation ids: 64-bit keys plus what is needed to print each observation.

    ``values`` holds, per observation in id order, the table ids of its
    command values (``pattern_commands[pattern[i]]`` of them). Labelling
    never reads them (only printing and extending a vocabulary do), so a
    loaded model defers their range check to their first use:
    ``check_values`` runs once, before ``values`` is first returned.
    """

    def __init__(self, keys: np.ndarray, pattern: np.ndarray, values: np.ndarray, *,
                 check_values: Callable[[np.ndarray], None] | None = None) -> None:
        self._keys: np.ndarray | None = np.ascontiguousarray(keys, dtype=np.uint64)
        self.pattern = np.ascontiguousarray(pattern, dtype=np.int32)
        self._values = np.ascontiguousarray(values, dtype=np.int32)
        self._check_values = check_values
        self._index: KeyIndex | None = None
        self._widths = np.zeros(0, dtype=np.int64)  # per pattern, once the keys are dropped

    def __len__(self) -> int:
        return len(self.pattern)

    @property
    def keys(self) -> np.ndarray:
        if self._keys is None:
            self._keys = self._hashed()
        return self._keys

    def drop_keys(self, n_commands: np.ndarray) -> None:
        """Free the keys until they are read again, then hash them anew from the values
        (``n_commands``: each pattern's count of values). Only for keys made by
        :func:`tuple_keys`, as training makes them: the optimiser reads none, and they are
        8 MB of its peak on Brown."""
        self._widths = np.asarray(n_commands, dtype=np.int64)
        self._keys = self._index = None

    def _hashed(self) -> np.ndarray:
        """Every observation's key, from its pattern and values (:func:`tuple_keys`)."""
        values = self.values
        starts = np.concatenate([[0], np.cumsum(self._widths[self.pattern])])
        keys = np.empty(len(self.pattern), dtype=np.uint64)
        for p in np.unique(self.pattern).tolist():
            ids = np.flatnonzero(self.pattern == p)
            columns = np.arange(int(self._widths[p]))
            keys[ids] = tuple_keys(p, values[starts[ids][:, None] + columns])
        return keys

    @property
    def values(self) -> np.ndarray:
        if self._check_values is not None:
            self._check_values(self._values)  # raises if a value is out of range
            self._check_values = None
        return self._values

    @property
    def index(self) -> KeyIndex:
        if self._index is None:
            self._index = KeyIndex(self.keys)
        return self._index

    def has_repeated_keys(self) -> bool:
        return self.index.repeated

    def drop_index(self) -> None:
        """Free the lookup index (rebuilt on first use): training looks no key up, and the
        index is as large as the keys (4 MB on CoNLL-2000) for the whole optimisation."""
        self._index = None

    def lookup(self, keys: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Ids of ``keys`` (int32); -1 where a key is unknown or its ``rows`` hold a -1."""
        found = self.index.find(keys)
        found[rows.min(axis=1, initial=0) < 0] = -1
        return found

    def subset(self, keep: np.ndarray, n_commands: np.ndarray) -> ObservationVocab:
        """A vocabulary with only the observations where ``keep`` is true, renumbered."""
        mask = np.repeat(keep, n_commands[self.pattern])
        return ObservationVocab(self.keys[keep], self.pattern[keep], self.values[mask])

