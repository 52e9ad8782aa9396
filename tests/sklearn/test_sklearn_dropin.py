"""crfkit.sklearn as a drop-in for sklearn-crfsuite and python-crfsuite: the tagger's
python-crfsuite methods, the modules the tutorial imports, the training log's keys,
models written by CRFsuite, errors as ValueError, compact models, the compile notice."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("sklearn")

from crfkit.attributes import attribute_model as attrs  # noqa: E402
from crfkit.attributes.encoder import item_attributes  # noqa: E402
from crfkit.errors import InputError, UsageError  # noqa: E402
from crfkit.sklearn import CRF  # noqa: E402

X = [[{"w": "the"}, {"w": "dog", "n": 0.5}, {"w": "runs"}],
     [{"w": "a"}, {"w": "cat"}, {"w": "sleeps"}],
     [{"w": "dog"}, {"w": "runs"}],
     [{"w": "the"}, {"w": "cat"}, {"w": "runs"}, {"w": "fast"}]] * 3
Y = [["D", "N", "V"], ["D", "N", "V"], ["N", "V"], ["D", "N", "V", "A"]] * 3


@pytest.fixture(scope="module")
def crfsuite_model(tmp_path_factory):
    """A model written by python-crfsuite (CRFsuite's binary format)."""
    pycrfsuite = pytest.importorskip("pycrfsuite")
    path = str(tmp_path_factory.mktemp("pcs") / "m.crfsuite")
    trainer = pycrfsuite.Trainer(verbose=False)
    for xseq, yseq in zip(X, Y, strict=True):
        trainer.append(xseq, yseq)
    trainer.set_params({"c1": 0.05, "c2": 0.01, "max_iterations": 50})
    trainer.train(path)
    tagger = pycrfsuite.Tagger()
    tagger.open(path)
    return path, tagger


def test_tag_of_a_sequence_makes_it_current():
    tagger = CRF(max_iterations=30).fit(X, Y).tagger_
    tagger.set(X[0])
    tagged = tagger.tag(X[2])
    assert tagger.tag() == tagged == ["N", "V"]
    p = tagger.marginal("N", 0)
    tagger.set(X[2])
    assert tagger.marginal("N", 0) == p


def test_crfsuite_model_loads_and_labels_as_python_crfsuite(crfsuite_model):
    path, theirs = crfsuite_model
    crf = CRF(model_filename=path)
    assert [list(p) for p in crf.predict(X)] == [theirs.tag(x) for x in X]
    ours = crf.tagger_
    for xseq, yseq in zip(X[:4], Y[:4], strict=True):
        ours.set(xseq)
        theirs.set(xseq)
        assert ours.probability(yseq) == pytest.approx(theirs.probability(yseq), rel=1e-9)
        for t in range(len(xseq)):
            for label in theirs.labels():
                assert ours.marginal(label, t) == pytest.approx(theirs.marginal(label, t),
                                                                rel=1e-9, abs=1e-12)
    info, their_info = ours.info(), theirs.info()
    assert info.transitions == pytest.approx(their_info.transitions)
    assert info.state_features == pytest.approx(their_info.state_features)
    assert set(crf.classes_) == set(theirs.labels())


def test_tagger_open_dump_close(crfsuite_model, tmp_path):
    from crfkit.sklearn import Tagger

    path, theirs = crfsuite_model
    tagger = Tagger().open(path)
    assert tagger.tag(X[3]) == theirs.tag(X[3])
    out = tmp_path / "dump.txt"
    tagger.dump(str(out))
    lines = out.read_text(encoding="utf-8").splitlines()
    assert len(lines) == len(theirs.info().transitions) + len(theirs.info().state_features)
    tagger.close()
    with pytest.raises(ValueError, match="no model"):
        tagger.tag(X[0])


def test_label_format_crfsuite_reads_a_crfsuite_model(crfsuite_model, tmp_path):
    from click.testing import CliRunner

    from crfkit.attributes.data_file import format_field
    from crfkit.cli import cli

    path, theirs = crfsuite_model
    data = tmp_path / "in.txt"
    data.write_text("".join(
        "".join(f"{y}\t" + "\t".join(format_field(name, value)
                                     for name, value in item_attributes(item)) + "\n"
                for item, y in zip(xseq, yseq, strict=True)) + "\n"
        for xseq, yseq in zip(X[:4], Y[:4], strict=True)), encoding="utf-8")
    out = tmp_path / "out.txt"
    result = CliRunner().invoke(cli, ["label", "--format", "crfsuite", "-m", path, str(data),
                                      str(out)])
    assert result.exit_code == 0, result.output
    tags = [line.split("\t")[-1] for line in out.read_text().splitlines() if line]
    assert tags == [t for x in X[:4] for t in theirs.tag(x)]


def test_convert_without_patterns_writes_an_attribute_model(crfsuite_model, tmp_path):
    from click.testing import CliRunner

    from crfkit.cli import cli

    path, theirs = crfsuite_model
    out = tmp_path / "m.crfkit"
    result = CliRunner().invoke(cli, ["convert", path, str(out)])
    assert result.exit_code == 0, result.output
    assert [list(p) for p in CRF(model_filename=str(out)).predict(X)] == \
        [theirs.tag(x) for x in X]


def test_tutorial_imports():
    from crfkit.sklearn import metrics, scorers
    from crfkit.sklearn.utils import flatten

    assert flatten([["a", "b"], ["c"]]) == ["a", "b", "c"]
    assert scorers.flat_accuracy is metrics.flat_accuracy
    assert callable(scorers.sequence_accuracy)


def test_training_log_has_sklearn_crfsuite_keys_and_holdout_scores():
    crf = CRF(max_iterations=15).fit(X, Y, X_dev=X[:4], y_dev=Y[:4])
    log = crf.training_log_
    assert [row["num"] for row in log.iterations] == list(range(1, len(log.iterations) + 1))
    last = log.last_iteration
    for key in ("loss", "time", "feature_norm", "active_features", "avg_precision",
                "avg_recall", "avg_f1", "item_accuracy", "instance_accuracy"):
        assert key in last, key
    pred = [list(p) for p in crf.predict(X[:4])]
    right = sum(a == b for s, p in zip(Y[:4], pred, strict=True) for a, b in zip(s, p, strict=True))
    assert last["item_accuracy_float"] == right / sum(map(len, Y[:4]))
    assert last["devel_error"] == pytest.approx(100.0 * (1 - right / sum(map(len, Y[:4]))))
    assert last["scores"]["N"].ref == sum(s.count("N") for s in Y[:4])
    assert all(row["time"] >= 0 for row in log.iterations)
    assert last["active_features"] == int(np.count_nonzero(crf._model.weights))


def test_errors_are_value_errors_naming_the_parameter():
    assert issubclass(InputError, ValueError) and issubclass(UsageError, ValueError)
    with pytest.raises(ValueError, match=r"^c1 must be >= 0"):
        CRF(c1=-1).fit(X, Y)
    with pytest.raises(ValueError, match=r"^max_linesearch must be >= 1"):
        CRF(max_linesearch=0).fit(X, Y)
    with pytest.raises(ValueError):
        CRF().fit([[{"w": "a"}]], [[1]])  # labels must be strings: an InputError


def test_linesearch_names_and_max_linesearch_reach_training(monkeypatch):
    from crfkit.optim import lbfgs

    seen = []
    original = lbfgs._line_search

    def spy(*args):
        seen.append(args[-1])
        return original(*args)

    monkeypatch.setattr(lbfgs, "_line_search", spy)
    crf = CRF(max_iterations=5, linesearch="StrongBacktracking", max_linesearch=7).fit(X, Y)
    assert seen and set(seen) == {7}
    assert crf._model.info["options"]["max_linesearch"] == 7
    with pytest.raises(ValueError, match="linesearch must be one of"):
        CRF(linesearch="Newton").fit(X, Y)


def test_fitted_model_keeps_only_nonzero_weights():
    crf = CRF(c1=0.5, c2=0.0, max_iterations=50).fit(X, Y)
    model = crf._model
    n_u = model.space.n_u
    assert np.count_nonzero(model.weights[:n_u]) == n_u
    assert len(model.attributes) == crf.num_attributes_


def test_compacted_model_labels_and_scores_the_same():
    from crfkit.kernels.decoder import decode

    vocab: dict[str, int] = {}
    data = attrs.encode(X, vocab, grow=True)
    labels: list[str] = []
    data.labels = attrs.label_ids(Y, labels, data.lengths, grow=True)
    names = sorted(vocab, key=vocab.get)
    from crfkit.training.train import TrainOptions

    full = attrs.train(data, labels, names, TrainOptions(rho1=0.5, rho2=0.0, maxiter=50))
    small = attrs.compacted(full)
    assert len(small.to_bytes()) < len(full.to_bytes())
    assert len(small.attributes) < len(full.attributes)
    a = decode(full, attrs.encode(X, full.vocab(), grow=False), marginals=True, log_z=True)
    b = decode(small, attrs.encode(X, small.vocab(), grow=False), marginals=True, log_z=True)
    assert np.array_equal(a.paths, b.paths)
    np.testing.assert_allclose(a.marginals, b.marginals, rtol=1e-12)
    np.testing.assert_allclose(a.log_z, b.log_z, rtol=1e-12)


def test_compile_notice_only_when_kernels_are_not_cached(monkeypatch, capsys):
    from crfkit.training import jitcache

    CRF(max_iterations=2, verbose=True).fit(X, Y).predict(X)  # warm
    capsys.readouterr()
    CRF(max_iterations=2, verbose=True).fit(X, Y).predict(X)
    assert "compiling" not in capsys.readouterr().err
    monkeypatch.setattr(jitcache, "is_cached", lambda dispatcher: False)
    crf = CRF(max_iterations=2, verbose=True).fit(X, Y)
    fit_err = capsys.readouterr().err
    assert fit_err.count("compiling") == 1
    crf.predict(X)
    crf.predict(X)
    assert capsys.readouterr().err.count("compiling the labelling kernels") == 1


def test_labelling_one_sequence_switches_no_thread_setting(monkeypatch):
    import numba

    crf = CRF(max_iterations=5).fit(X, Y)
    expected = list(crf.predict(X[3:4])[0])

    def refuse(n):
        raise AssertionError("predict_single switched the thread count")

    monkeypatch.setattr(numba, "set_num_threads", refuse)
    assert crf.predict_single(X[3]) == expected


def test_bench_script_reads_conll2002_as_utf8(tmp_path):
    import importlib.util
    from pathlib import Path

    script = Path(__file__).resolve().parents[2] / "scripts" / "bench_sklearn.py"
    spec = importlib.util.spec_from_file_location("crfkit_bench_sklearn", script)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    data = tmp_path / "esp.train"
    data.write_text("España NP B-LOC\nañade VMI O\n\n", encoding="utf-8")
    assert bench.read_conll(str(data)) == [[("España", "NP", "B-LOC"), ("añade", "VMI", "O")]]
