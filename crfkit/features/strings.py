"""String tables: each distinct value of a column or transform gets a dense id.

Interning happens once per corpus column (:func:`intern_column`) and once per
transform result (:class:`StringTable`), so extraction afterwards works on
integers only.
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Sequence as Seq
from operator import itemgetter

import numpy as np


class StringTable:
    """Interns strings to dense ids (0, 1, ...); unseen strings map to -1 when frozen."""

    def __init__(self, strings: Iterable[str] = ()) -> None:
        self.strings: list[str] = list(strings)
        self.index: dict[str, int] = {s: i for i, s in enumerate(self.strings)}

    def __len__(self) -> int:
        return len(self.strings)

    def packed(self) -> tuple[int, str]:
        """The strings as one (count, newline-joined) block; no value contains a newline."""
        return len(self.strings), "\n".join(self.strings)

    @classmethod
    def unpack(cls, packed: tuple[int, str]) -> StringTable:
        count, text = packed
        return cls(text.split("\n") if count else [])

    def lookup(self, values: Seq[str], *, grow: bool) -> np.ndarray:
        index = self.index
        if grow:  # add the new distinct values first, then map everything at C speed
            for value in dict.fromkeys(values):
                if value not in index:
                    index[value] = len(self.strings)
                    self.strings.append(value)
            ids = map(index.__getitem__, values)
        else:
            ids = map(index.get, values, [-1] * len(values))
        return np.fromiter(ids, dtype=np.int32, count=len(values))


def intern_column(rows: list[list[str]], column: int) -> tuple[np.ndarray, list[str]]:
    """Column ids of every token (int64) and the distinct strings, in order of appearance."""
    return intern_values(list(map(itemgetter(column), rows)))


def intern_values(values: list[str]) -> tuple[np.ndarray, list[str]]:
    """Ids of ``values`` (int64) and the distinct strings, in order of appearance.

    One C-level pass: ``setdefault`` maps each value to the position where it
    first occurs; the positions that map to themselves are the first
    occurrences, and their ranks are the dense ids.
    """
    n = len(values)
    first_seen = np.fromiter(map({}.setdefault, values, range(n)), dtype=np.int64, count=n)
    is_first = first_seen == np.arange(n)
    rank = np.cumsum(is_first) - 1
    return rank[first_seen], list(map(values.__getitem__, np.flatnonzero(is_first).tolist()))
