"""Gold-path and label totals, for binary and real-valued observations.

A corpus may give every observation occurrence ``j`` a value ``tok_val[j]``
(float64, parallel to ``tok_obs``; :attr:`crfkit.space.Dataset.tok_val`). A
feature's score is then ``value * weight`` and its expected and gold counts
are sums of values instead of counts:

    psi[t, y]     = sum_j tok_val[j] * w(tok_obs[j], y)
    phi[t, a, b] += sum_j tok_val[j] * w(tok_obs[j], a, b)
    G[k]         += tok_val[j] * P(label(s) of k at t)

The encoding and expectation kernels of :mod:`crfkit.kernels.lattice` and
:mod:`crfkit.kernels.gradient` take ``tok_val`` themselves
(:func:`crfkit.kernels.lattice.occurrence_value`: None for a binary corpus,
which Numba compiles away, so binary results are the same bits). What stays
here are the totals over the gold paths and over (observation, label) pairs
that the trainers' empirical counts and attribute selection start from.
"""

from __future__ import annotations

from numba import njit

from crfkit.config import JIT
from crfkit.kernels.gradient import add_path_counts
from crfkit.kernels.lattice import occurrence_value


@njit(**JIT)
def path_totals(G, space, seq_ptr, tok_ptr, tok_obs, tok_val, labels, L):
    """G += the feature totals of every sequence's gold path (``labels``): sums of values
    (counts where ``tok_val`` is None; transitions count 1 per token pair)."""
    for s in range(len(seq_ptr) - 1):
        t0 = seq_ptr[s]
        T = seq_ptr[s + 1] - t0
        if T == 0:
            continue
        add_path_counts(G, space, tok_ptr, tok_obs, tok_val, L, t0, T, labels, t0, 1.0)


@njit(**JIT)
def label_totals(tok_ptr, tok_obs, tok_val, labels, o0, o1, freq, seen):
    """For observations o0..o1-1: ``seen[o - o0, y]`` if o occurs at a token labelled y,
    ``freq[o - o0, y]`` the total of its values there (counts where ``tok_val`` is None)."""
    for t in range(len(labels)):
        y = labels[t]
        for j in range(tok_ptr[t], tok_ptr[t + 1]):
            o = tok_obs[j]
            if o0 <= o < o1:
                seen[o - o0, y] = True
                freq[o - o0, y] += occurrence_value(tok_val, j)
