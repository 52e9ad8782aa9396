"""Numba kernels of the skip-chain CRF: the messages of the skip edges (one BP round's half).

Given the log beliefs ``logb`` of the tokens with edges, every edge's two messages
are recomputed from its cavities (:mod:`crfkit.structures.skipchain.belief`'s
docstring gives the formulas and shapes). Sum-product works in the linear domain:

    new msg[e, 1, b] = log (q[b] / sum q),  q[b] = sum_a exp(c_i[a] - max c_i) ES[e, a, b]

with ``ES[e] = exp(S[e] - max S[e])`` taken once an evaluation (:func:`edge_factors`):
18 exponentials and logarithms an edge instead of some 220 of the log-sum-exp
form, which made these updates half of a training evaluation. A row that
underflows (a zero or non-finite ``q``) falls back to the log-sum-exp form, as
max-product always does.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from crfkit.config import JIT


@njit(**JIT)
def row_max(row, n):
    m = -np.inf
    for y in range(n):
        if row[y] > m:
            m = row[y]
    return m


@njit(**JIT)
def lse(row, n):
    m = row_max(row, n)
    if m == -np.inf:
        return m
    s = 0.0
    for y in range(n):
        s += np.exp(row[y] - m)
    return m + np.log(s)


@njit(inline="always", **JIT)
def cavities(e, e_i, e_j, g0, L, logb, msg, ci, cj):
    """ci, cj = the beliefs of skip edge e's two tokens without the edge's own messages;
    returns the tokens' places in the document."""
    i = e_i[e] - g0
    j = e_j[e] - g0
    for y in range(L):
        ci[y] = logb[i, y] - msg[e, 0, y]
        cj[y] = logb[j, y] - msg[e, 1, y]
    return i, j


@njit(**JIT)
def edge_factors(S, ES):
    """ES[e] = exp(S[e] - max S[e]): the edges' factors for sum-product messages."""
    for e in range(S.shape[0]):
        m = -np.inf
        for a in range(S.shape[1]):
            for b in range(S.shape[2]):
                m = max(m, S[e, a, b])
        if not np.isfinite(m):
            m = 0.0
        for a in range(S.shape[1]):
            for b in range(S.shape[2]):
                ES[e, a, b] = np.exp(S[e, a, b] - m)


@njit(**JIT)
def _log_message(S, e, side, L, c, max_product, row, new):
    """new = the normalised log message of edge e into its end ``side`` from the other
    end's cavity ``c`` (log-sum-exp, or max for max-product)."""
    for y in range(L):
        for x in range(L):
            if side == 1:  # into j (label y) over the label x of i
                row[x] = c[x] + S[e, x, y]
            else:  # into i (label y) over the label x of j
                row[x] = S[e, y, x] + c[x]
        new[y] = row_max(row, L) if max_product else lse(row, L)
    norm = row_max(new, L) if max_product else lse(new, L)
    for y in range(L):
        new[y] -= norm


@njit(**JIT)
def _linear_message(ES, e, side, L, c, ec, new):
    """:func:`_log_message` (sum-product) through the edge's factors ``ES``; False (``new``
    then garbage) if a row underflows or overflows."""
    m = row_max(c, L)
    if not np.isfinite(m):
        return False
    for x in range(L):
        ec[x] = np.exp(c[x] - m)
    total = 0.0
    for y in range(L):
        acc = 0.0
        if side == 1:
            for x in range(L):
                acc += ec[x] * ES[e, x, y]
        else:
            for x in range(L):
                acc += ES[e, y, x] * ec[x]
        if not (acc > 0.0 and acc < np.inf):
            return False
        new[y] = acc
        total += acc
    if not total < np.inf:
        return False
    inv = 1.0 / total
    for y in range(L):
        new[y] = np.log(new[y] * inv)
    return True


@njit(inline="always", **JIT)
def _store(msg, e, side, new, L, damping, max_product):
    """msg[e, side] = ``new`` mixed with ``damping`` of the old message (renormalised);
    returns how far the message moved (NaN propagates)."""
    if damping > 0.0:
        for y in range(L):
            new[y] = (1.0 - damping) * new[y] + damping * msg[e, side, y]
        norm = row_max(new, L) if max_product else lse(new, L)
        for y in range(L):
            new[y] -= norm
    moved = 0.0
    for y in range(L):
        d = abs(new[y] - msg[e, side, y])
        if d > moved or d != d:
            moved = d
        msg[e, side, y] = new[y]
    return moved


@njit(**JIT)
def update_edges(skip, L, e0, e1, e_i, e_j, g0, logb, msg, damping,
                 max_product, ci, cj, new, row, tol, sent_of, dirty):
    """Recompute the messages of edges e0..e1-1 from the cavities; returns the largest move.

    ``skip = (S, ES)`` (:func:`edge_factors`). A chain that receives a message moving
    more than ``tol`` is marked ``dirty`` (``sent_of``: the chain of each document
    token): only those run again.
    """
    S, ES = skip
    change = 0.0
    for e in range(e0, e1):
        i, j = cavities(e, e_i, e_j, g0, L, logb, msg, ci, cj)
        for side in range(2):
            c = ci if side == 1 else cj
            if max_product or not _linear_message(ES, e, side, L, c, row, new):
                _log_message(S, e, side, L, c, max_product, row, new)
            moved = _store(msg, e, side, new, L, damping, max_product)
            if moved > tol or moved != moved:
                dirty[sent_of[(j if side == 1 else i)]] = True
            if moved > change or moved != moved:
                change = moved
    return change


@njit(**JIT)
def send_from_chain(skip, L, k0, k1, inc_edge, inc_side, e_i, e_j, g0, logb, msg, damping,
                    c, row, sent, tol, sent_of, dirty):
    """The sum-product messages a chain sends along its skip edges, right after its
    tokens' beliefs ``logb`` were computed: incidences ``k0..k1`` (its tokens'), each
    from its token's cavity into the edge's other end. Returns the largest move.

    All are computed (into ``sent``, a row per incidence) before any is stored: an edge
    with both ends in the chain needs both cavities from the messages the beliefs saw.
    A chain that receives a message moving more than ``tol`` is marked ``dirty``.
    """
    S, ES = skip
    max_product = np.bool_(False)  # not the literal: update_edges' callees take a bool
    for k in range(k0, k1):
        e = inc_edge[k]
        side = inc_side[k]
        g = e_i[e] if side == 0 else e_j[e]
        for y in range(L):
            c[y] = logb[g - g0, y] - msg[e, side, y]
        out = sent[k - k0]
        if not _linear_message(ES, e, 1 - side, L, c, row, out):
            _log_message(S, e, 1 - side, L, c, max_product, row, out)
    change = 0.0
    for k in range(k0, k1):
        e = inc_edge[k]
        side = inc_side[k]
        moved = _store(msg, e, 1 - side, sent[k - k0], L, damping, max_product)
        if moved > tol or moved != moved:
            dirty[sent_of[(e_j[e] if side == 0 else e_i[e]) - g0]] = True
        if moved > change or moved != moved:
            change = moved
    return change
