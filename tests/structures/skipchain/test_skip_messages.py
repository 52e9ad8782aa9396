"""Sum-product skip messages through the edges' factors (``update_edges``) against the
log-sum-exp formula written out here: equal to rounding, also for scores so far apart
that the factors underflow (the update then falls back to log-sum-exp)."""

from __future__ import annotations

import numpy as np
import pytest

from crfkit.structures.skipchain import messages


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
