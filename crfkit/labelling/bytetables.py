"""The model's strings and observations as the arrays the byte path's kernels search.

Built once per labelled file from the frozen featurizer (see
:mod:`crfkit.features.bytecells` for how they are searched). Only patterns made
of plain ``%x`` commands (and literal text, which the observation's tuple does not
hold) are covered: any other command needs the token as a Python string.
"""

from __future__ import annotations

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
    observations: tuple  # (pattern, values, value_ptr, slots, hashes)
    names: np.ndarray  # uint8: the labels' UTF-8 bytes, one after another
    name_ptr: np.ndarray  # int64: label y is names[name_ptr[y]:name_ptr[y + 1]]
    hash_mask: np.uint64


def plain_cells(featurizer: Featurizer) -> bool:
    """Whether every listed pattern's commands are plain ``%x`` cells."""
    return all(command.letter == "x" and command.regex is None
               for p in featurizer.listed for command in featurizer.patterns[p].commands)


def byte_tables(model: Model, hash_mask: np.uint64 = ALL_BITS) -> ByteTables:
    """The tables of ``model`` (whose patterns :func:`plain_cells` covers)."""
    from crfkit.features.bytecells import observation_table, string_table

    featurizer = model.featurizer
    used = sorted({t for p in featurizer.listed for t in featurizer.command_transform[p]})
    local = {t: k for k, t in enumerate(used)}
    # the labels last: their table reads the gold column of -c (column set per file)
    blob, ptr, owner, ids = _string_arrays([featurizer.tables[t].strings for t in used] +
                                           [model.labels])
    strings = (blob, ptr, owner, ids, *string_table(blob, ptr, owner, hash_mask))
    commands, hashed = _command_arrays(featurizer, local)
    vocab = featurizer.vocab
    widths = featurizer.n_commands
    value_ptr = np.zeros(len(vocab) + 1, dtype=np.int64)
    np.cumsum(widths[vocab.pattern], out=value_ptr[1:])
    kept = np.flatnonzero(np.isin(vocab.pattern, hashed)).astype(np.int64)
    values = vocab.values
    observations = (vocab.pattern, values, value_ptr,
                    *observation_table(kept, vocab.pattern, values, value_ptr, widths,
                                       hash_mask))
    encoded = [name.encode("utf-8") for name in model.labels]
    name_ptr = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum([len(b) for b in encoded], out=name_ptr[1:])
    return ByteTables(
        table_column=np.array([featurizer.transforms[t][1] for t in used] + [-1],
                              dtype=np.int64),
        strings=strings, commands=commands, observations=observations,
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


def _command_arrays(featurizer: Featurizer, local: dict[int, int]) -> tuple[tuple, list[int]]:
    """The listed patterns' commands flattened (padding ids, radixes, direct tables), and
    the patterns whose ids are hashed."""
    all_commands = featurizer.pattern_commands(grow=False)
    listed = np.array(featurizer.listed, dtype=np.int64)
    cmds: list[PatternCommands] = [all_commands[p] for p in featurizer.listed]
    cmd_ptr = np.zeros(len(cmds) + 1, dtype=np.int64)
    np.cumsum([len(c.offset) for c in cmds], out=cmd_ptr[1:])
    table = np.array([local[int(t)] for c in cmds for t in c.transform], dtype=np.int64)
    sizes = np.array([len(featurizer.tables[int(t)]) + 1 for c in cmds for t in c.transform],
                     dtype=np.int64)
    pads = [row for c in cmds for row in c.pad_ids]
    pad_ptr = np.zeros(len(pads) + 1, dtype=np.int64)
    np.cumsum([len(row) for row in pads], out=pad_ptr[1:])
    pad = np.concatenate(pads + [np.zeros(0, dtype=np.int32)]).astype(np.int64)
    direct_ptr = np.full(len(cmds), -1, dtype=np.int64)
    blocks, hashed, at = [], [], 0
    for j, p in enumerate(featurizer.listed):
        radix = sizes[cmd_ptr[j]:cmd_ptr[j + 1]]
        if float(np.prod(radix.astype(np.float64))) <= DIRECT_CODES:
            blocks.append(_direct_block(featurizer, p, radix))
            direct_ptr[j] = at
            at += len(blocks[-1])
        else:
            hashed.append(p)
    offset = np.concatenate([c.offset for c in cmds] + [np.zeros(0, np.int64)])
    absolute = np.concatenate([c.absolute for c in cmds] + [np.zeros(0, np.bool_)])
    direct = np.concatenate(blocks + [np.zeros(0, dtype=np.int32)])
    return (listed, cmd_ptr, table, offset.astype(np.int64), absolute.astype(np.bool_),
            pad_ptr, pad, sizes, direct_ptr, direct), hashed


def _direct_block(featurizer: Featurizer, p: int, radix: np.ndarray) -> np.ndarray:
    """Pattern p's id of every mixed-radix code (digit: table id + 1), -1 if none."""
    vocab = featurizer.vocab
    ids = np.flatnonzero(vocab.pattern == p)
    width = len(radix)
    block = np.full(int(np.prod(radix)), -1, dtype=np.int32)
    if not len(ids):
        return block
    starts = np.concatenate([[0], np.cumsum(featurizer.n_commands[vocab.pattern])])
    rows = vocab.values[starts[ids][:, None] + np.arange(width)].astype(np.int64)
    code = np.zeros(len(ids), dtype=np.int64)
    for c in range(width):
        code = code * radix[c] + rows[:, c] + 1
    block[code] = ids
    return block
