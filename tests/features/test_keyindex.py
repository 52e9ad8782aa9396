"""KeyIndex (labelling's key -> observation id lookup) against a dict."""

from __future__ import annotations

import numpy as np
import pytest

from crfkit.features.keys import KeyIndex, tuple_keys


@pytest.mark.parametrize("n", [0, 1, 2, 7, 1000, 50_000])
def test_find_matches_a_dict(n):
    rng = np.random.default_rng(n)
    keys = np.unique(rng.integers(0, 2**64 - 1, size=n, dtype=np.uint64, endpoint=True))
    keys = rng.permutation(keys)
    index = KeyIndex(keys)
    absent = rng.integers(0, 2**64 - 1, size=500, dtype=np.uint64, endpoint=True)
    queries = np.concatenate([keys, absent, keys[: n // 2]])
    truth = {int(k): i for i, k in enumerate(keys)}
    expected = np.array([truth.get(int(q), -1) for q in queries], dtype=np.int32)
    assert (index.find(queries) == expected).all()


def test_crowded_buckets_and_extreme_keys():
    """Keys sharing their top bits land in one bucket; 0 and 2^64-1 are keys like others."""
    top = np.uint64(0xABCD) << np.uint64(48)
    keys = np.array([0, 2**64 - 1, *[int(top) + i for i in range(40)]], dtype=np.uint64)
    index = KeyIndex(keys)
    assert index.longest >= 40
    assert (index.find(keys) == np.arange(len(keys))).all()
    assert (index.find(np.array([1, int(top) + 40, 2**64 - 2], dtype=np.uint64)) == -1).all()


def test_tuple_keys_differ_by_pattern_and_value():
    rows = np.array([[0, 1], [1, 0], [0, 1], [-1, 5]], dtype=np.int32)
    k0, k1 = tuple_keys(0, rows), tuple_keys(1, rows)
    assert k0[0] == k0[2] and len({*k0.tolist()}) == 3
    assert not set(k0.tolist()) & set(k1.tolist())


@pytest.mark.parametrize("n", [2, 3, 100, 20_000])
def test_repeated_keys_are_detected(n):
    """A key given twice is reported wherever it sits, crowded or not; distinct keys never are."""
    rng = np.random.default_rng(n)
    keys = np.unique(rng.integers(0, 2**64 - 1, size=n, dtype=np.uint64, endpoint=True))
    assert not KeyIndex(keys).repeated
    for twice in (0, len(keys) // 2, len(keys) - 1):
        copied = rng.permutation(np.append(keys, keys[twice]))
        assert KeyIndex(copied).repeated
    top = np.uint64(0xABCD) << np.uint64(48)
    crowded = np.array([int(top) + i for i in range(30)] + [int(top) + 7], dtype=np.uint64)
    assert KeyIndex(crowded).repeated
    assert not KeyIndex(crowded[:-1]).repeated


def test_dropped_vocabulary_keys_are_hashed_again_the_same():
    """Training frees a vocabulary's keys and hashes them again from the values when the
    model is written: the same keys, for patterns of 0, 1 and 2 values."""
    from crfkit.features.patterns import parse_patterns
    from crfkit.training.corpus import encode_training
    from tests.helpers import PATTERNS, random_corpus

    patterns = PATTERNS + parse_patterns("U99:bias\n")
    featurizer = encode_training(patterns, random_corpus(3, n_seqs=30, max_len=6)).featurizer
    vocab = featurizer.vocab
    made = vocab.keys.copy()
    assert {int(featurizer.n_commands[p]) for p in np.unique(vocab.pattern)} == {0, 1, 2}
    vocab.drop_keys(featurizer.n_commands)
    assert vocab._keys is None and vocab._index is None and len(vocab) == len(made)
    np.testing.assert_array_equal(vocab.keys, made)
    assert vocab.lookup(made[::-1].copy(), np.zeros((len(made), 1))).tolist() == \
        list(range(len(made)))[::-1]
