"""The whole objective (features + kernels) against slow references.

* vectorised feature extraction equals the string-by-string reference
  (:func:`crfkit.patterns.apply_pattern`);
* the objective equals brute-force enumeration over all label paths;
* the gradient equals central finite differences.
"""

from __future__ import annotations

import numpy as np
import pytest

from crfkit.objective import Objective
from crfkit.patterns import apply_pattern, parse_patterns
from crfkit.reader import Sequence
from crfkit.train import encode_training
from tests import naive

PATTERNS = parse_patterns("""
U00:%x[0,0]
U01:%x[-1,0]/%x[0,0]
u:suffix=%m[0,0,"\\a$"]
b:pos=%x[0,1]
*:next=%X[1,0]
B
""")


def random_corpus(seed: int, n_seqs: int = 6, max_len: int = 4) -> list[Sequence]:
    rng = np.random.default_rng(seed)
    words = ["a", "B", "c1", "dd", "E"]
    tags = ["N", "V"]
    labels = ["X", "Y", "Z"]
    seqs = []
    for _ in range(n_seqs):
        n = int(rng.integers(1, max_len + 1))
        rows = [[str(rng.choice(words)), str(rng.choice(tags)), str(rng.choice(labels))]
                for _ in range(n)]
        seqs.append(Sequence(rows=rows, lines=list(range(1, n + 1))))
    return seqs


def reference_scores(corpus, weights, seq):
    """psi/phi of one sequence built from observation strings, not from the arrays."""
    space = corpus.space
    ids = {text: i for i, text in enumerate(corpus.featurizer.observation_strings())}
    L = space.n_labels
    T = len(seq.rows)
    psi = np.zeros((T, L))
    phi = np.zeros((T, L, L))
    trans = weights[space.trans_offset:].reshape(L, L) if space.has_trans else np.zeros((L, L))
    for t in range(T):
        if t:
            phi[t] += trans
        for pattern in corpus.featurizer.patterns:
            if pattern.is_constant and pattern.kind == "b":
                continue
            o = ids.get(apply_pattern(pattern, seq.rows, t))
            if o is None:
                continue
            for k in range(space.u_ptr[o], space.u_ptr[o + 1]):
                psi[t, space.u_lab[k]] += weights[k]
            if t:
                for k in range(space.b_ptr[o], space.b_ptr[o + 1]):
                    phi[t, space.b_prev[k], space.b_cur[k]] += weights[space.n_u + k]
    return psi, phi


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_features_match_reference_strings(seed):
    seqs = random_corpus(seed)
    corpus = encode_training(PATTERNS, seqs)
    strings = corpus.featurizer.observation_strings()
    listed = [corpus.featurizer.patterns[p] for p in corpus.featurizer.listed]
    data = corpus.data
    for s, seq in enumerate(seqs):
        for t in range(len(seq.rows)):
            g = data.seq_ptr[s] + t
            got = sorted(strings[o] for o in data.tok_obs[data.tok_ptr[g]:data.tok_ptr[g + 1]])
            want = sorted(apply_pattern(p, seq.rows, t) for p in listed)
            assert got == want


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_objective_matches_brute_force(seed):
    seqs = random_corpus(seed)
    corpus = encode_training(PATTERNS, seqs)
    rho2 = 0.3
    w = np.random.default_rng(seed).normal(size=corpus.space.n_weights)
    g = np.empty_like(w)
    got = Objective(corpus.space, corpus.data, corpus.empirical, rho2)(w, g)
    label_id = {name: i for i, name in enumerate(corpus.labels)}
    want = 0.5 * rho2 * float(w @ w)
    for seq in seqs:
        psi, phi = reference_scores(corpus, w, seq)
        gold = tuple(label_id[row[-1]] for row in seq.rows)
        want += naive.log_partition(psi, phi) - naive.path_score(psi, phi, gold)
    assert got == pytest.approx(want, rel=1e-10)


@pytest.mark.parametrize("seed", [0, 5])
def test_gradient_matches_finite_differences(seed):
    seqs = random_corpus(seed, n_seqs=5)
    corpus = encode_training(PATTERNS, seqs)
    objective = Objective(corpus.space, corpus.data, corpus.empirical, 0.7)
    rng = np.random.default_rng(seed)
    w = rng.normal(size=corpus.space.n_weights)
    g = np.empty_like(w)
    objective(w, g)
    scratch = np.empty_like(w)
    eps = 1e-6
    numeric = np.empty_like(w)
    for i in range(w.size):
        wp, wm = w.copy(), w.copy()
        wp[i] += eps
        wm[i] -= eps
        numeric[i] = (objective(wp, scratch) - objective(wm, scratch)) / (2 * eps)
    np.testing.assert_allclose(g, numeric, rtol=1e-5, atol=1e-6)
    # The corpus exercises every weight block.
    assert corpus.space.n_u and corpus.space.n_b and corpus.space.has_trans


def test_thread_count_does_not_change_the_objective():
    import numba

    seqs = random_corpus(9, n_seqs=40)
    corpus = encode_training(PATTERNS, seqs)
    objective = Objective(corpus.space, corpus.data, corpus.empirical, 1.0)
    w = np.random.default_rng(9).normal(size=corpus.space.n_weights)
    results = []
    for threads in (1, numba.config.NUMBA_NUM_THREADS):
        numba.set_num_threads(threads)
        g = np.empty_like(w)
        results.append((objective(w, g), g.copy()))
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    assert results[0][0] == results[1][0]
    assert np.array_equal(results[0][1], results[1][1])
