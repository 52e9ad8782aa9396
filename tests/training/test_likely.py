"""Likely unsupported features (``--likely-features``) against brute-force marginals."""

from __future__ import annotations

import numpy as np
import pytest

from crfkit.features.patterns import parse_patterns
from crfkit.io.reader import read_sequences
from crfkit.training.corpus import encode_training
from crfkit.training.likely_features import add_likely_features
from crfkit.training.train import TrainOptions, train
from tests import naive
from tests.helpers import ROOT, one_error_line, random_corpus, run

PATTERNS = parse_patterns("""U00:%x[0,0]
u:tag=%x[0,1]
b:prev=%x[-1,1]
B
""")


@pytest.mark.parametrize("threshold", [0.2, 0.5])
def test_added_features_are_those_whose_marginal_reaches_the_threshold(threshold):
    seqs = random_corpus(3, n_seqs=8, max_len=4)
    corpus = encode_training(PATTERNS, seqs)
    old_u, old_b = (set(k.tolist()) for k in corpus.space.keys())
    rng = np.random.default_rng(1)
    x = rng.normal(size=corpus.space.n_weights)
    empirical = corpus.empirical.copy()
    L = corpus.space.n_labels
    want_u, want_b = set(), set()
    ids = {text: i for i, text in enumerate(corpus.featurizer.observation_strings())}
    u_obs, b_obs = (set(o.tolist()) for o in corpus.space.owners())
    for s, seq in enumerate(seqs):
        psi, phi = naive.reference_scores(corpus, x, seq)
        unary, pair = naive.marginals(psi, phi)
        t0 = corpus.data.seq_ptr[s]
        for t in range(len(seq.rows)):
            for o in corpus.data.tok_obs[corpus.data.tok_ptr[t0 + t]:
                                         corpus.data.tok_ptr[t0 + t + 1]]:
                if o in u_obs:
                    want_u |= {o * L + y for y in range(L) if unary[t, y] >= threshold}
                if t and o in b_obs:
                    want_b |= {(o * L + a) * L + b for a in range(L) for b in range(L)
                               if pair[t, a, b] >= threshold}
    assert ids  # observation strings exist
    n_u, n_b = add_likely_features(corpus, x, threshold)
    got_u, got_b = (set(k.tolist()) for k in corpus.space.keys())
    assert got_u == old_u | want_u and got_b == old_b | want_b
    assert (n_u, n_b) == (len(want_u - old_u), len(want_b - old_b))
    # old weights and counts moved with their features, new ones are zero
    new_u, new_b = corpus.space.keys()
    for keys, old_keys, base, old_base in ((new_u, sorted(old_u), 0, 0),
                                           (new_b, sorted(old_b), corpus.space.n_u,
                                            len(old_u))):
        where = base + np.searchsorted(keys, old_keys)
        np.testing.assert_array_equal(corpus.x0[where], x[old_base:old_base + len(old_keys)])
        np.testing.assert_array_equal(corpus.empirical[where],
                                      empirical[old_base:old_base + len(old_keys)])
    assert corpus.empirical.sum() == empirical.sum()


def test_training_with_likely_features_grows_the_model():
    seqs = list(read_sequences(ROOT / "data/address-train.txt"))[:60]
    plain = train(PATTERNS, seqs, TrainOptions(maxiter=30))
    grown = train(PATTERNS, seqs, TrainOptions(maxiter=30, likely=0.05, likely_after=5))
    assert grown.space.n_weights > plain.space.n_weights
    assert grown.info["iterations"] <= 30 and grown.info["options"]["likely"] == 0.05


def test_likely_features_refuse_a_development_set(tmp_path):
    pat = tmp_path / "p.pat"
    pat.write_text("U00:%x[0,0]\nB\n")
    data = ROOT / "data/address-test.txt"
    result = run("train", "--likely-features", "0.5", "-d", data, "-p", pat, data,
                 tmp_path / "m")
    one_error_line(result, "--likely-features cannot be combined")
    result = run("train", "--likely-features", "2", "-p", pat, data, tmp_path / "m")
    one_error_line(result, "--likely-features must be in (0, 1]")
