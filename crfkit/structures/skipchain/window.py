"""Numba kernels of the skip-chain CRF: a BP round's pass over the part of a chain that moves.

In a round of loopy BP (:mod:`crfkit.structures.skipchain.belief`) only the tokens
with skip edges get new scores. A chain's tokens before its first such token
(``first``) and after its last (``last``) keep theirs for the whole document, so
the forward row arriving at ``first`` and the backward row arriving at ``last``
are taken once (:func:`chain_ends`, the document's first round) and each round
runs the forward and backward passes over ``first..last`` alone: on CoNLL-2002
Dutch about a third of the tokens of the chains with edges (most edges join a
name near the start of its sentence). The backward rows are normalised on their
own (not by the forward scales, which change every round), so a token's belief is
``alpha * beta`` divided by its sum.

Applies to one transition matrix shared by every token (``M``, ``MT`` its
transpose); a row that underflows or overflows returns False and the caller runs
the whole chain instead.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from crfkit.config import JIT
from crfkit.kernels.lattice import exp_shifted
from crfkit.structures.skipchain.chain_pass import LOG_FLOOR, token_scores


@njit(inline="always", **JIT)
def _normalised(row, L):
    """row /= its sum; False if the sum is 0 or not finite."""
    s = 0.0
    for y in range(L):
        s += row[y]
    if not (s > 0.0 and s < np.inf):
        return False
    inv = 1.0 / s
    for y in range(L):
        row[y] *= inv
    return True


@njit(inline="always", **JIT)
def _forward_row(prev, MT, u, out, L):
    """out[b] = (sum_a prev[a] M[a, b]) u[b], normalised."""
    for b in range(L):
        acc = 0.0
        for a in range(L):
            acc += MT[b, a] * prev[a]
        out[b] = acc * u[b]
    return _normalised(out, L)


@njit(inline="always", **JIT)
def _backward_row(nxt, M, u, out, tmp, L):
    """out[a] = sum_b M[a, b] u[b] nxt[b], normalised."""
    for b in range(L):
        tmp[b] = u[b] * nxt[b]
    for a in range(L):
        acc = 0.0
        for b in range(L):
            acc += M[a, b] * tmp[b]
        out[a] = acc
    return _normalised(out, L)


@njit(**JIT)
def edge_span(inc_ptr, t0, T):
    """(first, last): the chain's first and last tokens with skip edges (-1, -1: none)."""
    first = -1
    last = -1
    for t in range(T):
        if inc_ptr[t0 + t + 1] > inc_ptr[t0 + t]:
            if first < 0:
                first = t
            last = t
    return first, last


@njit(**JIT)
def chain_ends(expu_doc, c, T, first, last, L, M, MT, pre, suf, tmp, row):
    """pre = the forward row at ``first - 1`` (unused when first is 0), suf = the backward
    row at ``last``, from the fixed factors ``expu_doc[c:c+T]`` of the chain's tokens;
    False (``suf[0]`` then NaN, so later rounds know) if a row underflows or overflows."""
    ok = True
    if first > 0:
        for y in range(L):
            pre[y] = expu_doc[c, y]
        ok = _normalised(pre, L)
        for t in range(1, first):
            if not ok:
                break
            ok = _forward_row(pre, MT, expu_doc[c + t], row, L)
            for y in range(L):
                pre[y] = row[y]
    for y in range(L):
        suf[y] = 1.0
    for t in range(T - 2, last - 1, -1):
        if not ok:
            break
        ok = _backward_row(suf, M, expu_doc[c + t + 1], row, tmp, L)
        for y in range(L):
            suf[y] = row[y]
    if not ok:
        suf[0] = np.nan
    return ok


@njit(**JIT)
def window_beliefs(psi_doc, expu_doc, g0, t0, first, last, L, inc_ptr, inc_edge, inc_side,
                   msg, M, MT, pre, suf, work, logb):
    """The log beliefs of the chain's tokens with edges, from passes over first..last
    (``pre``/``suf``: :func:`chain_ends`); False if a row underflows or overflows."""
    psi, phi, expu, expb, alpha, beta, scale, pair, tmp = work
    if suf[0] != suf[0]:
        return False
    for t in range(first, last + 1):
        g = t0 + t
        if inc_ptr[g + 1] > inc_ptr[g]:
            token_scores(psi_doc, g0, g, L, inc_ptr, inc_edge, inc_side, msg, psi[t])
            exp_shifted(psi[t], expu[t])
        else:
            for y in range(L):
                expu[t, y] = expu_doc[g - g0, y]
    if first == 0:
        for y in range(L):
            alpha[0, y] = expu[0, y]
        if not _normalised(alpha[0], L):
            return False
    elif not _forward_row(pre, MT, expu[first], alpha[first], L):
        return False
    for t in range(first + 1, last + 1):
        if not _forward_row(alpha[t - 1], MT, expu[t], alpha[t], L):
            return False
    for y in range(L):
        beta[last, y] = suf[y]
    for t in range(last - 1, first - 1, -1):
        if not _backward_row(beta[t + 1], M, expu[t + 1], beta[t], tmp, L):
            return False
    for t in range(first, last + 1):
        g = t0 + t
        if inc_ptr[g + 1] > inc_ptr[g]:
            s = 0.0
            for y in range(L):
                s += alpha[t, y] * beta[t, y]
            if not (s > 0.0 and s < np.inf):
                return False
            for y in range(L):
                v = alpha[t, y] * beta[t, y] / s
                logb[g - g0, y] = np.log(v) if v > 0.0 else LOG_FLOOR
    return True
