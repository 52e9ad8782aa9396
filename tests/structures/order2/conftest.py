"""The training corpus the second-order tests share."""

from __future__ import annotations

import pytest

from crfkit.io.reader import Sequence, read_sequences
from tests.helpers import ROOT


@pytest.fixture(scope="module")
def corpus() -> list[Sequence]:
    """The first 80 sequences of the address sample."""
    return list(read_sequences(ROOT / "data/address-train.txt"))[:80]
