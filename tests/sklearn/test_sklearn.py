"""crfkit.sklearn: the sklearn-crfsuite drop-in, its feature forms and its scikit-learn
behaviour (clone, params, pickle, not-fitted errors, model selection)."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from tests.helpers import toy_corpus

pytest.importorskip("sklearn")

from sklearn.base import clone  # noqa: E402
from sklearn.exceptions import NotFittedError  # noqa: E402
from sklearn.model_selection import GridSearchCV, cross_val_score  # noqa: E402
from sklearn.pipeline import Pipeline  # noqa: E402

from crfkit.attributes.attribute_model import encode  # noqa: E402
from crfkit.attributes.encoder import item_attributes  # noqa: E402
from crfkit.sklearn import CRF  # noqa: E402
from crfkit.sklearn import metrics as crf_metrics  # noqa: E402


def test_item_forms_flatten_as_python_crfsuite_does():
    item = {"w": "the", "b": b"x", "n": 2, "f": 0.5, "t": True, "no": False,
            "d": {"k": "v", "z": 3.0, "e": {}}, "l": ["p", "q"], "empty": {}}
    assert list(item_attributes(item)) == [
        ("w:the", 1.0), ("b:x", 1.0), ("n", 2.0), ("f", 0.5), ("t", 1.0), ("no", 0.0),
        ("d:k:v", 1.0), ("d:z", 3.0), ("l:p", 1.0), ("l:q", 1.0)]
    assert list(item_attributes(["a", "b"])) == [("a", 1.0), ("b", 1.0)]
    assert list(item_attributes({})) == []
    with pytest.raises(Exception, match="value"):
        list(item_attributes({"w": object()}))


def test_encoding_of_dicts_arrays_and_generators():
    vocab: dict[str, int] = {}
    dense = np.array([[0.5, 2.0], [1.0, -1.0]])

    def sequences():  # a generator: no __len__
        yield [{"w": "a", "z": False}, ["s", "w:a"]]
        yield dense
        yield ([{"w": "b"}, {}], dense)

    data = encode(sequences(), vocab, grow=True)
    assert vocab == {"w:a": 0, "s": 1, "#0": 2, "#1": 3, "w:b": 4}  # "z": only False
    assert data.seq_ptr.tolist() == [0, 2, 4, 6]
    assert data.tok_ptr.tolist() == [0, 1, 3, 5, 7, 10, 12]
    assert data.tok_obs.tolist() == [0, 1, 0, 2, 3, 2, 3, 4, 2, 3, 2, 3]
    assert data.tok_val.tolist() == [1, 1, 1, 0.5, 2, 1, -1, 1, 0.5, 2, 1, -1]
    frozen = encode([[{"w": "a", "new": 1.0}]], vocab, grow=False)
    assert frozen.tok_obs.tolist() == [0] and frozen.tok_val is None


@pytest.mark.parametrize("all_transitions", [True, False])
def test_weights_match_python_crfsuite(all_transitions):
    """Same objective as CRFsuite (c2 scaling, values, nested forms, transitions never seen
    kept out or not): same weights."""
    pycrfsuite = pytest.importorskip("pycrfsuite")
    X = [[{"w": "the", "n": 1.5, "b": False, "l": ["p", "q"]}, {"w": "dog", "n": 0.5}],
         [{"w": "a", "t": True}, {"w": "cat", "x": {"y": "z", "k": 2}}],
         [["s1", "s2"], {"w": b"dog"}]]
    y = [["D", "N"], ["D", "N"], ["N", "N"]]
    trainer = pycrfsuite.Trainer(verbose=False)
    for xseq, yseq in zip(X, y, strict=True):
        trainer.append(xseq, yseq)
    trainer.set_params({"c1": 0.0, "c2": 0.1, "feature.possible_transitions": all_transitions,
                        "epsilon": 1e-10, "delta": 1e-12})
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        trainer.train(f"{tmp}/m.crfsuite")
        tagger = pycrfsuite.Tagger()
        tagger.open(f"{tmp}/m.crfsuite")
        info = tagger.info()
    crf = CRF(c2=0.1, all_possible_transitions=all_transitions, epsilon=1e-10,
              delta=1e-12).fit(X, y)
    assert sorted(crf.attributes_) == sorted(info.attributes)
    assert set(crf.transition_features_) == set(info.transitions)
    assert set(crf.state_features_) == set(info.state_features)
    for key, weight in info.state_features.items():  # CRFsuite prints 6 decimals
        assert crf.state_features_[key] == pytest.approx(weight, abs=2e-6)
    for key, weight in info.transitions.items():
        assert crf.transition_features_[key] == pytest.approx(weight, abs=2e-6)


def test_fit_predict_marginals_and_fitted_attributes():
    X, y = toy_corpus()
    crf = CRF(c1=0.01, c2=0.05, max_iterations=60)
    assert crf.classes_ is None and crf.attributes_ is None and crf.tagger_ is None
    assert crf.training_log_ is None
    with pytest.raises(NotFittedError):
        crf.predict(X)
    assert crf.fit(X, y) is crf
    pred = crf.predict(X[:5])
    assert [list(p) for p in pred] == y[:5]
    assert crf.predict_single(X[0]) == y[0]
    assert crf.score(X, y) == 1.0
    marg = crf.predict_marginals_single(X[0])
    assert len(marg) == len(X[0]) and set(marg[0]) == set(crf.classes_)
    assert sum(marg[0].values()) == pytest.approx(1.0)
    assert max(marg[1], key=marg[1].get) == y[0][1]
    assert sorted(crf.classes_) == ["D", "N", "V"]
    assert crf.num_attributes_ == len(crf.attributes_) > 0
    assert crf.size_ > 0 and crf.training_log_.iterations
    tagger = crf.tagger_
    assert tagger.labels() == crf.classes_
    tagger.set(X[0])
    assert tagger.tag() == y[0]
    assert tagger.marginal(y[0][0], 0) == pytest.approx(marg[0][y[0][0]])


def test_real_valued_feature_is_learnt():
    """The label follows the sign of a real value: only a real-valued weight can tell."""
    rng = np.random.default_rng(1)
    X, y = [], []
    for _ in range(60):
        v = rng.normal(size=4)
        X.append(v[:, None] * np.array([[1.0, 0.0]]) + np.array([[0.0, 1.0]]))
        y.append(["P" if x > 0 else "M" for x in v])
    crf = CRF(c2=0.01, max_iterations=100).fit(X, y)
    assert crf.score(X, y) > 0.95
    w = crf.state_features_
    # As CRFsuite: a pair whose values total below min_freq (0) is no feature, so only
    # (#0, P) exists.
    assert w[("#0", "P")] > 0
    assert ("#0", "M") not in w


def test_clone_params_pickle_and_fit_twice(tmp_path):
    X, y = toy_corpus()
    crf = CRF(algorithm="lbfgs", c1=0.1, c2=0.01, max_iterations=30, n_jobs=1)
    params = crf.get_params()
    assert params["c1"] == 0.1 and params["n_jobs"] == 1 and params["model_type"] is None
    assert list(params)[:4] == ["algorithm", "all_possible_states",
                                "all_possible_transitions", "averaging"]  # sorted by sklearn
    copy = clone(crf)
    assert copy.get_params() == params and copy.tagger_ is None
    copy.set_params(c1=0.0)
    assert copy.c1 == 0.0 and crf.c1 == 0.1
    crf.fit(X, y)
    restored = pickle.loads(pickle.dumps(crf))
    assert [list(p) for p in restored.predict(X)] == [list(p) for p in crf.predict(X)]
    assert b"pickle" not in crf.tagger_.model.to_bytes()
    first = crf.state_features_
    X2 = [[{"w": "x"}], [{"w": "y"}]]
    crf.fit(X2, [["A"], ["B"]])  # a second fit starts from scratch
    assert crf.classes_ == ["A", "B"] and crf.state_features_ != first
    path = tmp_path / "m.crfkit"
    saved = CRF(max_iterations=20, model_filename=str(path)).fit(X, y)
    loaded = CRF(model_filename=str(path))
    assert loaded.classes_ == saved.classes_
    assert [list(p) for p in loaded.predict(X[:3])] == y[:3]


def test_bad_parameters_are_refused():
    X, y = toy_corpus(5)
    with pytest.raises(ValueError, match="algorithm"):
        CRF(algorithm="newton").fit(X, y)
    with pytest.raises(ValueError, match="c1 does not apply"):
        CRF(algorithm="ap", c1=1.0).fit(X, y)
    with pytest.raises(ValueError, match="X_dev"):
        CRF().fit(X, y, X_dev=X)
    with pytest.raises(Exception, match="labels"):
        CRF().fit(X, y[:-1])


def test_metrics():
    gold = [["B-PER", "I-PER", "O"], ["B-LOC", "O"]]
    pred = [["B-PER", "I-PER", "O"], ["B-PER", "O"]]
    assert crf_metrics.flat_accuracy_score(gold, pred) == pytest.approx(4 / 5)
    assert crf_metrics.sequence_accuracy_score(gold, pred) == 0.5
    assert crf_metrics.chunk_f1_score(gold, pred) == pytest.approx(0.5)
    assert crf_metrics.flat_f1_score(gold, pred, average="micro") == pytest.approx(0.8)
    assert "B-LOC" in crf_metrics.flat_classification_report(gold, pred, zero_division=0)


@pytest.mark.slow
def test_pipeline_grid_search_and_cross_validation_in_processes():
    X, y = toy_corpus(30)
    search = GridSearchCV(CRF(max_iterations=20, n_jobs=1), {"c2": [0.01, 1.0]}, cv=2,
                          n_jobs=2, scoring=crf_metrics.chunk_f1)
    search.fit(X, y)
    assert search.best_params_["c2"] in (0.01, 1.0)
    assert len(search.cv_results_["mean_test_score"]) == 2
    scores = cross_val_score(Pipeline([("crf", CRF(max_iterations=20, n_jobs=1))]), X, y,
                             cv=2, scoring=crf_metrics.flat_accuracy)
    assert len(scores) == 2 and all(0.5 < s <= 1.0 for s in scores)


def test_importing_the_estimator_does_not_import_sklearn():
    import subprocess
    import sys

    code = "import sys, crfkit, crfkit.sklearn; print('sklearn' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"
    assert repr(CRF(c1=0.1, n_jobs=2)) == "CRF(c1=0.1, n_jobs=2)"
    with pytest.raises(ValueError, match="Invalid parameter"):
        CRF().set_params(cc=1)


@pytest.mark.parametrize("check", ["check_no_attributes_set_in_init",
                                   "check_get_params_invariance", "check_set_params",
                                   "check_parameters_default_constructible"])
def test_scikit_learn_parameter_checks(check):
    """scikit-learn's own estimator checks that apply to a sequence estimator (the others
    feed 2-D arrays of samples, which are not sequences)."""
    from sklearn.utils import estimator_checks

    getattr(estimator_checks, check)("CRF", CRF())
