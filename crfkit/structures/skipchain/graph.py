"""Documents and skip edges: the graph of a skip-chain CRF.

**Documents.** A document is the run of sequences between two ``-DOCSTART-``
lines, or lines matching ``--doc-sep REGEX`` (the reader's
:class:`~crfkit.io.reader.DocStart` items); a file without markers has one
document per sequence (so no skip edge leaves a sentence).

**Skip patterns.** A pattern line of kind ``s`` (or ``S``) defines the *key*
of a position; positions of one document with the same key (and the same skip
pattern) are joined by skip edges. Its commands are those of any pattern, and
a position has a key only if every command has a value there: inside the
sequence, ``%t``/``%T`` true, ``%m``/``%M``/``%x``/``%X`` not empty. So

    s:cap=%t[-1,0,"."]%m[0,0,"^\\u.*"]

keys every capitalised word that does not start its sentence (``%t`` of the
padding before a sentence is false) by the word itself (``%m`` of a word that
does not start with an upper-case letter is empty). The key is the tuple of
the command values; the pattern's text is only its name. Each skip pattern has
its own ``L x L`` block of label-pair weights (earlier end's label, later
end's label).

**Conditioned skip features.** A pattern line of kind ``e`` is an
observation of the *ends* of skip edges (Sutton and McCallum's endpoint
disjunction): its value at either end of an edge (padding included, as for
any pattern) gives the edge one more ``L x L`` block of label-pair weights,
that of the observation ``SKIP | VALUE`` (``SKIP`` the skip pattern's text),
so a model can trust some edges more than others. So

    e:init=%t[-1,0,"."]
    e:pos=%x[0,1]

let a sentence-initial end (``e:init=false``) or a part of speech weaken or
strengthen an edge. An edge's score is the sum of its blocks: its skip
pattern's, then its observations' (each once, whether one end or both has
it). The observations are those of the training edges, in the order first
seen (kept in the model, ``info.skip.conditions``); an unknown one is left
out when labelling.

**Edges.** ``mode="next"`` joins each occurrence to the next one of its key
(a path per key), ``"all"`` joins every pair (a clique per key), ``"first"``
joins every later occurrence to the first one (a star per key: the first,
usually fullest, mention reaches each later one in one step). At most
``cap`` edges per document are kept, the shortest (in tokens) first, so a
very frequent key cannot make a document dense.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from crfkit.features.extract import Featurizer
from crfkit.features.patterns import Pattern
from crfkit.features.strings import intern_column
from crfkit.features.transforms import transform_values
from crfkit.io.reader import Sequence
from crfkit.structures.skipchain.options import SkipOptions

NO_VALUE = {"t": "false", "T": "false"}  # the value that means "no key"; else ""


# The ``graph`` argument of the skip-chain kernels: :class:`SkipGraph`'s arrays, by name.
GraphArrays = NamedTuple("GraphArrays", [(name, np.ndarray) for name in (
    "doc_ptr", "edge_ptr", "e_i", "e_j", "e_pat", "inc_ptr", "inc_edge", "inc_side")])


@dataclass
class SkipGraph:
    """Documents and skip edges of a corpus, as the kernels take them (all int64).

    ``doc_ptr[d]:doc_ptr[d+1]``: the sequences of document d; ``edge_ptr`` its
    edges, joining tokens ``e_i < e_j`` under skip pattern ``e_pat``;
    ``inc_ptr[t]:inc_ptr[t+1]`` index ``inc_edge``/``inc_side`` (0: t is the edge's
    earlier end) for every edge of token t.
    """

    doc_ptr: np.ndarray
    edge_ptr: np.ndarray
    e_i: np.ndarray
    e_j: np.ndarray
    e_pat: np.ndarray
    inc_ptr: np.ndarray
    inc_edge: np.ndarray
    inc_side: np.ndarray

    @property
    def n_edges(self) -> int:
        return len(self.e_i)

    @property
    def n_docs(self) -> int:
        return len(self.doc_ptr) - 1

    eb_ptr: np.ndarray | None = None  # edge e's weight blocks: eb_blk[eb_ptr[e]:eb_ptr[e+1]]
    eb_blk: np.ndarray | None = None  # (None: each edge has its skip pattern's block only)
    conditions: list[str] = field(default_factory=list)  # blocks after the patterns' (e:)

    def arrays(self) -> GraphArrays:
        return GraphArrays(*(getattr(self, name) for name in GraphArrays._fields))

    def blocks(self) -> tuple[np.ndarray, np.ndarray]:
        """``(eb_ptr, eb_blk)``: the weight blocks of every edge, as the kernels take them."""
        if self.eb_ptr is None or self.eb_blk is None:
            return np.arange(self.n_edges + 1, dtype=np.int64), self.e_pat
        return self.eb_ptr, self.eb_blk

    def pair_counts(self, labels: np.ndarray, n_labels: int, n_skip: int) -> np.ndarray:
        """Gold label-pair counts of every weight block (the empirical counts); ``n_skip``
        the number of blocks."""
        L = n_labels
        eb_ptr, eb_blk = self.blocks()
        edge = np.repeat(np.arange(self.n_edges), np.diff(eb_ptr))
        code = (eb_blk * L + labels[self.e_i[edge]]) * L + labels[self.e_j[edge]]
        return np.bincount(code, minlength=n_skip * L * L).astype(np.float64)


def skip_patterns(patterns: list[Pattern]) -> list[Pattern]:
    """The skip-edge patterns (kind ``s``) among ``patterns``, in file order."""
    return [p for p in patterns if p.kind == "s"]


def edge_patterns(patterns: list[Pattern]) -> list[Pattern]:
    """The skip-edge observation patterns (kind ``e``) among ``patterns``, in file order."""
    return [p for p in patterns if p.kind == "e"]


def doc_pointer(starts: list[int], n_seqs: int) -> np.ndarray:
    """``doc_ptr`` from the first sequence of every document."""
    return np.array(list(starts) + [n_seqs], dtype=np.int64)


def position_keys(pattern: Pattern, rows: list[list[str]], seq_ptr: np.ndarray,
                  columns: dict) -> np.ndarray:
    """Key id of every token under one skip pattern (-1: no key), ids dense per call.

    ``columns`` caches :func:`intern_column` per column across patterns.
    """
    n = len(rows)
    if not n or not pattern.commands:
        return np.full(n, -1, dtype=np.int64)
    lengths = np.diff(seq_ptr)
    start = np.repeat(seq_ptr[:-1], lengths)
    index = np.arange(n, dtype=np.int64) - start
    length = np.repeat(lengths, lengths)
    valid = np.ones(n, dtype=bool)
    codes = []
    for command in pattern.commands:
        if command.column not in columns:
            columns[command.column] = intern_column(rows, command.column)
        ids, distinct = columns[command.column]
        values = transform_values(command.transform, distinct)
        empty = NO_VALUE.get(command.letter, "")
        bad = np.fromiter((v == empty for v in values), dtype=bool, count=len(values))
        if command.absolute:
            where = (np.full(n, command.offset - 1) if command.offset > 0
                     else length + command.offset)
        else:
            where = index + command.offset
        inside = (where >= 0) & (where < length)
        value = ids[start + np.where(inside, where, 0)]
        valid &= inside & ~bad[value]
        # values are compared as strings: the transform's values, not the token ids
        _, value_code = np.unique(np.array(values, dtype=object), return_inverse=True)
        codes.append(value_code.reshape(-1)[value])
    stacked = np.stack(codes, axis=1)
    _, key = np.unique(stacked, axis=0, return_inverse=True)
    return np.where(valid, key.reshape(-1), -1).astype(np.int64)


def build_graph(sequences: list[Sequence], starts: list[int], patterns: list[Pattern],
                options: SkipOptions, conditions: list[str] | None = None) -> SkipGraph:
    """The documents and skip edges of ``sequences`` under the skip ``patterns``, the
    edges conditioned by the ``e`` patterns: on the observations ``conditions`` (a
    model's), or on all those found (training: ``None``)."""
    lengths = np.fromiter((len(s.rows) for s in sequences), dtype=np.int64,
                          count=len(sequences))
    seq_ptr = np.zeros(len(sequences) + 1, dtype=np.int64)
    np.cumsum(lengths, out=seq_ptr[1:])
    doc_ptr = doc_pointer(starts, len(sequences))
    doc_of_seq = np.repeat(np.arange(len(doc_ptr) - 1), np.diff(doc_ptr))
    doc_of_tok = np.repeat(doc_of_seq, lengths)
    rows = [row for seq in sequences for row in seq.rows]
    columns: dict = {}
    found_i, found_j, found_p = [], [], []
    for p, pattern in enumerate(skip_patterns(patterns)):
        key = position_keys(pattern, rows, seq_ptr, columns)
        tok = np.flatnonzero(key >= 0)
        order = np.lexsort((tok, key[tok], doc_of_tok[tok]))  # by document, key, position
        tok = tok[order]
        group = np.stack([doc_of_tok[tok], key[tok]], axis=1)
        i, j = _pairs(tok, group, options.mode)
        found_i.append(i)
        found_j.append(j)
        found_p.append(np.full(len(i), p, dtype=np.int64))
    e_i = np.concatenate(found_i) if found_i else np.zeros(0, dtype=np.int64)
    e_j = np.concatenate(found_j) if found_j else np.zeros(0, dtype=np.int64)
    e_pat = np.concatenate(found_p) if found_p else np.zeros(0, dtype=np.int64)
    e_doc = doc_of_tok[e_i] if len(e_i) else e_i
    # the cap: per document, the shortest edges first
    order = np.lexsort((e_pat, e_j, e_i, e_j - e_i, e_doc))
    e_i, e_j, e_pat, e_doc = e_i[order], e_j[order], e_pat[order], e_doc[order]
    first_of_doc = np.searchsorted(e_doc, e_doc, side="left")
    keep = (np.arange(len(e_doc)) - first_of_doc) < options.cap
    e_i, e_j, e_pat = e_i[keep], e_j[keep], e_pat[keep]
    graph = graph_from_edges(doc_ptr, seq_ptr, e_i, e_j, e_pat)
    if edge_patterns(patterns):
        condition_edges(graph, sequences, patterns, conditions)
    return graph


def condition_edges(graph: SkipGraph, sequences: list[Sequence], patterns: list[Pattern],
                    conditions: list[str] | None) -> None:
    """Give every edge of ``graph`` its weight blocks (module docstring): its skip
    pattern's, then those of the ``e`` observations at its ends, in block order."""
    skips, observers = skip_patterns(patterns), edge_patterns(patterns)
    grow = conditions is None
    found = [] if conditions is None else list(conditions)
    index = {c: k for k, c in enumerate(found)}
    ends = np.unique(np.concatenate([graph.e_i, graph.e_j]))
    texts = observations_at(sequences, observers, ends)
    values = {t: [text[n] for text in texts] for n, t in enumerate(ends.tolist())}
    eb_ptr = np.zeros(graph.n_edges + 1, dtype=np.int64)
    eb_blk: list[int] = []
    for e, (i, j, p) in enumerate(zip(graph.e_i.tolist(), graph.e_j.tolist(),
                                      graph.e_pat.tolist(), strict=True)):
        blocks = set()
        for value in values[i] + values[j]:
            name = f"{skips[p].text} | {value}"
            if name not in index and grow:
                index[name] = len(found)
                found.append(name)
            if name in index:
                blocks.add(len(skips) + index[name])
        eb_blk.append(p)
        eb_blk.extend(sorted(blocks))
        eb_ptr[e + 1] = len(eb_blk)
    graph.eb_ptr = eb_ptr
    graph.eb_blk = np.array(eb_blk, dtype=np.int64)
    graph.conditions = found


def observations_at(sequences: list[Sequence], observers: list[Pattern],
                    tokens: np.ndarray) -> list[list[str]]:
    """Each pattern's observation text at the given tokens (corpus-wide indices), as
    :func:`crfkit.features.explain.apply_pattern` writes it, from the vectorised
    extractor: every transform applied once per distinct value, padding included."""
    if not len(tokens) or not observers:
        return [[] for _ in observers]
    featurizer = Featurizer(observers)
    _, components = featurizer.components(sequences, grow=True)  # grown: no unseen value
    tables = [np.array(table.strings, dtype=object) for table in featurizer.tables]
    texts = []
    for p, pattern in enumerate(observers):
        rows = components.rows(p)[tokens]
        text = np.full(len(tokens), pattern.literals[0], dtype=object)
        for j, t in enumerate(featurizer.command_transform[p]):
            text = text + tables[t][rows[:, j]] + pattern.literals[j + 1]
        texts.append(text.tolist())
    return texts


def graph_from_edges(doc_ptr: np.ndarray, seq_ptr: np.ndarray, e_i: np.ndarray,
                     e_j: np.ndarray, e_pat: np.ndarray) -> SkipGraph:
    """The graph of given skip edges (``e_i < e_j``, both in one document of ``doc_ptr``)."""
    e_i, e_j, e_pat = (np.asarray(a, dtype=np.int64) for a in (e_i, e_j, e_pat))
    if (e_i >= e_j).any():
        raise ValueError("a skip edge must join an earlier token to a later one")
    n_tok = int(seq_ptr[-1])
    lengths = np.diff(seq_ptr)
    doc_of_seq = np.repeat(np.arange(len(doc_ptr) - 1), np.diff(doc_ptr))
    doc_of_tok = np.repeat(doc_of_seq, lengths)
    if len(e_i) and (doc_of_tok[e_i] != doc_of_tok[e_j]).any():
        raise ValueError("a skip edge must join tokens of one document")
    order = np.lexsort((e_pat, e_j, e_i))  # by position (documents are contiguous)
    e_i, e_j, e_pat = e_i[order], e_j[order], e_pat[order]
    e_doc = doc_of_tok[e_i]
    n_docs = len(doc_ptr) - 1
    edge_ptr = np.zeros(n_docs + 1, dtype=np.int64)
    np.cumsum(np.bincount(e_doc, minlength=n_docs), out=edge_ptr[1:])
    ends = np.concatenate([e_i, e_j])
    sides = np.concatenate([np.zeros(len(e_i), dtype=np.int64), np.ones(len(e_j), np.int64)])
    edges = np.concatenate([np.arange(len(e_i)), np.arange(len(e_j))]).astype(np.int64)
    by_token = np.lexsort((sides, edges, ends))
    inc_ptr = np.zeros(n_tok + 1, dtype=np.int64)
    np.cumsum(np.bincount(ends, minlength=n_tok), out=inc_ptr[1:])
    return SkipGraph(np.asarray(doc_ptr, dtype=np.int64), edge_ptr, e_i, e_j, e_pat, inc_ptr,
                     edges[by_token], sides[by_token])


def _pairs(tok: np.ndarray, group: np.ndarray, mode: str) -> tuple[np.ndarray, np.ndarray]:
    """Edges between tokens of the same group (tokens sorted by group, then position)."""
    if len(tok) < 2:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    same = (group[1:] == group[:-1]).all(axis=1)
    if mode == "next":
        return tok[:-1][same], tok[1:][same]
    if mode == "first":
        run = np.cumsum(np.concatenate([[0], ~same]))  # the group of each token
        first = np.flatnonzero(np.concatenate([[True], ~same]))
        later = np.flatnonzero(np.concatenate([[False], same]))
        return tok[first[run[later]]], tok[later]
    bounds = np.flatnonzero(np.concatenate([[True], ~same, [True]]))
    firsts, seconds = [], []
    for a, b in zip(bounds[:-1], bounds[1:], strict=True):
        if b - a > 1:
            ia, ja = np.triu_indices(int(b - a), k=1)
            firsts.append(tok[a + ia])
            seconds.append(tok[a + ja])
    if not firsts:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    return np.concatenate(firsts), np.concatenate(seconds)
