"""The latent objective against brute force over state paths, and its gradient against
finite differences, on tiny corpora (3 labels, 2 states each: 6 states)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from crfkit.errors import InputError
from crfkit.features.patterns import parse_patterns
from crfkit.structures.latent.objective import LatentObjective, LatentPart
from crfkit.structures.latent.states import state_space
from crfkit.structures.latent.structure import Latent
from crfkit.training.algorithms import ALGORITHMS, make_objective
from crfkit.training.corpus import encode_training
from crfkit.training.train_options import Problem, TrainOptions
from tests.helpers import random_corpus

PATTERNS = parse_patterns("U00:%x[0,0]\nU01:%x[-1,0]/%x[0,0]\nU02:%x[0,1]\nB\n")


def latent_corpus(K: int, seed: int = 0):
    structure = Latent()
    structure.K = K
    seqs = random_corpus(seed, n_seqs=4, max_len=3)
    corpus = encode_training(PATTERNS, seqs, structure=structure)
    structure.attach(corpus, seqs, list(range(len(seqs))),
                     {"latent_start": "random", "latent_seed": 0}, None, None)
    if corpus.part is None:  # K = 1 with full labels trains as the chain: made latent here
        corpus.space = state_space(corpus.space, 1)
        allowed = np.zeros((corpus.data.n_tokens, len(corpus.labels)), dtype=bool)
        allowed[np.arange(corpus.data.n_tokens), corpus.data.labels] = True
        corpus.part = LatentPart(allowed, 1, [1] * corpus.data.n_seqs)
    return corpus


def path_score(w, space, data, s, states):
    """The score of one state path, feature by feature."""
    t0 = data.seq_ptr[s]
    total = 0.0
    for t, state in enumerate(states):
        for o in data.tok_obs[data.tok_ptr[t0 + t]:data.tok_ptr[t0 + t + 1]]:
            for k in range(space.u_ptr[o], space.u_ptr[o + 1]):
                total += w[k] if space.u_lab[k] == state else 0.0
        if t:
            total += w[space.trans_offset + states[t - 1] * space.n_labels + state]
    return total


def brute_loss(w, corpus, allowed, rho2):
    """sum_s log Z(x) - log Z(x, y) by enumerating every state path, + the L2 term."""
    space, data, K = corpus.space, corpus.data, corpus.part.K
    f = 0.5 * rho2 * w @ w
    for s in range(data.n_seqs):
        T = int(data.seq_ptr[s + 1] - data.seq_ptr[s])
        free, clamped = [], []
        for states in itertools.product(range(space.n_labels), repeat=T):
            score = path_score(w, space, data, s, states)
            free.append(score)
            if all(allowed[data.seq_ptr[s] + t, st // K] for t, st in enumerate(states)):
                clamped.append(score)
        f += np.logaddexp.reduce(free) - np.logaddexp.reduce(clamped)
    return f


def partial_mask(corpus, seed):
    """The gold labels, with some tokens widened to two labels and some to every label."""
    rng = np.random.default_rng(seed)
    allowed = corpus.part.allowed.copy()
    for t in range(len(allowed)):
        r = rng.random()
        if r < 0.3:
            allowed[t] = True  # "?"
        elif r < 0.6:
            allowed[t, rng.integers(allowed.shape[1])] = True  # "A|B"
    return allowed


@pytest.mark.parametrize("K, partial", [(2, False), (2, True), (1, True)])
def test_loss_is_brute_force_over_state_paths(K, partial):
    corpus = latent_corpus(K)
    allowed = partial_mask(corpus, K) if partial else corpus.part.allowed
    part = LatentPart(allowed, K, corpus.part.lines)
    w = np.random.default_rng(1).normal(0, 0.5, corpus.space.n_weights)
    f = LatentObjective(corpus.space, corpus.data, part, 0.3)(w, np.empty_like(w))
    assert f == pytest.approx(brute_loss(w, corpus, allowed, 0.3), rel=1e-9)


@pytest.mark.parametrize("partial", [False, True])
def test_gradient_is_finite_differences(partial):
    corpus = latent_corpus(2, seed=3)
    allowed = partial_mask(corpus, 5) if partial else corpus.part.allowed
    objective = LatentObjective(corpus.space, corpus.data,
                                LatentPart(allowed, 2, corpus.part.lines), 0.2)
    w = np.random.default_rng(2).normal(0, 0.5, corpus.space.n_weights)
    g = np.empty_like(w)
    objective(w, g)
    h, scratch = 1e-6, np.empty_like(w)
    picked = np.random.default_rng(0).choice(len(w), 40, replace=False)
    for i in [*picked, len(w) - 1]:  # some features and a transition
        step = np.zeros_like(w)
        step[i] = h
        numeric = (objective(w + step, scratch) - objective(w - step, scratch)) / (2 * h)
        assert g[i] == pytest.approx(numeric, rel=1e-5, abs=1e-6), i


def test_no_allowed_path_names_the_sequence():
    corpus = latent_corpus(2)
    allowed = corpus.part.allowed.copy()
    second = corpus.data.seq_ptr[1]
    allowed[second] = False
    objective = LatentObjective(corpus.space, corpus.data,
                                LatentPart(allowed, 2, [10, 20, 30, 40]), 1.0)
    w = np.zeros(corpus.space.n_weights)
    with pytest.raises(InputError, match=r"sequence 2 \(line 20\).*allow no path"):
        objective(w, np.empty_like(w))


def test_the_start_is_seeded_and_separates_states():
    a, b = latent_corpus(2), latent_corpus(2)
    assert np.array_equal(a.x0, b.x0) and np.any(a.x0 != 0)


def test_an_sgd_step_follows_the_objectives_gradient():
    """One SGD-L1 step on one sequence (rho1 = 0) is W - eta x the gradient of its loss."""
    from crfkit.space import Dataset
    from crfkit.structures.latent.epochs import LatentSgdEpochs

    corpus = latent_corpus(2, seed=3)
    d, s = corpus.data, 1
    t0, t1 = int(d.seq_ptr[s]), int(d.seq_ptr[s + 1])
    lo, hi = int(d.tok_ptr[t0]), int(d.tok_ptr[t1])
    one = Dataset(np.array([0, t1 - t0]), d.tok_ptr[t0:t1 + 1] - lo, d.tok_obs[lo:hi],
                  d.labels[t0:t1])
    allowed = partial_mask(corpus, 5)[t0:t1]
    w = np.random.default_rng(4).normal(0, 0.5, corpus.space.n_weights)
    g = np.empty_like(w)
    f = LatentObjective(corpus.space, one, LatentPart(allowed, 2, [1]), 0.0)(w, g)
    W = w.copy()
    epochs = LatentSgdEpochs(corpus.space, one, allowed, 2, [1])
    loss, *_ = epochs(W, np.array([0]), 0, 0.1, 1.0, 0.0, np.zeros_like(w), np.zeros(1))
    assert loss == pytest.approx(f, rel=1e-12)
    assert np.allclose(W, w - 0.1 * g, rtol=0, atol=1e-12)


def test_rprop_minimises_the_label_set_objective_as_l_bfgs_does():
    # the run's objectives are brute force's at the start and after its first step, and that
    # step goes against the gradient L-BFGS minimises with (checked above by differences)
    corpus = latent_corpus(2, seed=1)
    allowed = partial_mask(corpus, 7)
    corpus.part = LatentPart(allowed, 2, corpus.part.lines)
    structure = Latent()
    structure.K = 2
    problem = Problem("crf", corpus, TrainOptions(algo="rprop", maxiter=2, rho2=0.4),
                      structure)
    seen = []
    ALGORITHMS["rprop"].run(problem, lambda info: seen.append((info.f, info.x.copy())))
    g = np.empty_like(corpus.x0)
    make_objective(problem)(corpus.x0, g)
    (f0, x1), (f1, _) = seen
    assert f0 == pytest.approx(brute_loss(corpus.x0, corpus, allowed, 0.4), rel=1e-9)
    assert f1 == pytest.approx(brute_loss(x1, corpus, allowed, 0.4), rel=1e-9)
    assert np.array_equal(np.sign(x1 - corpus.x0), -np.sign(g))
