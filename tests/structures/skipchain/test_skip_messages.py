"""Sum-product skip messages and edge beliefs through the edges' factors (``update_edges``,
``send_from_chain``, the beliefs of ``belief._skip_expectations``) against the
log-sum-exp formulas written out here: equal to rounding, also for scores so far apart
that the factors underflow (the kernels then fall back to log-sum-exp)."""

from __future__ import annotations

import numpy as np
import pytest

from crfkit.structures.skipchain import belief, messages


def _reference(S, logb, msg, e_i, e_j):
    """The new messages of every edge from the old ones (log-sum-exp, normalised)."""
    out = np.empty_like(msg)
    for e in range(len(S)):
        ci = logb[e_i[e]] - msg[e, 0]
        cj = logb[e_j[e]] - msg[e, 1]
        into_j = np.logaddexp.reduce(ci[:, None] + S[e], axis=0)
        into_i = np.logaddexp.reduce(S[e] + cj[None, :], axis=1)
        out[e, 1] = into_j - np.logaddexp.reduce(into_j)
        out[e, 0] = into_i - np.logaddexp.reduce(into_i)
    return out


@pytest.mark.parametrize("spread", [3.0, 2000.0])
def test_linear_messages_match_log_sum_exp(spread):
    L, E, N = 5, 4, 6
    rng = np.random.default_rng(int(spread))
    S = rng.normal(0.0, 1.0, (E, L, L))
    S[0, :, 2] -= spread  # label 2 of edge 0's end j: a factor that underflows at 2000
    logb = np.log(rng.dirichlet(np.ones(L), N))
    msg = np.log(rng.dirichlet(np.ones(L), (E, 2)))
    e_i, e_j = np.array([0, 1, 2, 0]), np.array([3, 4, 5, 5])
    want = _reference(S, logb, msg, e_i, e_j)
    ES = np.empty_like(S)
    messages.edge_factors(S, ES)
    rows = [np.empty(L) for _ in range(4)]
    sent_of, dirty = np.zeros(N, dtype=np.int64), np.zeros(1, dtype=np.bool_)
    messages.update_edges((S, ES), L, 0, E, e_i, e_j, 0, logb, msg, 0.0, False, *rows, 1e-6,
                          sent_of, dirty)
    np.testing.assert_allclose(msg, want, rtol=1e-12, atol=1e-12)


def _case(spread, L=5, E=4, N=6):
    rng = np.random.default_rng(int(spread) + 1)
    S = rng.normal(0.0, 1.0, (E, L, L))
    S[0, :, 2] -= spread
    logb = np.log(rng.dirichlet(np.ones(L), N))
    msg = np.log(rng.dirichlet(np.ones(L), (E, 2)))
    ES = np.empty_like(S)
    messages.edge_factors(S, ES)
    return S, ES, logb, msg


@pytest.mark.parametrize("spread", [3.0, 2000.0])
def test_a_chain_sends_the_messages_of_its_edge_ends(spread):
    """Tokens 0..2 make the chain; edge 1 has both ends in it, so both of its messages are
    sent, each from the cavity the beliefs saw; the messages into the chain from outside
    and edge 3, which does not touch it, stay. The chains that receive a moved message
    are marked."""
    L = 5
    S, ES, logb, msg = _case(spread, L)
    e_i, e_j = np.array([0, 1, 2, 3]), np.array([4, 2, 5, 5])
    inc_ptr = np.array([0, 1, 2, 4, 5, 6, 8])  # incidences of tokens 0..5, by token
    inc_edge = np.array([0, 1, 1, 2, 3, 0, 2, 3])
    inc_side = np.array([0, 0, 1, 0, 0, 1, 1, 1])
    reference = _reference(S, logb, msg, e_i, e_j)
    want = msg.copy()  # the chain sends out of tokens 0..2: into 4, 2, 1 and 5
    for e, side in ((0, 1), (1, 1), (1, 0), (2, 1)):
        want[e, side] = reference[e, side]
    sent_of = np.array([0, 0, 0, 1, 1, 2])
    dirty = np.zeros(3, dtype=np.bool_)
    old = msg.copy()
    moved = messages.send_from_chain((S, ES), L, inc_ptr[0], inc_ptr[3], inc_edge, inc_side,
                                     e_i, e_j, 0, logb, msg, 0.0, np.empty(L), np.empty(L),
                                     np.empty((5, L)), 1e-6, sent_of, dirty)
    np.testing.assert_allclose(msg, want, rtol=1e-12, atol=1e-12)
    assert moved == pytest.approx(np.abs(msg - old).max(), abs=1e-12)
    assert dirty.tolist() == [True, True, True]  # edge 1 into the chain itself, 0 and 2 out


@pytest.mark.parametrize("spread", [3.0, 2000.0, 1e6])
def test_edge_beliefs_match_log_sum_exp(spread):
    L = 5
    S, ES, logb, msg = _case(spread, L)
    logb[3, 1:] = -700.0  # a cavity that lacks the labels edge 0's factors favour
    S[0, 0, :] += spread
    messages.edge_factors(S, ES)
    e_i, e_j = np.array([0, 1, 2, 3]), np.array([3, 4, 5, 5])
    Bel = np.empty_like(S)
    rows = np.empty(L), np.empty(L), np.empty((L, L))
    total = belief._skip_expectations((S, ES), L, 0, len(S), e_i, e_j, 0, logb, msg, Bel,
                                      *rows)
    want_total = 0.0
    for e in range(len(S)):
        pair = (logb[e_i[e]] - msg[e, 0])[:, None] + S[e] + (logb[e_j[e]] - msg[e, 1])[None, :]
        lz = np.logaddexp.reduce(pair.ravel())
        want_total += lz
        np.testing.assert_allclose(Bel[e], np.exp(pair - lz), rtol=1e-10, atol=1e-14)
    assert total == pytest.approx(want_total, rel=1e-12, abs=1e-9)
