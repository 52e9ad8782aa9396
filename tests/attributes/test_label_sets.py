"""Attribute training (CRFsuite data files) from label sets: the objective is the sum over
every label sequence the sets allow, checked by enumerating the paths."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from crfkit.attributes.attribute_model import AttributeModel
from tests.helpers import one_error_line, run
from tests.naive import path_score

# three labels; a set of two, a ? and an attribute (w=e) seen only on a set
DATA = ("A\tw=a\tp=x\nB\tw=b\nC\tw=c\tp=x\n\n"
        "A\tw=a\n?\tw=b\tp=y\n\n"
        "A|C\tw=e\tp=y\nB\tw=b\nC|B\tw=c\n\n"
        "B\tw=d\tp=x\nA\tw=a\n")
RHO2 = 0.5


def _gold(data: str) -> list[list[tuple[str, list[str]]]]:
    return [[(line.split("\t")[0], line.split("\t")[1:]) for line in block.splitlines()]
            for block in data.strip().split("\n\n")]


def _allows(gold: str, label: str) -> bool:
    return gold == "?" or label in gold.split("|")


def _brute_force_objective(model: AttributeModel, sequences) -> float:
    """sum over sequences of log Z(x) - log (sum of exp score over the allowed paths),
    plus the L2 term, every path enumerated."""
    s, W, L = model.space, model.weights, len(model.labels)
    weight = {(model.attributes[o], model.labels[s.u_lab[k]]): W[k]
              for o in range(s.n_obs) for k in range(s.u_ptr[o], s.u_ptr[o + 1])}
    trans = W[s.trans_offset:s.trans_offset + L * L].reshape(L, L)
    f = 0.5 * RHO2 * float(W @ W)
    for tokens in sequences:
        T = len(tokens)
        psi = np.array([[sum(weight.get((a, label), 0.0) for a in attrs)
                         for label in model.labels] for _, attrs in tokens])
        phi = np.broadcast_to(trans, (T, L, L))
        every, allowed = [], []
        for path in itertools.product(range(L), repeat=T):
            score = path_score(psi, phi, path)
            every.append(score)
            if all(_allows(g, model.labels[y]) for (g, _), y in zip(tokens, path, strict=True)):
                allowed.append(score)
        f += np.logaddexp.reduce(every) - np.logaddexp.reduce(allowed)
    return f


@pytest.mark.parametrize("options", [[], ["-1", "0.05"]])
def test_the_objective_sums_over_the_paths_the_sets_allow(tmp_path, options):
    data, model_file = tmp_path / "partial.txt", tmp_path / "m"
    data.write_text(DATA)
    result = run("train", "-q", "--format", "crfsuite", "-2", RHO2, "-i", 6, *options, data,
                 model_file)
    assert result.exit_code == 0, result.output
    model = AttributeModel.load(str(model_file))
    assert model.labels == ["A", "B", "C"]  # ? and the sets are no labels of their own
    s = model.space
    features = {(model.attributes[o], model.labels[s.u_lab[k]])
                for o in range(s.n_obs) for k in range(s.u_ptr[o], s.u_ptr[o + 1])}
    # a set makes its attributes' features with each member, ? none (column training's)
    assert {("w=e", "A"), ("w=e", "C"), ("p=y", "A"), ("p=y", "C")} <= features
    assert not {("w=e", "B"), ("p=y", "B")} & features
    expected = _brute_force_objective(model, _gold(DATA))
    l1 = 0.05 * float(np.abs(model.weights).sum()) if options else 0.0
    assert model.info["objective"] == pytest.approx(expected + l1, rel=1e-9, abs=1e-9)


def test_what_cannot_train_from_sets_is_refused_at_their_line(tmp_path):
    data = tmp_path / "partial.txt"
    data.write_text(DATA)
    result = run("train", "--format", "crfsuite", "-a", "ap", data, tmp_path / "m")
    one_error_line(result, f"{data}:6:", "-a ap", "label set")
    data.write_text(DATA.replace("C|B", "C|"))
    result = run("train", "--format", "crfsuite", data, tmp_path / "m")
    one_error_line(result, f"{data}:10:", "'C|'")
