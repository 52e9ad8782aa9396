"""Patterns x sequences -> observation ids, vectorised over a whole batch.

No string is built per feature occurrence. Instead:

1. each column of the batch is interned once (token string -> column id);
2. each *transform* (``%x``/``%X``/``%t``/``%m`` of a column, see
   :mod:`crfkit.features.transforms`) is applied once per distinct token and its
   results interned into a :class:`StringTable`;
3. a command at an offset is then an integer gather, padding positions
   taking the id of their padding value;
4. a pattern's observation is the tuple of its command values. Training
   interns the tuples exactly (:func:`crfkit.features.intern.intern_rows`, Numba);
   each distinct tuple gets a 64-bit key (:func:`tuple_keys`), and labelling
   finds a token's observation by its key in the :class:`ObservationVocab`
   (a batch's distinct tuples once each, where their value space is small).

This module is numpy only, so labelling never imports Numba: only training
(:meth:`Featurizer.build_vocab`) loads the counting kernels. Observation
strings exist only for the vocabulary (model file, ``dump``). Keys are
checked to be distinct when a vocabulary is built or loaded, so two
observations can never merge silently.
"""

from __future__ import annotations

from collections.abc import Sequence as Seq
from dataclasses import dataclass, field

import numpy as np

from crfkit.features.columns import TokenColumns, columns_of
from crfkit.features.keys import tuple_keys
from crfkit.features.patterns import Pattern
from crfkit.features.small_counts import intern_tuples, is_small, renumber_small
from crfkit.features.strings import StringTable
from crfkit.features.transforms import padding_result, transform_values
from crfkit.features.vocab import ObservationVocab
from crfkit.io.reader import Sequence

# Direct addressing while interning pays while the table of all possible
# tuples stays within this many slots per corpus token (and 1M slots at least).
_DIRECT_SLOTS_PER_TOKEN = 8
# Labelling looks tuples up by their mixed-radix code while the table of all
# possible codes stays within this many slots per batch token (or the minimum).
_CODE_SLOTS_PER_TOKEN = 8
_CODE_MIN_SLOTS = 1 << 16


@dataclass
class Positions:
    """Where each token of a batch sits: its sequence start, index and length."""

    seq_ptr: np.ndarray  # int64 (n_seqs + 1,): token offset of each sequence
    start: np.ndarray  # int64 (n_tokens,): offset of the token's sequence
    index: np.ndarray  # int64 (n_tokens,): position inside its sequence
    length: np.ndarray  # int64 (n_tokens,): length of its sequence

    @classmethod
    def of(cls, lengths: np.ndarray) -> Positions:
        seq_ptr = np.zeros(len(lengths) + 1, dtype=np.int64)
        np.cumsum(lengths, out=seq_ptr[1:])
        length = np.repeat(lengths.astype(np.int64), lengths)
        start = np.repeat(seq_ptr[:-1], lengths)
        index = np.arange(seq_ptr[-1], dtype=np.int64) - start
        return cls(seq_ptr, start, index, length)


@dataclass
class PatternCommands:
    """One pattern's commands as arrays: what the gathers need."""

    transform: np.ndarray  # int64 (w,): row of ``Components.token_values``
    offset: np.ndarray  # int64 (w,)
    absolute: np.ndarray  # bool (w,)
    pad_ids: np.ndarray  # int32 (w, max |offset| + 1): padding value d steps out


@dataclass
class Components:
    """A batch ready for observation building: every transform's value at every token."""

    positions: Positions
    token_values: np.ndarray  # int32 (n_transforms, n_tokens); -1: unseen when frozen
    commands: list[PatternCommands]  # per pattern
    # (transform, offset, absolute) -> that command's value at every token: patterns
    # share commands (%x[0,0] in several), so each is gathered once per batch
    _columns: dict = field(default_factory=dict, repr=False)

    def rows(self, p: int) -> np.ndarray:
        """Pattern p's command values at every token: (n_tokens, w) int32 (numpy gather)."""
        cmd = self.commands[p]
        out = np.empty((len(self.positions.index), len(cmd.offset)), dtype=np.int32)
        for j in range(len(cmd.offset)):
            out[:, j] = self._column(int(cmd.transform[j]), int(cmd.offset[j]),
                                     bool(cmd.absolute[j]), cmd.pad_ids[j])
        return out

    def _column(self, transform: int, off: int, absolute: bool, pad_ids: np.ndarray
                ) -> np.ndarray:
        key = (transform, off, absolute)  # the padding values follow from these
        column = self._columns.get(key)
        if column is None:
            pos = self.positions
            if absolute:
                where = np.full_like(pos.index, off - 1) if off > 0 else pos.length + off
            else:
                where = pos.index + off
            inside = (where >= 0) & (where < pos.length)
            values = self.token_values[transform][pos.start + np.where(inside, where, 0)]
            distance = np.where(where < 0, -where, where - pos.length + 1)
            column = np.where(inside, values, pad_ids[np.where(inside, 0, distance)])
            self._columns[key] = column
        return column


class Featurizer:
    """Turns sequences into per-token observation ids for a fixed list of patterns.

    While training (``grow=True``) value tables and the vocabulary grow;
    when labelling they are frozen and unseen observations are dropped.
    """

    def __init__(
        self,
        patterns: list[Pattern],
        tables: list[StringTable] | None = None,
        vocab: ObservationVocab | None = None,
    ) -> None:
        self.patterns = patterns
        self.transforms: list[tuple] = []
        seen: dict[tuple, int] = {}
        self.command_transform: list[tuple[int, ...]] = []
        for pattern in patterns:
            ids = []
            for command in pattern.commands:
                if command.transform not in seen:
                    seen[command.transform] = len(self.transforms)
                    self.transforms.append(command.transform)
                ids.append(seen[command.transform])
            self.command_transform.append(tuple(ids))
        self.n_commands = np.array([len(p.commands) for p in patterns], dtype=np.int64)
        self.tables = tables if tables is not None else [StringTable() for _ in self.transforms]
        empty = np.zeros(0, dtype=np.int64)
        self.vocab = vocab or ObservationVocab(empty.astype(np.uint64), empty, empty)
        # Patterns that carry only transitions never appear in per-token lists, nor do
        # skip-edge patterns (their keys join positions, their e: lines condition the edges:
        # crfkit.structures.skipchain.graph).
        self.listed = [i for i, p in enumerate(patterns)
                       if not (p.is_constant and p.kind in "bt") and p.kind not in "se"]
        # (pattern, table sizes) -> (the vocabulary, the id of every code): see _code_ids
        self._code_tables: dict[tuple[int, bytes], tuple[ObservationVocab, np.ndarray]] = {}

    # -- step 1-3: command values -------------------------------------------------
    def components(self, seqs: Seq[Sequence], *, grow: bool) -> tuple[Positions, Components]:
        """Every transform's value (table id) at every token, and each pattern's commands."""
        return self.components_of(columns_of(seqs, {t[1] for t in self.transforms}), grow=grow)

    def components_of(self, columns: TokenColumns, *, grow: bool
                      ) -> tuple[Positions, Components]:
        """:meth:`components` of a corpus already interned by column
        (:mod:`crfkit.features.columns`), with the columns the transforms read."""
        pos = Positions.of(columns.lengths)
        token_values = np.empty((len(self.transforms), int(pos.seq_ptr[-1])), dtype=np.int32)
        for k, (transform, table) in enumerate(zip(self.transforms, self.tables, strict=True)):
            ids, distinct = columns.ids[transform[1]], columns.distinct[transform[1]]
            value_ids = table.lookup(transform_values(transform, distinct), grow=grow)
            if len(ids):
                token_values[k] = value_ids[ids]
        return pos, Components(pos, token_values, self.pattern_commands(grow=grow))

    def pattern_commands(self, *, grow: bool) -> list[PatternCommands]:
        """Every pattern's commands as arrays, with the table ids of their padding values
        (added to the tables with ``grow``)."""
        commands = []
        for pattern, transform_ids in zip(self.patterns, self.command_transform, strict=True):
            width = max([abs(c.offset) for c in pattern.commands] + [0]) + 1
            pad_ids = np.full((len(transform_ids), width), -1, dtype=np.int32)
            for j, (command, t) in enumerate(zip(pattern.commands, transform_ids, strict=True)):
                sign = -1 if command.offset < 0 else 1
                values = [padding_result(self.transforms[t], sign * d)
                          for d in range(1, abs(command.offset) + 1)]
                pad_ids[j, 1:len(values) + 1] = self.tables[t].lookup(values, grow=grow)
            commands.append(PatternCommands(
                transform=np.array(transform_ids, dtype=np.int64),
                offset=np.array([c.offset for c in pattern.commands], dtype=np.int64),
                absolute=np.array([c.absolute for c in pattern.commands], dtype=np.bool_),
                pad_ids=pad_ids))
        return commands

    # -- step 4: observation ids --------------------------------------------------
    def build_vocab(self, components: Components, cutoff: int = 1) -> np.ndarray:
        """Create the vocabulary from a training corpus and return its observation matrix.

        Observations seen fewer than ``cutoff`` times are dropped (-1 in the
        matrix). Ids go to the most frequent observations first, so the
        weights the kernels touch most often share cache lines.
        """
        obs, rows, counts = self.intern_observations(components)
        new_id, offsets = self.vocab_from_counts(rows, counts, cutoff)
        if is_small(len(obs)):
            renumber_small(obs, new_id, offsets)
        else:
            from crfkit.features.intern import renumber  # Numba: training only

            renumber(obs, new_id, offsets)
        return obs

    def intern_observations(self, components: Components
                            ) -> tuple[np.ndarray, list[np.ndarray], list[np.ndarray]]:
        """Each listed pattern's distinct observations (table-id rows, in order of first
        appearance) and their counts, and the (n_tokens, n_listed) matrix of those
        per-pattern ids: the counting half of :meth:`build_vocab`, which
        :mod:`crfkit.dask` runs on each shard. A small corpus is counted with numpy
        (:mod:`crfkit.features.small_counts`: the same result, nothing to compile)."""
        n_tokens = components.token_values.shape[1]
        if is_small(n_tokens):
            return self._intern_small(components)
        from crfkit.features.intern import intern_rows  # Numba: training only

        sizes = np.array([len(table) for table in self.tables], dtype=np.int64)
        direct_limit = max(1 << 20, _DIRECT_SLOTS_PER_TOKEN * n_tokens)
        # Each pattern's column first holds its own ids (order of first appearance).
        obs = np.empty((n_tokens, len(self.listed)), dtype=np.int32, order="F")
        rows, counts = [], []
        for j, p in enumerate(self.listed):
            cmd = components.commands[p]
            radix = sizes[cmd.transform]
            direct = float(np.prod(radix.astype(np.float64))) <= direct_limit
            distinct, cnt = intern_rows(
                components.token_values, cmd.transform, cmd.offset, cmd.absolute, cmd.pad_ids,
                components.positions.seq_ptr, radix, direct, obs[:, j])
            rows.append(distinct)
            counts.append(cnt)
        return obs, rows, counts

    def _intern_small(self, components: Components
                      ) -> tuple[np.ndarray, list[np.ndarray], list[np.ndarray]]:
        """:meth:`intern_observations` with numpy (:mod:`crfkit.features.small_counts`)."""
        n_tokens = components.token_values.shape[1]
        sizes = np.array([len(table) for table in self.tables], dtype=np.int64)
        obs = np.empty((n_tokens, len(self.listed)), dtype=np.int32, order="F")
        rows, counts = [], []
        for j, p in enumerate(self.listed):
            radix = sizes[components.commands[p].transform]
            distinct, cnt = intern_tuples(components.rows(p), radix, obs[:, j])
            rows.append(distinct)
            counts.append(cnt)
        return obs, rows, counts

    def vocab_from_counts(self, rows: list[np.ndarray], counts: list[np.ndarray],
                          cutoff: int) -> tuple[np.ndarray, np.ndarray]:
        """Set the vocabulary from each listed pattern's distinct rows and counts (in
        order of first appearance): the numbering half of :meth:`build_vocab`. Returns
        the new id of every row, the patterns' rows concatenated (-1: cut off), and where
        each pattern's rows start in that concatenation."""
        sizes = np.array([len(c) for c in counts], dtype=np.int64)
        offsets = np.concatenate([[0], np.cumsum(sizes)])
        all_counts = np.concatenate(counts) if counts else np.zeros(0, dtype=np.int64)
        owner = np.repeat(np.arange(len(counts)), sizes)
        # Within a pattern, ids are in order of first appearance: a stable sort by
        # descending count orders by (count desc, pattern, first appearance).
        # (Counts past 65535 tie: a 16-bit key gets numpy's radix sort.)
        kept = np.flatnonzero(all_counts >= cutoff)
        rank = (65535 - np.minimum(all_counts[kept], 65535)).astype(np.uint16)
        order = kept[np.argsort(rank, kind="stable")]
        new_id = np.full(len(all_counts), -1, dtype=np.int32)
        new_id[order] = np.arange(len(order), dtype=np.int32)

        listed = np.array(self.listed, dtype=np.int32)
        pattern = listed[owner[order]]
        widths = self.n_commands[pattern]
        starts = np.concatenate([[0], np.cumsum(widths)])
        values = np.empty(int(starts[-1]), dtype=np.int32)
        keys = np.empty(len(order), dtype=np.uint64)
        for j, p in enumerate(self.listed):
            local = new_id[offsets[j]:offsets[j + 1]]
            keep = local >= 0
            ids = local[keep]
            keys[ids] = tuple_keys(p, rows[j][keep])
            width = int(self.n_commands[p])
            if width:
                values[starts[ids][:, None] + np.arange(width)] = rows[j][keep]
        self.vocab = ObservationVocab(keys, pattern, values)
        if self.vocab.has_repeated_keys():
            raise RuntimeError("64-bit observation key collision; please report it")
        self.vocab.drop_index()
        return new_id, offsets

    def observations(self, components: Components) -> np.ndarray:
        """Observation id of each listed pattern at each token (-1 if unseen).

        Returns an (n_tokens, n_listed) int32 matrix, column-major: it is
        written a pattern at a time.
        """
        n_tokens = components.token_values.shape[1]
        out = np.empty((n_tokens, len(self.listed)), dtype=np.int32, order="F")
        # A command's values are its table's ids or -1 (unseen): table size + 1 of them.
        radix_of = np.array([len(table) + 1 for table in self.tables], dtype=np.int64)
        code_limit = max(_CODE_SLOTS_PER_TOKEN * n_tokens, _CODE_MIN_SLOTS)
        for j, p in enumerate(self.listed):
            rows = components.rows(p)
            radix = radix_of[components.commands[p].transform]
            size = float(np.prod(radix.astype(np.float64)))
            if size <= code_limit:
                whole = size <= _CODE_SLOTS_PER_TOKEN * n_tokens
                out[:, j] = self._lookup_by_code(p, rows, radix, whole)
            else:
                out[:, j] = self.vocab.lookup(tuple_keys(p, rows), rows)
        return out

    def _lookup_by_code(self, p: int, rows: np.ndarray, radix: np.ndarray,
                        whole: bool) -> np.ndarray:
        """Pattern p's ids, looking each distinct tuple up once.

        When all possible tuples are few (a POS trigram, a single word), a
        tuple's mixed-radix code addresses a table directly. With ``whole``
        (a batch at least as large as that table, in slots per token) the ids
        of all codes are looked up once and kept for later batches
        (:meth:`_code_ids`); otherwise the distinct codes of the batch are
        found with a presence array, hashed and looked up. Either way the
        tokens then read their id by code: a batch repeats its tuples many
        times, so this hashes and probes far fewer keys.
        """
        code = np.zeros(len(rows), dtype=np.int64)
        for c in range(rows.shape[1]):
            code *= radix[c]
            code += rows[:, c]
            code += 1
        id_of_code = self._code_ids(p, radix, build=whole)
        if id_of_code is not None:
            return id_of_code[code]
        present = np.zeros(int(np.prod(radix)), dtype=np.bool_)
        present[code] = True
        distinct = np.flatnonzero(present)
        id_of_code = np.empty(len(present), dtype=np.int32)  # read only at the batch's codes
        id_of_code[distinct] = self._code_lookup(p, radix, distinct)
        return id_of_code[code]

    def _code_ids(self, p: int, radix: np.ndarray, *, build: bool) -> np.ndarray | None:
        """The id of every code of pattern p, kept while the vocabulary and the table
        sizes stay; None if not kept and ``build`` is false."""
        key = (p, radix.tobytes())
        kept = self._code_tables.get(key)
        if kept is not None and kept[0] is self.vocab:
            return kept[1]
        if not build:
            return None
        ids = self._code_lookup(p, radix, np.arange(int(np.prod(radix))))
        # tables of another vocabulary are never read again: do not keep it alive
        self._code_tables = {k: v for k, v in self._code_tables.items() if v[0] is self.vocab}
        self._code_tables[key] = (self.vocab, ids)
        return ids

    def _code_lookup(self, p: int, radix: np.ndarray, codes: np.ndarray) -> np.ndarray:
        """Pattern p's ids of mixed-radix ``codes`` (digit d: table id d - 1, or unseen)."""
        tuples = np.empty((len(codes), len(radix)), dtype=np.int32)
        rest = codes
        for c in range(len(radix) - 1, -1, -1):
            rest, digit = np.divmod(rest, radix[c])
            tuples[:, c] = digit - 1
        return self.vocab.lookup(tuple_keys(p, tuples), tuples)

    def observation_strings(self) -> list[str]:
        """Every observation's text, in id order (for dump and debugging).

        Works a pattern at a time: each command column becomes one object
        array of value strings, and the literals are joined around them.
        """
        vocab = self.vocab
        out = np.empty(len(vocab), dtype=object)
        widths = self.n_commands[vocab.pattern]
        starts = np.concatenate([[0], np.cumsum(widths)])
        tables = [np.array(table.strings + [""], dtype=object) for table in self.tables]
        for p, pattern in enumerate(self.patterns):
            ids = np.flatnonzero(vocab.pattern == p)
            if not len(ids):
                continue
            width = len(pattern.commands)
            if width == 0:
                out[ids] = pattern.render([])
                continue
            rows = vocab.values[starts[ids][:, None] + np.arange(width)]
            columns = [tables[t][rows[:, j]] for j, t in enumerate(self.command_transform[p])]
            text = np.full(len(ids), pattern.literals[0], dtype=object)
            for column, literal in zip(columns, pattern.literals[1:], strict=True):
                text = text + column + literal
            out[ids] = text
        return out.tolist()


def token_lists(obs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """CSR form of an (n_tokens, n_patterns) id matrix without its -1 entries."""
    mask = obs >= 0
    ptr = np.zeros(obs.shape[0] + 1, dtype=np.int64)
    np.cumsum(mask.sum(axis=1), out=ptr[1:])
    return ptr, np.ascontiguousarray(obs[mask], dtype=np.int32)

