"""Attribute tokens to the kernels' lists: names to observation ids, values to ``tok_val``.

Each token is a list of ``(attribute name, value)`` pairs
(:mod:`crfkit.attributes.attribute_model` says how they become a model). Values equal
to 1 everywhere leave ``tok_val`` out; an occurrence of value 0 is left out of the
lists and, in training, kept aside (``Dataset.zero_occ``).

The flattening of python-crfsuite's item forms (:func:`item_attributes`):

* ``{name: str}`` and ``{name: bytes}`` -> ``name:value`` with value 1 (python-crfsuite
  joins them with a colon);
* ``{name: number or bool}`` -> ``name`` with that value (False is 0);
* ``{name: dict | list | set}`` -> each inner attribute prefixed ``name:``;
* a list (set, tuple) of strings -> each string with value 1;
* a 2-D numpy array per sequence (tokens x columns), alone or as the second
  member of a ``(items, array)`` pair: column ``j`` is attribute ``#j``.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator

import numpy as np

from crfkit.errors import InputError
from crfkit.space import Dataset


def item_attributes(item, prefix: str = "") -> Iterator[tuple[str, float]]:
    """The ``(name, value)`` pairs of one token in any python-crfsuite form (module
    docstring); ``prefix`` is prepended to every name (nested dicts)."""
    if isinstance(item, dict):
        for key, value in item.items():
            name = prefix + _text(key)
            if isinstance(value, str):
                yield name + ":" + value, 1.0
            elif isinstance(value, bytes):
                yield name + ":" + _text(value), 1.0
            elif isinstance(value, (dict, list, set, tuple)):
                yield from item_attributes(value, name + ":")
            else:
                yield name, _number(value, name)
    elif isinstance(item, (str, bytes)):
        raise InputError(f"a token's features must be a dict or a list of strings, got the "
                         f"string {_text(item)!r}")
    else:
        for key in item:
            yield prefix + _text(key), 1.0


def _text(value) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "surrogateescape")
    if isinstance(value, str):
        return value
    raise InputError(f"a feature name must be a string, got {value!r}")


def _number(value, name: str) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise InputError(f"feature {name!r} has value {value!r}: expected a string, a "
                         f"number, a bool, a dict or a list") from None
    if not np.isfinite(number):
        raise InputError(f"feature {name!r} has value {number}: values must be finite")
    return number


def dense_name(column: int) -> str:
    """The attribute name of column ``column`` of a numpy array of features."""
    return f"#{column}"


class AttributeEncoder:
    """Turns sequences of token items into a :class:`Dataset` under a vocabulary.

    ``grow``: unknown attributes join the vocabulary (training); otherwise they
    are dropped (labelling). Occurrences are kept in compact arrays while the
    sequences stream in (a generator is read once); :meth:`dataset` builds the
    kernels' arrays in one pass at the end.
    """

    def __init__(self, vocab: dict[str, int], *, grow: bool) -> None:
        self.vocab = vocab
        self.grow = grow
        self.obs = array("i")
        self.val: array | None = None  # until a value differs from 1
        self.sparse_counts = array("i")  # per token
        self.dense: list[tuple[int, np.ndarray]] = []  # (first token, array) per sequence
        self.lengths = array("q")
        # occurrences of value 0 (training): token, and the name's index in zero_names
        self.zero_tok, self.zero_obs = array("q"), array("i")
        self.zero_names: dict[str, int] = {}

    def add(self, xseq) -> int:
        """Encode one sequence; returns its length."""
        items, matrix = xseq, None
        if isinstance(xseq, np.ndarray):
            items, matrix = None, xseq
        elif isinstance(xseq, tuple) and len(xseq) == 2 and isinstance(xseq[1], np.ndarray):
            items, matrix = xseq
        n = 0
        if items is not None:
            n = self._add_items(items)
        if matrix is not None:
            n = self._add_matrix(matrix, n, items is not None)
        self.lengths.append(n)
        return n

    def add_pairs(self, tokens: Iterable[Iterable[tuple[str, float]]]) -> int:
        """Encode the ``(name, value)`` pairs of each token of a sequence (without ending
        the sequence: :meth:`add` does, and :meth:`end` after this alone)."""
        n = 0
        for pairs in tokens:
            before = len(self.obs)
            for name, value in pairs:
                self._put(name, value)
            self.sparse_counts.append(len(self.obs) - before)
            n += 1
        return n

    def _add_items(self, items) -> int:
        """:meth:`add_pairs` of the items' attributes, with the common case inline: a dict
        with string keys whose values are strings, bools or the number 1 (the tutorial's
        features; ~4x faster than through :func:`item_attributes`). Anything else takes
        the general path, one key at a time."""
        vocab, obs, grow, put = self.vocab, self.obs, self.grow, self._put
        counts, val = self.sparse_counts, self.val  # val: reloaded after each put()
        n = 0
        for item in items:
            before = len(obs)
            if type(item) is not dict:
                for name, value in item_attributes(item):
                    put(name, value)
                val = self.val
            else:
                for key, value in item.items():
                    kind = type(value)
                    if type(key) is not str:
                        name = None
                    elif kind is str:
                        name = key + ":" + value
                    elif kind is bool or ((kind is float or kind is int) and value == 1):
                        if not value:  # False: left out of the lists (module docstring)
                            self._zero(key)
                            continue
                        name = key
                    else:
                        name = None
                    if name is None:
                        for name, number in item_attributes({key: value}):
                            put(name, number)
                        val = self.val
                        continue
                    i = vocab.get(name)
                    if i is None:
                        if not grow:
                            continue
                        i = vocab[name] = len(vocab)
                    obs.append(i)
                    if val is not None:
                        val.append(1.0)
            counts.append(len(obs) - before)
            n += 1
        return n

    def _zero(self, name: str) -> None:
        """An occurrence of value 0 at the current token: recorded when training, for the
        attribute's features (an attribute never seen with another value gets none)."""
        if self.grow:
            i = self.zero_names.setdefault(name, len(self.zero_names))
            self.zero_tok.append(len(self.sparse_counts))
            self.zero_obs.append(i)

    def _put(self, name: str, value: float) -> None:
        """One occurrence; values are stored only once one differs from 1."""
        if value == 0.0:  # scores nothing (module docstring)
            self._zero(name)
            return
        i = self.vocab.get(name)
        if i is None:
            if not self.grow:
                return
            i = self.vocab[name] = len(self.vocab)
        if value != 1.0 and self.val is None:
            self.val = array("d", [1.0]) * len(self.obs)
        self.obs.append(i)
        if self.val is not None:
            self.val.append(value)

    def end(self, n: int) -> None:
        """End a sequence of ``n`` tokens encoded with :meth:`add_pairs`."""
        self.lengths.append(n)

    def _add_matrix(self, matrix: np.ndarray, n: int, with_items: bool) -> int:
        if matrix.ndim != 2:
            raise InputError(f"a sequence's feature array must be 2-D (tokens x features), "
                             f"got {matrix.ndim}-D")
        if with_items and len(matrix) != n:
            raise InputError(f"a sequence has {n} feature dicts but {len(matrix)} rows of "
                             f"its feature array")
        if not np.isfinite(matrix).all():
            raise InputError("a sequence's feature array holds NaN or infinite values")
        first = len(self.sparse_counts) - (n if with_items else 0)
        if not with_items:
            self.sparse_counts.extend([0] * len(matrix))
        for j in range(matrix.shape[1]):
            name = dense_name(j)
            if name not in self.vocab and self.grow:
                self.vocab[name] = len(self.vocab)
        self.dense.append((first, matrix))
        return len(matrix)

    def dataset(self, labels: np.ndarray | None = None) -> Dataset:
        """The encoded sequences as kernel arrays (labels: gold ids, or none)."""
        seq_ptr = np.zeros(len(self.lengths) + 1, dtype=np.int64)
        np.cumsum(np.frombuffer(self.lengths, dtype=np.int64), out=seq_ptr[1:])
        sparse = np.frombuffer(self.sparse_counts, dtype=np.int32).astype(np.int64)
        counts = sparse.copy()
        dense_ids = []
        for first, matrix in self.dense:
            ids = np.array([self.vocab.get(dense_name(j), -1) for j in range(matrix.shape[1])],
                           dtype=np.int32)
            dense_ids.append(ids)
            counts[first:first + len(matrix)] += int((ids >= 0).sum())
        tok_ptr = np.zeros(len(counts) + 1, dtype=np.int64)
        np.cumsum(counts, out=tok_ptr[1:])
        n_occ = int(tok_ptr[-1])
        if not self.dense:  # occurrences are already in token order (no copy: the arrays
            tok_obs = np.frombuffer(self.obs, dtype=np.int32)  # keep the buffers alive)
            tok_val = None if self.val is None else np.frombuffer(self.val, dtype=np.float64)
        else:
            tok_obs = np.empty(n_occ, dtype=np.int32)
            tok_val = np.empty(n_occ, dtype=np.float64)
            self._scatter(tok_ptr, sparse, dense_ids, tok_obs, tok_val)
        zero_occ = self._zero_occurrences()
        self.obs, self.val, self.dense = array("i"), None, []
        y = np.empty(0, dtype=np.int32) if labels is None else labels
        return Dataset(seq_ptr=seq_ptr, tok_ptr=tok_ptr, tok_obs=tok_obs, labels=y,
                       tok_val=tok_val, zero_occ=zero_occ)

    def _zero_occurrences(self) -> np.ndarray | None:
        """(token, observation) of the value-0 occurrences of attributes in the vocabulary."""
        ids = np.array([self.vocab.get(name, -1) for name in self.zero_names], dtype=np.int64)
        tok = np.frombuffer(self.zero_tok, dtype=np.int64)
        obs = ids[np.frombuffer(self.zero_obs, dtype=np.int32)] if len(tok) else ids[:0]
        self.zero_tok, self.zero_obs, self.zero_names = array("q"), array("i"), {}
        known = obs >= 0
        return np.column_stack([tok[known], obs[known]]) if known.any() else None

    def _scatter(self, tok_ptr: np.ndarray, sparse: np.ndarray, dense_ids: list[np.ndarray],
                 tok_obs: np.ndarray, tok_val: np.ndarray) -> None:
        """Each token's item attributes first, then its array columns."""
        if len(self.obs):
            sparse_ptr = np.zeros(len(sparse) + 1, dtype=np.int64)
            np.cumsum(sparse, out=sparse_ptr[1:])
            shift = np.repeat(tok_ptr[:-1] - sparse_ptr[:-1], sparse)
            where = np.arange(int(sparse_ptr[-1]), dtype=np.int64) + shift
            tok_obs[where] = np.frombuffer(self.obs, dtype=np.int32)
            tok_val[where] = 1.0 if self.val is None else np.frombuffer(self.val,
                                                                         dtype=np.float64)
        for (first, matrix), ids in zip(self.dense, dense_ids, strict=True):
            known = np.flatnonzero(ids >= 0)
            n = len(matrix)
            start = tok_ptr[first:first + n] + sparse[first:first + n]
            where = start[:, None] + np.arange(len(known))
            tok_obs[where] = ids[known]
            tok_val[where] = matrix[:, known]
