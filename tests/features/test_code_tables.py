"""Labelling looks small value spaces up by code: a kept table of every code's id."""

from __future__ import annotations

import numpy as np
import pytest

from crfkit.features import extract
from crfkit.features.extract import Featurizer
from crfkit.features.keys import KeyIndex
from crfkit.features.patterns import parse_patterns
from crfkit.io.reader import Sequence

PATTERNS = "u:w=%x[0,0]\nu:p=%x[-1,1]/%x[0,1]\n"
WORDS = [["the", "DT"], ["dog", "NN"], ["ran", "VBD"], ["a", "DT"], ["cat", "NN"]]


def by_hash(featurizer: Featurizer, components) -> np.ndarray:
    """Every token's ids by hashing its tuple (no code table)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(extract, "_CODE_SLOTS_PER_TOKEN", 0)
        patch.setattr(extract, "_CODE_MIN_SLOTS", 0)
        return featurizer.observations(components)


def test_kept_tables_give_the_hashed_ids_and_follow_the_vocabulary(monkeypatch):
    rng = np.random.default_rng(0)
    sequences = [Sequence([WORDS[i] for i in rng.integers(0, 5, 6)], list(range(1, 7)))
                 for _ in range(20)]
    featurizer = Featurizer(parse_patterns(PATTERNS))
    _, grown = featurizer.components(sequences, grow=True)
    trained = featurizer.build_vocab(grown)
    _, frozen = featurizer.components(sequences, grow=False)
    lookups = []
    find = KeyIndex.find
    monkeypatch.setattr(KeyIndex, "find", lambda self, keys: lookups.append(len(keys))
                        or find(self, keys))
    first = featurizer.observations(frozen)
    assert len(lookups) == 2  # one table per pattern, every code of it
    second = featurizer.observations(frozen)
    assert len(lookups) == 2  # kept: nothing looked up again
    assert (first == trained).all() and (second == trained).all()

    keep = np.arange(len(featurizer.vocab)) % 2 == 0
    featurizer.vocab = featurizer.vocab.subset(keep, featurizer.n_commands)
    renumbered = featurizer.observations(frozen)
    assert len(lookups) == 4  # another vocabulary: the tables are built again
    assert (renumbered == by_hash(featurizer, frozen)).all()
    assert (renumbered != first).any() and (renumbered == -1).any()
