"""The values of ``%v`` patterns: the number a column holds, per token and pattern.

A pattern with a ``%v[offset,column]`` command (:mod:`crfkit.features.patterns`)
gives its observation a value at each token: the number in that column at
that offset (0 where the offset falls outside the sequence: padding has no
number), which multiplies the observation's weights in the kernels
(:mod:`crfkit.kernels.valued`). Other patterns have value 1. A field that
is not a finite number is an error naming the file, line and column.
"""

from __future__ import annotations

from collections.abc import Sequence as Seq

import numpy as np

from crfkit.errors import InputError
from crfkit.features.patterns import Pattern
from crfkit.io.reader import Sequence


def value_matrix(patterns: list[Pattern], listed: list[int], seqs: Seq[Sequence],
                 source: str) -> np.ndarray | None:
    """(n_tokens, len(listed)) float64 values of the listed patterns, or None when no
    pattern has a value command (a binary corpus)."""
    valued = [(j, patterns[p].value) for j, p in enumerate(listed) if patterns[p].value]
    if not valued:
        return None
    n_tokens = sum(len(s.rows) for s in seqs)
    out = np.ones((n_tokens, len(listed)))
    t0 = 0
    cache: dict[str, float] = {}
    for seq in seqs:
        n = len(seq.rows)
        for j, command in valued:
            for i in range(n):
                at = command.position(i, n)
                if not 0 <= at < n:
                    out[t0 + i, j] = 0.0
                    continue
                field = seq.rows[at][command.column]
                number = cache.get(field)
                if number is None:
                    number = cache[field] = _number(field, source, seq.lines[at],
                                                    command.column)
                out[t0 + i, j] = number
        t0 += n
    return out


def _number(field: str, source: str, line: int, column: int) -> float:
    try:
        number = float(field)
    except ValueError:
        number = float("nan")
    if not np.isfinite(number):
        raise InputError(f"column {column + 1} holds {field!r}, which a %v pattern reads as a "
                         f"number", path=source, line=line, column=column + 1)
    return number


def occurrence_values(values: np.ndarray | None, obs: np.ndarray) -> np.ndarray | None:
    """The values of the occurrences that :func:`crfkit.features.extract.token_lists`
    keeps (obs >= 0), in its order; None stays None."""
    if values is None:
        return None
    return np.ascontiguousarray(values[obs >= 0], dtype=np.float64)
