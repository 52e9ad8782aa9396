"""Slow, obviously-correct references for the kernels: enumerate every label path.

Only for tiny problems (L**T paths). ``psi[t, y]`` are unigram scores and
``phi[t, a, b]`` transition scores into token t (phi[0] unused).
"""

from __future__ import annotations

import itertools

import numpy as np


def path_score(psi: np.ndarray, phi: np.ndarray, path: tuple[int, ...]) -> float:
    score = sum(psi[t, y] for t, y in enumerate(path))
    score += sum(phi[t, path[t - 1], path[t]] for t in range(1, len(path)))
    return float(score)


def all_paths(T: int, L: int):
    return itertools.product(range(L), repeat=T)


def log_partition(psi: np.ndarray, phi: np.ndarray) -> float:
    T, L = psi.shape
    scores = np.array([path_score(psi, phi, p) for p in all_paths(T, L)])
    m = scores.max()
    return float(m + np.log(np.exp(scores - m).sum()))


def marginals(psi: np.ndarray, phi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Token marginals (T, L) and pair marginals (T, L, L) (pair[0] is zero)."""
    T, L = psi.shape
    log_z = log_partition(psi, phi)
    unary = np.zeros((T, L))
    pair = np.zeros((T, L, L))
    for p in all_paths(T, L):
        prob = np.exp(path_score(psi, phi, p) - log_z)
        for t in range(T):
            unary[t, p[t]] += prob
            if t:
                pair[t, p[t - 1], p[t]] += prob
    return unary, pair


def best_path(psi: np.ndarray, phi: np.ndarray) -> tuple[tuple[int, ...], float]:
    T, L = psi.shape
    best = max(all_paths(T, L), key=lambda p: path_score(psi, phi, p))
    return best, path_score(psi, phi, best)


def nbest(psi: np.ndarray, phi: np.ndarray, n: int) -> list[tuple[tuple[int, ...], float]]:
    T, L = psi.shape
    scored = sorted(((path_score(psi, phi, p), p) for p in all_paths(T, L)),
                    key=lambda sp: -sp[0])
    return [(p, s) for s, p in scored[:n]]
