"""Fixtures shared by the test modules (plain helpers: tests/helpers.py; oracles: tests/naive.py).

Session-scoped, so what they build is paid for once per run: the shipped
address sample split into small files, and one model trained on it that
tests only read (to label with, damage copies of, pickle, ...). Tests whose
point is a particular training (options, model types, determinism) still
train their own.

Kernels are compiled on their first call, in whichever test reaches them
first, and kept in Numba's on-disk cache: the first run of the suite on a
machine is about a minute slower than the next ones.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from crfkit.io.reader import Sequence, read_sequences
from crfkit.model.model import Model
from tests.helpers import ROOT

ADDRESS_PATTERNS = ROOT / "patterns/address.pat"


def write_sequences(path: Path, sequences: list[Sequence]) -> Path:
    """A column file (one space between columns) holding ``sequences``."""
    path.write_text("".join("\n".join(" ".join(row) for row in seq.rows) + "\n\n"
                            for seq in sequences), encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def address_sample(tmp_path_factory) -> dict[str, Path]:
    """The shipped address corpus cut small: ``train`` (200 sequences) and ``test`` (100)."""
    tmp = tmp_path_factory.mktemp("address")
    train = list(read_sequences(ROOT / "data/address-train.txt"))[:200]
    test = list(read_sequences(ROOT / "data/address-test.txt"))[:100]
    return {"train": write_sequences(tmp / "train.txt", train),
            "test": write_sequences(tmp / "test.txt", test)}


@pytest.fixture(scope="session")
def address_model(address_sample, tmp_path_factory) -> Model:
    """One CRF of the address sample (address.pat, 5 L-BFGS iterations), trained once.

    Read-only: tests that change a model work on a copy (``Model.from_bytes``)
    or on a copy of :func:`address_model_file`.
    """
    from crfkit.features.patterns import read_patterns
    from crfkit.training.train import TrainOptions, train

    return train(read_patterns(ADDRESS_PATTERNS), read_sequences(address_sample["train"]),
                 TrainOptions(maxiter=5))


@pytest.fixture(scope="session")
def address_model_file(address_model, tmp_path_factory) -> Path:
    """:func:`address_model` saved to a file (do not write to it)."""
    path = tmp_path_factory.mktemp("address-model") / "address.model"
    address_model.save(path)
    return path
