"""Streaming encoding (crfkit.features.columns): the corpus interned by column while it is
read gives the same ids, vocabulary, feature space and arrays as the sequences held in a
list, keeps no row past its chunk, and refuses bad input at the right line."""

from __future__ import annotations

import weakref

import numpy as np
import pytest

from crfkit.errors import InputError
from crfkit.features.columns import collect_columns, columns_of
from crfkit.features.strings import intern_column
from crfkit.io.reader import Sequence, read_items, read_sequences
from crfkit.training.corpus import encode_training, training_columns
from crfkit.training.train import TrainOptions, train
from tests import naive
from tests.helpers import PATTERNS, random_corpus

# Blank lines at both ends and in a row, -DOCSTART- markers (with and without a blank
# line after them), one-token sequences, a last line without a newline.
EDGE_FILE = """

-DOCSTART- -X- O

a N X
B V Y
-DOCSTART- -X- O
c1 N Z

dd V X


E N Y
a V X
c1 N Z
-DOCSTART- -X- O
dd N Y"""


def _arrays(corpus) -> dict[str, np.ndarray]:
    """Everything the kernels and the model file read of an encoded corpus."""
    d, s, v = corpus.data, corpus.space, corpus.featurizer.vocab
    return {"seq_ptr": d.seq_ptr, "tok_ptr": d.tok_ptr, "tok_obs": d.tok_obs,
            "labels": d.labels, "u_ptr": s.u_ptr, "u_lab": s.u_lab, "b_ptr": s.b_ptr,
            "b_prev": s.b_prev, "b_cur": s.b_cur, "empirical": corpus.empirical,
            "keys": v.keys, "pattern": v.pattern, "values": v.values, "x0": corpus.x0}


def _assert_same_corpus(got, want) -> None:
    for name, array in _arrays(want).items():
        other = _arrays(got)[name]
        assert other.dtype == array.dtype, name
        np.testing.assert_array_equal(other, array, err_msg=name)
    assert got.labels == want.labels
    assert got.n_token_columns == want.n_token_columns
    assert got.space.has_trans == want.space.has_trans
    assert [t.strings for t in got.featurizer.tables] == \
        [t.strings for t in want.featurizer.tables]


@pytest.mark.parametrize("chunk", [1, 2, 5, 1 << 15])
@pytest.mark.parametrize("seed", [0, 1])
def test_collect_numbers_as_intern_column(seed, chunk):
    seqs = random_corpus(seed, n_seqs=9)
    got = collect_columns(iter(seqs), {0, 2, -1}, chunk_tokens=chunk)
    rows = [row for seq in seqs for row in seq.rows]
    assert got.n_columns == 3 and got.first_line == 1
    np.testing.assert_array_equal(got.lengths, [len(s.rows) for s in seqs])
    assert sorted(got.ids) == [0, 2]  # -1 is the label column, 2
    for c in (0, 2):
        ids, distinct = intern_column(rows, c)
        np.testing.assert_array_equal(got.ids[c], ids)
        assert got.distinct[c] == distinct
        assert [got.distinct[c][i] for i in got.ids[c]] == [row[c] for row in rows]


@pytest.mark.parametrize("chunk", [1, 3, 1 << 15])
def test_streamed_corpus_equals_listed_one(tmp_path, chunk):
    path = tmp_path / "edge.txt"
    path.write_text(EDGE_FILE)
    listed = list(read_sequences(path))
    assert [len(s.rows) for s in listed] == [2, 1, 1, 3, 1]
    items = read_items(path, min_columns=2)  # with its DocStart items, as train reads it
    columns = collect_columns((s for s in items if isinstance(s, Sequence)),
                              training_columns(PATTERNS), source=str(path), chunk_tokens=chunk)
    _assert_same_corpus(encode_training(PATTERNS, columns), encode_training(PATTERNS, listed))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_streamed_features_match_reference_strings(seed):
    seqs = random_corpus(seed)
    columns = collect_columns(iter(seqs), training_columns(PATTERNS), chunk_tokens=3)
    corpus = encode_training(PATTERNS, columns)
    rows = [row for seq in seqs for row in seq.rows]
    for g, got, want in naive.token_observations(corpus, seqs):
        assert got == want
        assert corpus.labels[corpus.data.labels[g]] == rows[g][-1]


def test_streamed_warm_start_equals_listed_one():
    """train -m: the model's labels, tables and ids come first, in both paths."""
    first = train(PATTERNS, random_corpus(0), TrainOptions(maxiter=3))
    more = random_corpus(5, n_seqs=8) + [Sequence([["zz", "Q", "W"]], [99])]
    columns = collect_columns(iter(more), training_columns(PATTERNS), chunk_tokens=4)
    got = encode_training(PATTERNS, columns, init=first)
    want = encode_training(PATTERNS, more, init=first)
    _assert_same_corpus(got, want)
    assert got.labels[:len(first.labels)] == first.labels and "W" in got.labels


class _Row(list):
    """A row whose lifetime a test can watch (a list takes no weak reference)."""

    __slots__ = ("__weakref__",)


def test_collect_keeps_no_row_past_its_chunk():
    chunk, alive, most = 4, [], 0

    def stream():
        nonlocal most
        for seq in random_corpus(3, n_seqs=40, max_len=3):
            rows = [_Row(row) for row in seq.rows]
            alive.extend(weakref.ref(row) for row in rows)
            del seq  # rows hold no cycle: reference counting frees them at once
            most = max(most, sum(r() is not None for r in alive))
            yield Sequence(rows, list(range(1, len(rows) + 1)))
            del rows

    got = collect_columns(stream(), {0, -1}, chunk_tokens=chunk)
    assert got.n_tokens > 4 * chunk
    # the pending chunk (under chunk tokens) and the sequence being added
    assert most <= chunk - 1 + 3 + 3
    assert all(r() is None for r in alive)


def test_collect_refuses_a_sequence_with_other_columns():
    seqs = [Sequence([["a", "N", "X"]], [1]), Sequence([["b", "Y"]], [3])]
    with pytest.raises(InputError, match="expected 3 columns, found 2") as err:
        collect_columns(iter(seqs), {0, -1}, source="f.txt")
    assert err.value.path == "f.txt" and err.value.line == 3


def test_streamed_corpus_checks_columns_as_the_list_path():
    one_column = [Sequence([["a"], ["b"]], [4, 5])]
    for given in (one_column, collect_columns(iter(one_column), {-1})):
        with pytest.raises(InputError, match="needs token columns and a label") as err:
            encode_training(PATTERNS, given, source="f.txt")
        assert err.value.line == 4
    with pytest.raises(InputError, match="empty"):
        encode_training(PATTERNS, collect_columns(iter([]), {0, -1}))


def test_columns_of_an_empty_batch():
    empty = columns_of([], {0, 1})
    assert empty.n_seqs == 0 and all(len(empty.ids[c]) == 0 for c in (0, 1))


def test_space_without_bigram_columns_is_what_observed_pairs_gives():
    from crfkit.features.intern import observed_pairs
    from crfkit.space import FeatureSpace

    corpus = encode_training(PATTERNS, random_corpus(4))
    obs = np.array([[0, 1], [2, -1], [1, 1]], dtype=np.int32)
    labels, first = np.array([0, 1, 1]), np.array([True, False, False])
    space, _ = FeatureSpace.from_training(obs, np.array([True, True]), np.array([False, False]),
                                          first, labels, 3, 2, True)
    ptr, codes, counts = observed_pairs(obs, np.zeros(0, dtype=np.int64), labels, first, 3, 2,
                                        True)
    for got, want in ((space.b_ptr, ptr), (space.b_prev, codes // 2), (space.b_cur, codes % 2)):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    assert corpus.space.n_b  # PATTERNS has observation bigrams: the other branch
