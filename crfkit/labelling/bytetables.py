"""The model's strings and observations as the arrays the byte path's kernels search.

Built once per labelled file from the frozen featurizer (see
:mod:`crfkit.features.bytecells` for how they are searched). Only patterns made
of plain ``%x`` commands (and literal text, which the observation's tuple does not
hold) are covered: any other command needs the token as a Python string.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from crfkit.features.extract import Featurizer, PatternCommands
from crfkit.model.model import Model

ALL_BITS = np.uint64(0xFFFFFFFFFFFFFFFF)
# A pattern whose possible tuples are at most this many finds its ids by direct
# addressing (4 MiB of int32 each at most); wider ones are hashed.
DIRECT_CODES = 1 << 20


@dataclass
class ByteTables:
    """The arguments of :func:`crfkit.features.bytecells.window_cells` and
    :func:`~crfkit.features.bytecells.window_observations`, and the label names."""

    table_column: np.ndarray  # int64: the column each string table reads (labels: -1)
    strings: tuple  # (blob, ptr, owner, ids, slots, hashes)
    commands: tuple  # (listed, cmd_ptr, table, offset, absolute, pad_ptr, pad, radix,
    #                   direct_ptr, direct)
    codes: np.ndarray  # int64 (slots, 2): the code table of the patterns hashed
    names: np.ndarray  # uint8: the labels' UTF-8 bytes, one after another
    name_ptr: np.ndarray  # int64: label y is names[name_ptr[y]:name_ptr[y + 1]]
    hash_mask: np.uint64


def plain_cells(featurizer: Featurizer) -> bool:
    """Whether every listed pattern's commands are plain ``%x`` cells, and its tuples'
    mixed-radix codes fit in 62 bits (exact keys: up to four cells of a million-word
    column)."""
    return all(command.letter == "x" and command.regex is None
               for p in featurizer.listed for command in featurizer.patterns[p].commands) \
        and all(_code_space(featurizer, p) < 2.0 ** 62 for p in featurizer.listed)


def _code_space(featurizer: Featurizer, p: int) -> float:
    """How many mixed-radix codes pattern p's tuples have (digit: table id + 1)."""
    return float(np.prod([len(featurizer.tables[t]) + 1.0
                          for t in featurizer.command_transform[p]]))


def byte_tables(model: Model, hash_mask: np.uint64 = ALL_BITS) -> ByteTables:
    """The tables of ``model`` (whose patterns :func:`plain_cells` covers)."""
    from crfkit.features.bytecells import string_table

    featurizer = model.featurizer
    used = sorted({t for p in featurizer.listed for t in featurizer.command_transform[p]})
    local = {t: k for k, t in enumerate(used)}
    # the labels last: their table reads the gold column of -c (column set per file)
    blob, ptr, owner, ids = _string_arrays([featurizer.tables[t].strings for t in used] +
                                           [model.labels])
    strings = (blob, ptr, owner, ids, *string_table(blob, ptr, owner, hash_mask))
    commands = _command_arrays(featurizer, local)
    direct_ptr, direct, codes = _id_tables(featurizer, commands[-1], commands[1], hash_mask)
    encoded = [name.encode("utf-8") for name in model.labels]
    name_ptr = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum([len(b) for b in encoded], out=name_ptr[1:])
    return ByteTables(
        table_column=np.array([featurizer.transforms[t][1] for t in used] + [-1],
                              dtype=np.int64),
        strings=strings, commands=(*commands, direct_ptr, direct), codes=codes,
        names=np.frombuffer(b"".join(encoded), dtype=np.uint8).copy(), name_ptr=name_ptr,
        hash_mask=hash_mask)


def _string_arrays(tables: list[list[str]]) -> tuple[np.ndarray, ...]:
    """Every table's strings as (UTF-8 blob, offsets, table of each, id in its table)."""
    encoded = [s.encode("utf-8") for strings in tables for s in strings]
    ptr = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded)),
              out=ptr[1:])
    owner = np.repeat(np.arange(len(tables), dtype=np.int64), [len(s) for s in tables])
    ids = np.concatenate([np.arange(len(s), dtype=np.int32) for s in tables] +
                         [np.zeros(0, dtype=np.int32)])
    return np.frombuffer(b"".join(encoded), dtype=np.uint8).copy(), ptr, owner, ids


def _command_arrays(featurizer: Featurizer, local: dict[int, int]) -> tuple[np.ndarray, ...]:
    """The listed patterns' commands flattened: (listed, cmd_ptr, table, offset, absolute,
    pad_ptr, pad, radix); the padding ids of command c are pad[pad_ptr[c]:pad_ptr[c + 1]]."""
    every = featurizer.pattern_commands(grow=False)
    cmds: list[PatternCommands] = [every[p] for p in featurizer.listed]
    cmd_ptr = np.zeros(len(cmds) + 1, dtype=np.int64)
    np.cumsum([len(c.offset) for c in cmds], out=cmd_ptr[1:])
    transforms = [int(t) for c in cmds for t in c.transform]
    pads = [row for c in cmds for row in c.pad_ids]
    pad_ptr = np.zeros(len(pads) + 1, dtype=np.int64)
    np.cumsum([len(row) for row in pads], out=pad_ptr[1:])
    return (np.array(featurizer.listed, dtype=np.int64), cmd_ptr,
            np.array([local[t] for t in transforms], dtype=np.int64),
            _joined([c.offset for c in cmds], np.int64),
            _joined([c.absolute for c in cmds], np.bool_), pad_ptr, _joined(pads, np.int64),
            np.array([len(featurizer.tables[t]) + 1 for t in transforms], dtype=np.int64))


def _id_tables(featurizer: Featurizer, radix: np.ndarray, cmd_ptr: np.ndarray,
               hash_mask: np.uint64) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(direct_ptr, direct, code table): a listed pattern j with few codes finds its ids at
    direct[direct_ptr[j] + code], the others (direct_ptr -1) in the code table."""
    from crfkit.features.bytecells import code_table

    direct_ptr = np.full(len(cmd_ptr) - 1, -1, dtype=np.int64)
    blocks: list[np.ndarray] = []
    hashed: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    at = 0
    for j, (ids, codes) in enumerate(_observation_codes(featurizer, radix, cmd_ptr)):
        size = float(np.prod(radix[cmd_ptr[j]:cmd_ptr[j + 1]].astype(np.float64)))
        if size <= DIRECT_CODES:
            blocks.append(np.full(int(size), -1, dtype=np.int32))
            blocks[-1][codes] = ids
            direct_ptr[j] = at
            at += int(size)
        else:
            hashed.append((codes, np.full(len(ids), j, dtype=np.int64), ids.astype(np.int64)))
    codes, owner, ids = (_joined([h[k] for h in hashed], np.int64) for k in range(3))
    return direct_ptr, _joined(blocks, np.int32), code_table(codes, owner, ids, hash_mask)


def _joined(arrays: list[np.ndarray], dtype) -> np.ndarray:
    return np.concatenate(arrays + [np.zeros(0, dtype=dtype)]).astype(dtype)


def _observation_codes(featurizer: Featurizer, radix: np.ndarray, cmd_ptr: np.ndarray
                       ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """For each listed pattern: its observations' ids and the mixed-radix codes of their
    tuples (digit: table id + 1), as :func:`crfkit.features.bytecells.window_observations`
    computes them."""
    vocab = featurizer.vocab
    value_ptr = np.zeros(len(vocab) + 1, dtype=np.int64)
    np.cumsum(featurizer.n_commands[vocab.pattern], out=value_ptr[1:])
    values = vocab.values
    for j, p in enumerate(featurizer.listed):
        ids = np.flatnonzero(vocab.pattern == p)
        codes = np.zeros(len(ids), dtype=np.int64)
        for c in range(cmd_ptr[j], cmd_ptr[j + 1]):
            codes = codes * radix[c] + values[value_ptr[ids] + c - cmd_ptr[j]] + 1
        yield ids, codes
