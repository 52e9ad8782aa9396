"""The attribute encoder's inline path for flat dicts gives what the general path gives.

:meth:`crfkit.attributes.encoder.AttributeEncoder.add` reads flat dicts of strings, bools
and
the number 1 inline (the sklearn-crfsuite tutorial's features) and everything else
through :func:`crfkit.attributes.encoder.item_attributes`; both must give the same ids,
values
and token boundaries, whatever the order in which the kinds come.
"""

from __future__ import annotations

import numpy as np
import pytest

from crfkit.attributes.encoder import AttributeEncoder, item_attributes
from crfkit.errors import InputError

MIXED = [
    [{"w": "the", "bias": 1.0, "one": 1, "t": True, "f": False},
     {b"bk": "v", b"bb": True, "w": b"dog"}],
    [{"w": "the", "half": 0.5, "t": True},  # a value != 1: values start mid-corpus
     ["w:the", "s"], {}],
    [{"w": "cat", "n": {"k": "v", "z": 3.0}, "l": ["p", "q"], "np": np.float64(1.0)},
     {"w": "the", "zero": 0.0, "i": 2, "nb": False}],
]


def general(sequences, vocab: dict[str, int], *, grow: bool):
    """The reference: every item through item_attributes and add_pairs."""
    encoder = AttributeEncoder(vocab, grow=grow)
    for xseq in sequences:
        encoder.end(encoder.add_pairs(item_attributes(item) for item in xseq))
    return encoder.dataset()


def inline(sequences, vocab: dict[str, int], *, grow: bool):
    encoder = AttributeEncoder(vocab, grow=grow)
    for xseq in sequences:
        encoder.add(xseq)
    return encoder.dataset()


@pytest.mark.parametrize("order", [[0, 1, 2], [2, 0, 1], [0, 2]])
def test_inline_path_equals_the_general_path(order):
    sequences = [MIXED[i] for i in order]
    vocab_ref: dict[str, int] = {}
    vocab: dict[str, int] = {}
    ref = general(sequences, vocab_ref, grow=True)
    got = inline(sequences, vocab, grow=True)
    assert vocab == vocab_ref
    assert got.tok_ptr.tolist() == ref.tok_ptr.tolist()
    assert got.tok_obs.tolist() == ref.tok_obs.tolist()
    assert (got.tok_val is None) == (ref.tok_val is None)
    if ref.tok_val is not None:
        assert got.tok_val.tolist() == ref.tok_val.tolist()
    # labelling: unknown attributes dropped the same way, the vocabulary unchanged
    known = dict(vocab)
    unseen = [[{"w": "new", "t": True, "bias": 1.0, "u": False}, {"w": "the", "new": 1}]]
    got = inline(unseen + sequences, vocab, grow=False)
    ref = general(unseen + sequences, dict(known), grow=False)
    assert vocab == known
    assert got.tok_ptr.tolist() == ref.tok_ptr.tolist()
    assert got.tok_obs.tolist() == ref.tok_obs.tolist()


def test_inline_path_names_and_values():
    vocab: dict[str, int] = {}
    data = inline([MIXED[0]], vocab, grow=True)
    assert list(vocab) == ["w:the", "bias", "one", "t", "bk:v", "bb", "w:dog"]
    assert data.tok_ptr.tolist() == [0, 4, 7] and data.tok_val is None


def test_inline_path_refuses_bad_values():
    for item in ({"w": float("nan")}, {"w": object()}, {3: "x"}):
        with pytest.raises(InputError):
            inline([[item]], {}, grow=True)
