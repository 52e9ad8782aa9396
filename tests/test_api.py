"""The public Python API: the README's example runs as written."""

from __future__ import annotations

from pathlib import Path

import pytest

import crfkit

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_python_api_round_trip(tmp_path: Path):
    patterns = crfkit.read_patterns(ROOT / "patterns/address.pat")
    train = list(crfkit.read_sequences(ROOT / "data/address-train.txt"))[:300]
    test = list(crfkit.read_sequences(ROOT / "data/address-test.txt"))[:100]
    model = crfkit.train(patterns, train, crfkit.TrainOptions(maxiter=30))
    model.save(tmp_path / "m.model")
    loaded = crfkit.Model.load(tmp_path / "m.model")
    predicted = crfkit.label_sequences(loaded, test)
    assert predicted == crfkit.label_sequences(model, test)
    gold = [[row[-1] for row in seq.rows] for seq in test]
    report = crfkit.evaluate(gold, predicted)
    assert report.f1 > 80.0


def test_exports_are_not_shadowed_by_submodules():
    # importing the submodules must not hide the functions
    import crfkit.evaluation.scoring  # noqa: F401
    import crfkit.training.train  # noqa: F401

    assert callable(crfkit.train) and crfkit.train.__name__ == "train"
    assert callable(crfkit.evaluate) and crfkit.evaluate.__name__ == "evaluate"


def test_unknown_attribute():
    with pytest.raises(AttributeError):
        crfkit.no_such_thing  # noqa: B018
