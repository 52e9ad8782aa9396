"""CRFsuite's online trainers (l2sgd, pa, arow): one update against its formula, with values,
and the three end to end through the estimator and the command line."""

from __future__ import annotations

import numpy as np
import pytest

from crfkit.kernels import valued as values
from crfkit.kernels.crfsuite_epochs import OnlineEpochs
from crfkit.kernels.objective import Objective
from crfkit.space import Dataset
from tests.helpers import toy_corpus, valued_problem


def one_sequence(seed: int):
    space, data, W = valued_problem(seed, bigrams=True, trans=True)
    n = int(data.seq_ptr[1])
    one = Dataset(data.seq_ptr[:2], data.tok_ptr[:n + 1], data.tok_obs, data.labels[:n],
                  tok_val=data.tok_val)
    return space, one, W


def totals(space, data, labels):
    G = np.zeros(space.n_weights)
    values.path_totals(G, space.arrays(), data.seq_ptr, data.tok_ptr, data.tok_obs,
                       data.tok_val, np.asarray(labels, dtype=np.int32), space.n_labels)
    return G


@pytest.mark.parametrize("pa_type", [0, 1, 2])
def test_pa_step_from_zero(pa_type):
    space, data, _ = one_sequence(6)
    T = data.n_tokens
    # at W = 0 every path scores 0 and Viterbi picks label 0 everywhere
    pred = np.zeros(T, dtype=np.int32)
    d = totals(space, data, data.labels) - totals(space, data, pred)
    errors = int(np.count_nonzero(data.labels != 0))
    assert errors > 0
    loss, norm2, C = np.sqrt(errors), d @ d, 0.3
    tau = [loss / norm2, min(C, loss / norm2), loss / (norm2 + 0.5 / C)][pa_type]
    W, U = np.zeros(space.n_weights), np.zeros(space.n_weights)
    OnlineEpochs(space, data).pa(W, U, np.zeros(1, dtype=np.int64), 5, pa_type, C, True)
    np.testing.assert_allclose(W, tau * d, atol=1e-12)
    np.testing.assert_allclose(U, 5 * tau * d, atol=1e-12)


def test_arow_step_from_zero_and_frozen_weights():
    space, data, _ = one_sequence(7)
    pred = np.zeros(data.n_tokens, dtype=np.int32)
    d = totals(space, data, data.labels) - totals(space, data, pred)
    frozen = np.flatnonzero(d)[:1]
    d[frozen] = 0.0
    S0, gamma = 0.7, 2.0
    # CRFsuite's train_arow.c: the margin is the number of wrong labels, and each
    # variance shrinks on its own: 1/S = 1/S0 + d^2 / gamma
    loss = float(np.count_nonzero(data.labels != 0))
    beta = 1.0 / (S0 * (d @ d) + gamma)
    W, S = np.zeros(space.n_weights), np.full(space.n_weights, S0)
    OnlineEpochs(space, data, frozen).arow(W, S, np.zeros(1, dtype=np.int64), gamma)
    np.testing.assert_allclose(W, loss * beta * S0 * d, atol=1e-12)
    np.testing.assert_allclose(S, 1.0 / (1.0 / S0 + d**2 / gamma), atol=1e-12)
    assert W[frozen] == 0.0


def test_l2sgd_step_decays_every_weight_and_follows_the_gradient():
    """CRFsuite's step (train_l2sgd.c): decay first, then the gradient at the decayed
    weights, which are the ones it scores the sequence with."""
    space, data, W0 = one_sequence(8)
    lam, t0 = 0.05, 10.0
    eta = 1.0 / (lam * t0)
    decayed = (1 - eta * lam) * W0
    g = np.zeros_like(W0)
    Objective(space, data, totals(space, data, data.labels), rho2=0.0)(decayed, g)
    W, last, state = W0.copy(), np.zeros_like(W0), np.zeros(2)
    OnlineEpochs(space, data).l2sgd(W, last, state, np.zeros(1, dtype=np.int64), lam, t0)
    np.testing.assert_allclose(W, decayed - eta * g, atol=1e-12)
    assert state[1] == 1.0


@pytest.mark.parametrize("algorithm", ["l2sgd", "pa", "arow", "ap"])
def test_estimator_trains_with_every_algorithm(algorithm):
    pytest.importorskip("sklearn")
    from crfkit.sklearn import CRF


    X, y = toy_corpus(40)
    crf = CRF(algorithm=algorithm, max_iterations=15).fit(X, y)
    assert crf.score(X, y) == 1.0
    assert crf.training_log_.iterations


@pytest.mark.slow
@pytest.mark.parametrize("algorithm", ["l2sgd", "pa", "arow"])
def test_cli_trains_with_the_new_algorithms(tmp_path, algorithm):
    from click.testing import CliRunner

    from crfkit.cli import cli

    train = tmp_path / "train.txt"
    train.write_text("the D\ndog N\nruns V\n\na D\ncat N\nsleeps V\n\n" * 5)
    pat = tmp_path / "p.pat"
    pat.write_text("U:%x[0,0]\nB\n")
    model = tmp_path / "m.model"
    result = CliRunner().invoke(cli, ["train", "-q", "-a", algorithm, "-i", "5", "-p", str(pat),
                                      str(train), str(model)])
    assert result.exit_code == 0, result.output
    result = CliRunner().invoke(cli, ["label", "-c", "-m", str(model), str(train)])
    assert result.exit_code == 0 and "100.00%" in result.output
