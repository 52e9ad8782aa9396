"""Patterns x sequences -> observation ids, vectorised over a whole batch.

No string is built per feature occurrence. Instead:

1. each column of the batch is interned once (token string -> column id);
2. each *transform* (``%x``/``%X``/``%t``/``%m`` of a column, see
   :mod:`crfkit.transforms`) is applied once per distinct token and its
   results interned into a :class:`StringTable`;
3. a command at an offset is then an integer gather with numpy, padding
   positions taking the id of their padding value;
4. a pattern's observation is the tuple of its command values, hashed into a
   64-bit key that the :class:`ObservationVocab` maps to a dense id.

Observation strings exist only for the vocabulary (model file, ``dump``).
Hash collisions between distinct tuples are checked for when the vocabulary
is built, so a training corpus can never merge two observations silently.
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Sequence as Seq
from dataclasses import dataclass

import numpy as np

from crfkit import keytable
from crfkit.patterns import Pattern
from crfkit.reader import Sequence
from crfkit.transforms import padding_result, transform_values


class StringTable:
    """Interns strings to dense ids (0, 1, ...); unseen strings map to -1 when frozen."""

    def __init__(self, strings: Iterable[str] = ()) -> None:
        self.strings: list[str] = list(strings)
        self.index: dict[str, int] = {s: i for i, s in enumerate(self.strings)}

    def __len__(self) -> int:
        return len(self.strings)

    def lookup(self, values: Seq[str], *, grow: bool) -> np.ndarray:
        index = self.index
        if grow:
            strings = self.strings
            out = []
            for value in values:
                i = index.get(value)
                if i is None:
                    i = index[value] = len(strings)
                    strings.append(value)
                out.append(i)
        else:
            out = [index.get(value, -1) for value in values]
        return np.fromiter(out, dtype=np.int32, count=len(values))


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


class ObservationVocab:
    """Observation ids: 64-bit keys plus what is needed to print each observation.

    ``values`` holds, per observation in id order, the table ids of its
    command values (``pattern_commands[pattern[i]]`` of them).
    """

    def __init__(self, keys: np.ndarray, pattern: np.ndarray, values: np.ndarray) -> None:
        self.keys = np.ascontiguousarray(keys, dtype=np.uint64)
        self.pattern = np.ascontiguousarray(pattern, dtype=np.int32)
        self.values = np.ascontiguousarray(values, dtype=np.int32)
        self._table: tuple[np.ndarray, np.ndarray] | None = None

    def __len__(self) -> int:
        return len(self.keys)

    def lookup(self, keys: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Ids of ``keys`` (int32); -1 where a key is unknown or its ``rows`` hold a -1."""
        if self._table is None:
            self._table = keytable.build_table(self.keys)
        out = np.empty(len(keys), dtype=np.int32)
        keytable.lookup(self._table[0], self._table[1], keys, rows, out)
        return out

    def subset(self, keep: np.ndarray, n_commands: np.ndarray) -> ObservationVocab:
        """A vocabulary with only the observations where ``keep`` is true, renumbered."""
        mask = np.repeat(keep, n_commands[self.pattern])
        return ObservationVocab(self.keys[keep], self.pattern[keep], self.values[mask])


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
        # Patterns that carry only transitions never appear in per-token lists.
        self.listed = [i for i, p in enumerate(patterns) if not (p.is_constant and p.kind == "b")]

    # -- step 1-3: command values -------------------------------------------------
    def components(self, seqs: Seq[Sequence], *, grow: bool) -> tuple[Positions, list[np.ndarray]]:
        """Table ids of every command's value at every token, one matrix per pattern."""
        lengths = np.fromiter((len(s.rows) for s in seqs), dtype=np.int64, count=len(seqs))
        pos = Positions.of(lengths)
        needed_columns = {t[1] for t in self.transforms}
        columns = {c: _intern_column(seqs, c) for c in needed_columns}
        token_values = np.empty((len(self.transforms), int(pos.seq_ptr[-1])), dtype=np.int32)
        for k, (transform, table) in enumerate(zip(self.transforms, self.tables, strict=True)):
            ids, distinct = columns[transform[1]]
            value_ids = table.lookup(transform_values(transform, distinct), grow=grow)
            if len(ids):
                token_values[k] = value_ids[ids]
        result = []
        for pattern, transform_ids in zip(self.patterns, self.command_transform, strict=True):
            commands = pattern.commands
            pad_ids = np.full((len(commands), max([abs(c.offset) for c in commands] + [0]) + 1),
                              -1, dtype=np.int32)
            for j, (command, t) in enumerate(zip(commands, transform_ids, strict=True)):
                before = command.offset < 0
                values = [padding_result(self.transforms[t], -d if before else d)
                          for d in range(1, abs(command.offset) + 1)]
                pad_ids[j, 1:len(values) + 1] = self.tables[t].lookup(values, grow=grow)
            result.append(keytable.gather_commands(
                token_values, np.array(transform_ids, dtype=np.int64),
                np.array([c.offset for c in commands], dtype=np.int64),
                np.array([c.absolute for c in commands], dtype=np.bool_),
                pad_ids, pos.seq_ptr))
        return pos, result

    # -- step 4: observation ids --------------------------------------------------
    def build_vocab(self, components: list[np.ndarray], cutoff: int = 1) -> np.ndarray:
        """Create the vocabulary from a training corpus and return its observation matrix.

        Observations seen fewer than ``cutoff`` times are dropped (-1 in the
        matrix). Ids go to the most frequent observations first, so the
        weights the kernels touch most often share cache lines.
        """
        n_tokens = components[0].shape[0] if components else 0
        keys, first, counts, inverse = [], [], [], []
        for p in self.listed:
            comps = components[p]
            k = keytable.hash_rows(p, comps)
            inv, fst, cnt, clash = keytable.unique_keys(k, keytable.hash_rows(p, comps, 1))
            if clash:
                raise RuntimeError("64-bit observation hash collision; please report it")
            keys.append(k[fst])
            first.append(fst)
            counts.append(cnt)
            inverse.append(inv)
        sizes = np.array([len(k) for k in keys], dtype=np.int64)
        offsets = np.concatenate([[0], np.cumsum(sizes)])
        all_keys = np.concatenate(keys) if keys else np.zeros(0, dtype=np.uint64)
        all_counts = np.concatenate(counts) if counts else np.zeros(0, dtype=np.int64)
        all_first = np.concatenate(first) if first else np.zeros(0, dtype=np.int64)
        owner = np.repeat(np.arange(len(keys)), sizes)
        if len(keytable.unique_keys(all_keys, all_keys)[1]) != len(all_keys):
            raise RuntimeError("64-bit observation hash collision across patterns")

        kept = np.flatnonzero(all_counts >= cutoff)
        order = kept[np.lexsort((all_first[kept], owner[kept], -all_counts[kept]))]
        new_id = np.full(len(all_keys), -1, dtype=np.int32)
        new_id[order] = np.arange(len(order), dtype=np.int32)

        listed = np.array(self.listed, dtype=np.int32)
        pattern = listed[owner[order]]
        widths = self.n_commands[pattern]
        starts = np.concatenate([[0], np.cumsum(widths)])
        values = np.empty(int(starts[-1]), dtype=np.int32)
        obs = np.empty((n_tokens, len(keys)), dtype=np.int32)
        for j, p in enumerate(self.listed):
            local = new_id[offsets[j]:offsets[j + 1]]
            obs[:, j] = local[inverse[j]]
            width = int(self.n_commands[p])
            keep = local >= 0
            if width and keep.any():
                rows = components[p][first[j][keep]]
                where = starts[local[keep]][:, None] + np.arange(width)
                values[where] = rows
        self.vocab = ObservationVocab(all_keys[order], pattern, values)
        return obs

    def observations(self, components: list[np.ndarray]) -> np.ndarray:
        """Observation id of each listed pattern at each token (-1 if unseen).

        Returns an (n_tokens, n_listed) int32 matrix.
        """
        n_tokens = components[0].shape[0] if components else 0
        out = np.empty((n_tokens, len(self.listed)), dtype=np.int32)
        for j, p in enumerate(self.listed):
            comps = components[p]
            out[:, j] = self.vocab.lookup(keytable.hash_rows(p, comps), comps)
        return out

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


def _intern_column(seqs: Seq[Sequence], column: int) -> tuple[np.ndarray, list[str]]:
    """Column ids of every token (int64) and the distinct strings, in order of appearance."""
    values = [row[column] for seq in seqs for row in seq.rows]
    distinct = list(dict.fromkeys(values))
    index = {value: i for i, value in enumerate(distinct)}
    ids = np.fromiter(map(index.__getitem__, values), dtype=np.int64, count=len(values))
    return ids, distinct


