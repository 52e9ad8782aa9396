"""CRFsuite's -g N groups, --holdout K (its -e K) and -x cross-validation in crfkit train."""

from __future__ import annotations

import re

import numpy as np
import pytest

from crfkit.model.model import Model
from crfkit.training.crossval import crfsuite_groups
from tests.helpers import one_error_line, run

# The groups CRFsuite's learn.c deals: its shuffle (swap i with rand() % n, rand() unseeded)
# then group i % N, printed by that loop compiled with gcc against glibc's rand().
GLIBC_GROUPS = {(12, 3): [0, 0, 2, 2, 0, 1, 2, 2, 1, 1, 0, 1]}
GLIBC_100_5_FIRST = [3, 1, 4, 2, 2, 0, 3, 1, 4, 3, 2, 3, 2, 3, 2, 2, 0, 1, 2, 3]

PAT = "U00:%x[0,0]\nU01:%x[0,1]\nU02:%x[-1,1]/%x[0,1]\nB\n"
WORDS = [("the", "DT", "B-NP"), ("a", "DT", "B-NP"), ("cat", "NN", "I-NP"),
         ("dogs", "NNS", "I-NP"), ("sat", "VBD", "B-VP"), ("ran", "VBD", "B-VP"),
         ("on", "IN", "B-PP"), ("in", "IN", "B-PP"), ("big", "JJ", "I-NP"), (".", ".", "O")]


def _corpus(n: int = 12, seed: int = 3) -> list[str]:
    rng = np.random.default_rng(seed)
    sentences = []
    for _ in range(n):
        rows = [WORDS[i] for i in rng.integers(0, len(WORDS), size=rng.integers(3, 7))]
        sentences.append("\n".join(" ".join(r) for r in rows) + "\n")
    return sentences


def test_groups_are_crfsuites():
    assert crfsuite_groups(12, 3).tolist() == GLIBC_GROUPS[(12, 3)]
    assert crfsuite_groups(100, 5)[:20].tolist() == GLIBC_100_5_FIRST


def _scores(text: str) -> list[tuple[float, float]]:
    return [(float(a), float(f)) for a, f in
            re.findall(r"^fold \d+: accuracy\s+([\d.]+)%\s+F1\s+([\d.]+)", text, re.M)]


def test_cross_validation_scores_each_fold_as_train_label_eval(tmp_path):
    """Each fold's line is what training on the other groups, labelling the held-out group
    and crfkit eval give, done by hand; the mean line is their mean."""
    sentences = _corpus()
    (tmp_path / "p.pat").write_text(PAT)
    (tmp_path / "all.txt").write_text("\n".join(sentences))
    result = run("train", "-q", "-p", tmp_path / "p.pat", "-x", "-g", 3, "-i", 8,
                 tmp_path / "all.txt", tmp_path / "never.model")
    assert result.exit_code == 0, result.stderr
    folds = _scores(result.stdout)
    assert len(folds) == 3 and not (tmp_path / "never.model").exists()
    for group in range(3):
        ids = [i for i, g in enumerate(GLIBC_GROUPS[(12, 3)]) if g == group]
        (tmp_path / "rest.txt").write_text("\n".join(s for i, s in enumerate(sentences)
                                                     if i not in ids))
        (tmp_path / "held.txt").write_text("\n".join(sentences[i] for i in ids))
        assert run("train", "-q", "-p", tmp_path / "p.pat", "-i", 8, tmp_path / "rest.txt",
                   tmp_path / "m").exit_code == 0
        assert run("label", "-c", "-m", tmp_path / "m", tmp_path / "held.txt",
                   tmp_path / "out.txt").exit_code == 0
        report = run("eval", tmp_path / "out.txt").stdout
        accuracy = float(re.search(r"accuracy:\s+([\d.]+)%", report).group(1))
        f1 = float(re.search(r"FB1:\s+([\d.]+)", report).group(1))
        assert folds[group] == pytest.approx((accuracy, f1), abs=0.006)
    mean = re.search(r"^mean over 3 folds: accuracy\s+([\d.]+)%.*F1\s+([\d.]+)",
                     result.stdout, re.M)
    assert float(mean.group(1)) == pytest.approx(np.mean([a for a, _ in folds]), abs=0.006)
    assert float(mean.group(2)) == pytest.approx(np.mean([f for _, f in folds]), abs=0.006)


def test_holdout_trains_on_the_other_groups_and_scores_the_held_one(tmp_path):
    sentences = _corpus()
    (tmp_path / "p.pat").write_text(PAT)
    (tmp_path / "all.txt").write_text("\n".join(sentences))
    result = run("train", "-p", tmp_path / "p.pat", "-g", 3, "--holdout", 2, "-i", 5,
                 tmp_path / "all.txt", tmp_path / "h.model")
    assert result.exit_code == 0, result.stderr
    assert "dev-F1" in result.stderr  # the held-out group scored at every iteration
    rest = [s for s, g in zip(sentences, GLIBC_GROUPS[(12, 3)], strict=True) if g != 1]
    (tmp_path / "rest.txt").write_text("\n".join(rest))
    assert run("train", "-q", "-p", tmp_path / "p.pat", "-i", 5, tmp_path / "rest.txt",
               tmp_path / "r.model").exit_code == 0
    held_out, by_hand = Model.load(tmp_path / "h.model"), Model.load(tmp_path / "r.model")
    np.testing.assert_array_equal(held_out.weights, by_hand.weights)


def test_log_to_file_is_named_as_crfsuite_names_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "p.pat").write_text(PAT)
    (tmp_path / "all.txt").write_text("\n".join(_corpus()))
    result = run("train", "-l", "-p", "p.pat", "-2", "0.5", "-i", 3, "all.txt", "m.model")
    assert result.exit_code == 0, result.stderr
    log = tmp_path / "log.crfkit_l-bfgs_rho2=0.5_maxiter=3"
    assert re.search(r"^\s+\[\s+3\] obj=", log.read_text(), re.M)
    assert "obj=" not in result.stderr
    run("train", "-l", "-L", "base", "-p", "p.pat", "-i", 1, "all.txt", "m.model")
    assert (tmp_path / "base_l-bfgs_maxiter=1").exists()


@pytest.mark.parametrize("options,needle", [
    (["-x"], "need -g/--split N"),
    (["--holdout", "1"], "need -g/--split N"),
    (["-g", "3"], "give one of them"),
    (["-g", "3", "-x", "--holdout", "1"], "drop --holdout"),
    (["-g", "3", "--holdout", "4"], "1..3"),
    (["-g", "1", "-x"], "-g/--split must be >= 2"),
    (["-g", "13", "-x"], "fewer than the groups"),
])
def test_group_options_are_refused_in_one_line(tmp_path, options, needle):
    (tmp_path / "p.pat").write_text(PAT)
    (tmp_path / "all.txt").write_text("\n".join(_corpus()))
    one_error_line(run("train", "-p", tmp_path / "p.pat", *options, tmp_path / "all.txt",
                       tmp_path / "m"), needle)


def _attributes(X) -> list[list[dict[str, float]]]:
    """Items as CRFsuite data files hold them: string features as NAME=VALUE attributes."""
    return [[{f"{k}={v}" if isinstance(v, str) else k: 1.0 if isinstance(v, str) else float(v)
              for k, v in item.items()} for item in xseq] for xseq in X]


def _crfsuite_file(path, X, y) -> None:
    with open(path, "w") as out:
        for xseq, yseq in zip(X, y, strict=True):
            for item, label in zip(xseq, yseq, strict=True):
                fields = [f"{name}:{value}" for name, value in item.items()]
                out.write("\t".join([label, *fields]) + "\n")
            out.write("\n")


@pytest.mark.parametrize("algorithm", ["ap", "l2sgd"])
def test_crfsuite_data_holdout_is_crfsuite_learns(tmp_path, algorithm):
    """--format crfsuite -g 3 --holdout 2: the model and the held-out accuracy of
    ``crfsuite learn -g 3 -e 2``, replayed in python-crfsuite as its front end runs: the
    sequences in its shuffled order with the group i % 3, rand() having drawn one value
    per sequence for that shuffle before training."""
    pycrfsuite = pytest.importorskip("pycrfsuite")
    import ctypes

    from crfkit.attributes.attribute_model import AttributeModel
    from crfkit.optim.crandom import crfsuite_orders
    from crfkit.sklearn import Tagger
    from tests.optim.test_crfsuite_online import DUMP_PRECISION, largest_difference, noisy_corpus

    X, y = noisy_corpus()
    # every sequence opens with every label, so that the labels are first seen in one
    # order however the sequences are ordered (python-crfsuite's dictionary follows the
    # appends, CRFsuite's front end the file)
    opening = ["N", "D", "V", "C", "P"]
    X = [[{f"open={i}": 1.0} for i in range(5)] + xseq for xseq in _attributes(X)]
    y = [opening + yseq for yseq in y]
    order = crfsuite_orders(len(X), 1)()
    libc = ctypes.CDLL(None)
    libc.srand(1)
    for _ in range(len(X)):
        libc.rand()
    trainer = pycrfsuite.Trainer(algorithm=algorithm, verbose=False)
    trainer.set_params({"max_iterations": 10})
    for i, k in enumerate(order):
        trainer.append(X[k], y[k], i % 3)
    trainer.train(str(tmp_path / "m.crfsuite"), holdout=1)
    theirs = trainer.logparser.iterations[-1]
    tagger = pycrfsuite.Tagger()
    tagger.open(str(tmp_path / "m.crfsuite"))
    info = tagger.info()
    _crfsuite_file(tmp_path / "d.txt", X, y)
    c2 = ["-2", "2"] if algorithm == "l2sgd" else []  # CRFsuite's c2 = 1
    result = run("train", "--format", "crfsuite", "-a", algorithm, "-i", 10, *c2, "-g", 3,
                 "--holdout", 2, tmp_path / "d.txt", tmp_path / "m.model")
    assert result.exit_code == 0, result.stderr
    ours = Tagger(AttributeModel.load(tmp_path / "m.model"))
    assert largest_difference(dict(info.state_features), ours.state_features()) < DUMP_PRECISION
    assert largest_difference(dict(info.transitions), ours.transition_features()) \
        < DUMP_PRECISION
    if "item_accuracy_float" in theirs:  # the perceptrons report it (l2sgd: not its epochs)
        per_iteration = re.findall(r"^    held-out group 2: accuracy\s+([\d.]+)%",
                                   result.stderr, re.M)
        assert len(per_iteration) == 10  # scored after every iteration, as CRFsuite
        theirs_each = [100 * i["item_accuracy_float"] for i in trainer.logparser.iterations]
        assert [float(a) for a in per_iteration] == pytest.approx(theirs_each, abs=0.006)
    cv = run("train", "--format", "crfsuite", "-a", algorithm, "-i", 10, *c2, "-g", 3, "-x",
             "-q", tmp_path / "d.txt")
    assert cv.exit_code == 0, cv.stderr
    held = re.search(r"^\* held-out group 2: accuracy\s+([\d.]+)%", result.stderr,
                     re.M).group(1)
    assert _scores(cv.stdout)[1][0] == float(held)  # -x's fold 2 is --holdout 2
