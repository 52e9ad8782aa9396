"""Model types (MaxEnt, MEMM), compaction and warm starts, against slow references.

* MaxEnt objective == the CRF objective on the same (pair-free) feature space;
* MEMM objective == a per-token softmax computed from observation strings;
  MEMM decoding == brute force over all paths of the summed log local
  probabilities (gradients and thread counts of every type: test_training.py);
* model files record the type; compaction keeps the labelling and drops the
  zeros; continuing from a model keeps every old weight at its feature.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from crfkit.errors import ModelFormatError, UsageError
from crfkit.io import fileformat
from crfkit.kernels.objective import Objective
from crfkit.labelling.label import encode
from crfkit.model.model import Model, compact
from crfkit.training.corpus import encode_training, model_patterns
from crfkit.training.train import TrainOptions, train
from tests.helpers import PATTERNS, decode_best, decode_scored, random_corpus, type_objective
from tests.naive import log_partition, path_score, reference_scores


def logsumexp(v: np.ndarray) -> float:
    m = v.max()
    return float(m + np.log(np.exp(v - m).sum()))


def memm_reference(corpus, w: np.ndarray, seqs, rho2: float) -> float:
    """-log-likelihood of a MEMM from observation strings (no arrays), plus L2."""
    index = {name: i for i, name in enumerate(corpus.labels)}
    total = 0.5 * rho2 * float(w @ w)
    for seq in seqs:
        psi, phi = reference_scores(corpus, w, seq)
        y = [index[row[-1]] for row in seq.rows]
        for t in range(len(y)):
            row = psi[t] + (phi[t, y[t - 1]] if t else 0.0)
            total += logsumexp(row) - row[y[t]]
    return total


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_memm_objective_matches_reference(seed):
    seqs = random_corpus(seed)
    corpus = encode_training(PATTERNS, seqs, model_type="memm")
    w = np.random.default_rng(seed).normal(size=corpus.space.n_weights)
    g = np.empty_like(w)
    got = type_objective("memm", corpus.space, corpus.data, corpus.empirical, 0.3)(w, g)
    assert got == pytest.approx(memm_reference(corpus, w, seqs, 0.3), rel=1e-10)


def test_maxent_is_a_crf_without_label_pairs():
    seqs = random_corpus(5, n_seqs=12)
    corpus = encode_training(model_patterns(PATTERNS, "maxent"), seqs, model_type="maxent")
    w = np.random.default_rng(5).normal(size=corpus.space.n_weights)
    g_local, g_crf = np.empty_like(w), np.empty_like(w)
    f_local = type_objective("maxent", corpus.space, corpus.data, corpus.empirical, 0.2)(w, g_local)
    f_crf = Objective(corpus.space, corpus.data, corpus.empirical, 0.2)(w, g_crf)
    assert f_local == pytest.approx(f_crf, rel=1e-11)
    np.testing.assert_allclose(g_local, g_crf, rtol=1e-9, atol=1e-11)


def test_maxent_drops_bigram_only_patterns():
    kept = model_patterns(PATTERNS, "maxent")
    assert [p.kind for p in kept] == [p.kind for p in PATTERNS if p.kind in "u*"]
    from crfkit.features.patterns import parse_patterns

    with pytest.raises(UsageError, match="unigram"):
        model_patterns(parse_patterns("B\nb:%x[0,0]\n"), "maxent")


@pytest.mark.parametrize("seed", [0, 3])
def test_memm_decoding_is_the_most_probable_path(seed):
    seqs = random_corpus(seed, n_seqs=8, max_len=5)
    corpus = encode_training(PATTERNS, seqs, model_type="memm")
    w = np.random.default_rng(seed).normal(size=corpus.space.n_weights)
    ids, scores = decode_scored("memm", w, corpus.data, corpus.space)
    L = len(corpus.labels)
    for s, seq in enumerate(seqs):
        psi, phi = reference_scores(corpus, w, seq)
        T = len(seq.rows)

        def log_prob(path, psi=psi, phi=phi, T=T):
            total = psi[0, path[0]] - logsumexp(psi[0])
            for t in range(1, T):
                row = psi[t] + phi[t, path[t - 1]]
                total += row[path[t]] - logsumexp(row)
            return total

        best = max(itertools.product(range(L), repeat=T), key=log_prob)
        t0 = corpus.data.seq_ptr[s]
        assert tuple(ids[t0:t0 + T]) == best
        assert scores[s] == pytest.approx(log_prob(best), rel=1e-10)


def test_maxent_decoding_is_the_token_argmax():
    seqs = random_corpus(6, n_seqs=8)
    corpus = encode_training(model_patterns(PATTERNS, "maxent"), seqs, model_type="maxent")
    w = np.random.default_rng(6).normal(size=corpus.space.n_weights)
    ids = decode_best("maxent", w, corpus.data, corpus.space)
    for s, seq in enumerate(seqs):
        psi, _ = reference_scores(corpus, w, seq)
        t0 = corpus.data.seq_ptr[s]
        assert list(ids[t0:t0 + len(seq.rows)]) == list(np.argmax(psi, axis=1))
    with pytest.raises(UsageError):
        decode_best("hmm", w, corpus.data, corpus.space)


# --- model files -----------------------------------------------------------------------------
@pytest.mark.parametrize("model_type", ["crf", "memm", "maxent"])
def test_model_file_records_the_type(model_type):
    seqs = random_corpus(2, n_seqs=10)
    model = train(PATTERNS, seqs, TrainOptions(model_type=model_type, maxiter=5))
    loaded = Model.from_bytes(model.to_bytes())
    assert loaded.model_type == model_type
    data = encode(loaded, seqs)
    assert np.array_equal(decode_best(model_type, loaded.weights, data, loaded.space),
                          decode_best(model_type, model.weights, data, model.space))


def test_model_file_with_a_bad_type_is_refused():
    model = train(PATTERNS, random_corpus(2, n_seqs=10), TrainOptions(maxiter=2))
    meta, arrays = model._arrays_and_meta()
    meta["type"] = "hmm"
    with pytest.raises(ModelFormatError, match="unknown model type"):
        Model.from_bytes(fileformat.dumps(meta, arrays))
    meta["type"] = {}  # not a name at all: refused, not a TypeError
    with pytest.raises(ModelFormatError, match="unknown model type"):
        Model.from_bytes(fileformat.dumps(meta, arrays))
    meta["type"] = "maxent"  # a CRF's transition block is not a maxent model
    with pytest.raises(ModelFormatError, match="maxent"):
        Model.from_bytes(fileformat.dumps(meta, arrays))


def test_compact_keeps_the_labelling_and_drops_zeros():
    seqs = random_corpus(8, n_seqs=40, max_len=6)
    model = train(PATTERNS, seqs, TrainOptions(rho1=1.0, rho2=0.0))
    small = compact(model)
    s, c = model.space, small.space
    assert np.count_nonzero(model.weights) < s.n_weights  # L1 made zeros to drop
    assert np.count_nonzero(small.weights[:c.trans_offset]) == c.trans_offset
    assert c.n_obs < s.n_obs
    assert len(small.to_bytes()) < len(model.to_bytes())
    loaded = Model.from_bytes(small.to_bytes())
    more = random_corpus(18, n_seqs=20, max_len=6)
    for corpus in (seqs, more):
        want = decode_best("crf", model.weights, encode(model, corpus), model.space)
        got = decode_best("crf", loaded.weights, encode(loaded, corpus), loaded.space)
        assert np.array_equal(got, want)
    # every remaining feature kept its weight: compare by (observation text, labels);
    # the transition block stays dense
    assert feature_weights(small) == {k: v for k, v in feature_weights(model).items()
                                      if v or k[1] == "t"}


def feature_weights(model: Model) -> dict[tuple, float]:
    """{(observation string, kind, labels...): weight} of every feature of a model."""
    s, names, W = model.space, model.featurizer.observation_strings(), model.weights
    out: dict[tuple, float] = {}
    for o, name in enumerate(names):
        for k in range(s.u_ptr[o], s.u_ptr[o + 1]):
            out[(name, "u", model.labels[s.u_lab[k]])] = float(W[k])
        for k in range(s.b_ptr[o], s.b_ptr[o + 1]):
            out[(name, "b", model.labels[s.b_prev[k]], model.labels[s.b_cur[k]])] = \
                float(W[s.n_u + k])
    if s.has_trans:
        L = s.n_labels
        for a in range(L):
            for b in range(L):
                out[("", "t", model.labels[a], model.labels[b])] = \
                    float(W[s.trans_offset + a * L + b])
    return out


# --- warm start ------------------------------------------------------------------------------
def test_continuing_on_the_same_data_starts_at_the_optimum():
    seqs = random_corpus(11, n_seqs=20)
    model = train(PATTERNS, seqs, TrainOptions(stopeps=0, maxiter=300))
    corpus = encode_training(PATTERNS, seqs, init=model)
    assert np.array_equal(corpus.x0, model.weights)
    again = train(None, seqs, TrainOptions(maxiter=3), init=model)
    assert again.info["objective"] == pytest.approx(model.info["objective"], rel=1e-8)


def test_fine_tuning_adds_labels_and_observations_and_keeps_old_weights():
    old_seqs = random_corpus(12, n_seqs=15)
    model = train(PATTERNS, old_seqs, TrainOptions(maxiter=20))
    new_seqs = random_corpus(13, n_seqs=10)
    for seq in new_seqs[:3]:  # a new label and new words
        seq.rows[0][-1] = "W"
        seq.rows[0][0] = "zebra"
    corpus = encode_training(PATTERNS, new_seqs, init=model)
    assert corpus.labels == model.labels + ["W"]
    assert len(corpus.featurizer.vocab) > len(model.featurizer.vocab)
    # old observations keep their ids; every old feature keeps its weight
    assert corpus.featurizer.observation_strings()[:len(model.featurizer.vocab)] == \
        model.featurizer.observation_strings()
    start = Model(labels=corpus.labels, patterns=PATTERNS, n_token_columns=2,
                  featurizer=corpus.featurizer, space=corpus.space, weights=corpus.x0)
    new_features = feature_weights(start)
    for key, weight in feature_weights(model).items():
        assert new_features[key] == weight
    assert sum(1 for k in new_features if "W" in k) > 0
    # the merged arrays are consistent: objective == brute force from the strings
    w = np.random.default_rng(0).normal(size=corpus.space.n_weights)
    got = Objective(corpus.space, corpus.data, corpus.empirical, 0.0)(w, np.empty_like(w))
    index = {name: i for i, name in enumerate(corpus.labels)}
    want = 0.0
    for seq in new_seqs:
        psi, phi = reference_scores(corpus, w, seq)
        gold = tuple(index[row[-1]] for row in seq.rows)
        want += log_partition(psi, phi) - path_score(psi, phi, gold)
    assert got == pytest.approx(want, rel=1e-10)


def test_warm_start_refuses_other_patterns_and_types():
    seqs = random_corpus(14, n_seqs=5)
    model = train(PATTERNS, seqs, TrainOptions(maxiter=2))
    with pytest.raises(UsageError, match="pattern"):
        train(PATTERNS[:2], seqs, TrainOptions(maxiter=2), init=model)
    with pytest.raises(UsageError, match="memm"):
        train(None, seqs, TrainOptions(maxiter=2, model_type="memm"), init=model)
