"""The counting of :mod:`crfkit.features.intern` in numpy, for small training corpora.

Numba compiles the counting kernels on their first call: about three seconds,
a quarter of the first training run after an install (the README's quick
start), for a corpus that numpy counts in milliseconds. Below
:data:`SMALL_CORPUS_TOKENS` tokens, training counts here instead, so a first
run compiles only the kernels of the objective; larger corpora keep the
kernels, which count in one pass without sorting.

Each function returns exactly what its kernel returns (the same ids, in the
same order, with the same dtypes), so the vocabulary, the feature space and
the model do not depend on which one counted.
"""

from __future__ import annotations

import numpy as np

# Corpora up to this many tokens are counted with numpy (module docstring).
SMALL_CORPUS_TOKENS = 1 << 17


def is_small(n_tokens: int) -> bool:
    """Whether a corpus of ``n_tokens`` is counted here rather than by the kernels."""
    return n_tokens <= SMALL_CORPUS_TOKENS


def intern_tuples(rows: np.ndarray, radix: np.ndarray, inverse: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Distinct rows of ``rows`` (n, w) in order of first appearance and their counts;
    ``inverse[t]`` (filled in) is row t's id: :func:`crfkit.features.intern.intern_rows`
    on rows already gathered. ``radix[j]`` bounds column j (values in -1 .. radix - 1)."""
    n, w = rows.shape
    if n == 0:
        return np.zeros((0, w), dtype=np.int32), np.zeros(0, dtype=np.int64)
    codes = _row_codes(rows, radix)
    _, first, where, counts = np.unique(codes, axis=0 if codes.ndim > 1 else None,
                                        return_index=True, return_inverse=True,
                                        return_counts=True)
    order = np.argsort(first, kind="stable")  # distinct rows by first appearance
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    inverse[:] = rank[where.reshape(-1)]
    return np.ascontiguousarray(rows[first[order]], dtype=np.int32), counts[order].astype(
        np.int64)


def _row_codes(rows: np.ndarray, radix: np.ndarray) -> np.ndarray:
    """One int64 per row (its mixed-radix code) when every code fits, else the rows."""
    shifted = radix.astype(np.float64) + 1.0  # values from -1: radix + 1 of them
    if float(np.prod(shifted)) >= 2.0**62:
        return rows
    code = np.zeros(len(rows), dtype=np.int64)
    for j in range(rows.shape[1]):
        code = code * int(radix[j] + 1) + (rows[:, j].astype(np.int64) + 1)
    return code


def observed_pairs_small(obs: np.ndarray, columns: np.ndarray, labels: np.ndarray,
                         first_token: np.ndarray, n_obs: int, n_labels: int, pairs: bool
                         ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`crfkit.features.intern.observed_pairs`: the distinct (observation, code)
    combinations of the flagged columns as CSR ``(ptr, codes, counts)``, codes ascending."""
    L = n_labels
    K = L * L if pairs else L
    if pairs:
        tokens = np.flatnonzero(~first_token)
        code = labels[tokens - 1].astype(np.int64) * L + labels[tokens]
    else:
        tokens = np.arange(obs.shape[0])
        code = labels.astype(np.int64)
    entries = obs[tokens][:, columns].astype(np.int64)  # (tokens, columns)
    keys = entries * K + code[:, None]
    keys = keys[entries >= 0]
    distinct, counts = np.unique(keys, return_counts=True)
    owner = distinct // K
    ptr = np.zeros(n_obs + 1, dtype=np.int64)
    np.cumsum(np.bincount(owner, minlength=n_obs), out=ptr[1:])
    return ptr, (distinct % K).astype(np.int32), counts.astype(np.int32)


def renumber_small(obs: np.ndarray, new_id: np.ndarray, first: np.ndarray) -> None:
    """:func:`crfkit.features.intern.renumber`: ``obs[t, j] = new_id[first[j] + obs[t, j]]``."""
    for j in range(obs.shape[1]):
        obs[:, j] = new_id[first[j] + obs[:, j]]
