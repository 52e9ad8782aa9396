"""Labelling a latent-dynamic model against brute force over state paths: the best state
path, the best label paths (summed over states), label marginals, masks."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from crfkit import config
from crfkit.kernels.decoded import Weights
from crfkit.structures.base import DecodeRequest
from crfkit.structures.latent.structure import Latent
from tests.structures.latent.test_objective import latent_corpus, path_score


def brute(w, space, data, s, token_ok=None):
    """Every allowed state path's score, and each label path's log-sum over its states."""
    K, t0 = space.K, int(data.seq_ptr[s])
    T = int(data.seq_ptr[s + 1]) - t0
    states, labels = {}, {}
    for path in itertools.product(range(space.n_labels), repeat=T):
        if token_ok is not None and not all(token_ok[t0 + t, p // K] for t, p in
                                            enumerate(path)):
            continue
        score = path_score(w, space, data, s, path)
        states[path] = score
        label_path = tuple(p // K for p in path)
        labels[label_path] = np.logaddexp(labels.get(label_path, -np.inf), score)
    return states, labels


@pytest.fixture(scope="module")
def weighted():
    corpus = latent_corpus(2, seed=7)
    w = np.random.default_rng(3).normal(0, 1.0, corpus.space.n_weights)
    return Weights(corpus.space, w, config.NORM_GLOBAL), corpus.data


@pytest.mark.parametrize("mode", ["states", "labels"])
def test_best_and_nbest_paths_are_brute_force(weighted, mode):
    model, data = weighted
    dec = Latent().decode(model, data, DecodeRequest(nbest=3, log_z=True,
                                                     values={"latent_decode": mode}))
    for s in range(data.n_seqs):
        t0, t1 = data.seq_ptr[s], data.seq_ptr[s + 1]
        states, labels = brute(model.weights, model.space, data, s)
        assert dec.log_z[s] == pytest.approx(np.logaddexp.reduce(list(labels.values())))
        if mode == "states":
            best = max(states, key=states.get)
            assert tuple(dec.paths[t0:t1, 0]) == tuple(p // 2 for p in best)
            assert dec.scores[s, 0] == pytest.approx(states[best])
        else:
            ranked = sorted(labels, key=labels.get, reverse=True)[:3]
            for r, path in enumerate(ranked):
                assert tuple(dec.paths[t0:t1, r]) == path
                assert dec.scores[s, r] == pytest.approx(labels[path])


def test_label_marginals_and_forced_labels(weighted):
    model, data = weighted
    L = model.space.n_labels // 2
    token_ok = np.ones((data.n_tokens, L), dtype=bool)
    token_ok[0] = np.arange(L) == 1  # the first token forced to label 1
    for mode in ("states", "labels"):
        dec = Latent().decode(model, data, DecodeRequest(
            marginals=True, token_ok=token_ok, values={"latent_decode": mode}))
        assert dec.paths[0, 0] == 1
        _, labels = brute(model.weights, model.space, data, 0, token_ok)
        log_z = np.logaddexp.reduce(list(labels.values()))
        T = data.seq_ptr[1]
        for t in range(T):
            for y in range(L):
                p = sum(np.exp(v - log_z) for path, v in labels.items() if path[t] == y)
                assert dec.marginals[t, y] == pytest.approx(p, abs=1e-9)


def test_posterior_is_argmax_of_label_marginals(weighted):
    model, data = weighted
    dec = Latent().decode(model, data, DecodeRequest(marginals=True))
    post = Latent().decode(model, data, DecodeRequest(posterior=True))
    assert np.array_equal(post.paths[:, 0], dec.marginals.argmax(axis=1))
