"""A window's observation ids straight from its cell bytes.

The labeller's numpy path interns each column's strings with Python dictionaries,
then looks observations up by their tuple of string-table ids
(:mod:`crfkit.features.extract`). Here the same two steps run compiled, on the
bytes of the cells (:mod:`crfkit.kernels.bytelines` finds them):

1. a cell's bytes are hashed and found in an open-addressing table of the model's
   strings (every table a ``%x`` command reads); a hash hit counts only once the
   bytes are compared equal, so a collision can never give a wrong id;
2. a pattern's observation is the tuple of its commands' ids (padding ids outside the
   sequence, exactly :class:`~crfkit.features.extract.PatternCommands`' ones). A pattern
   whose possible tuples are few (a word, a tag trigram) finds its id in a direct
   table indexed by the tuple's mixed-radix code; the others hash the tuple and
   compare it, on a hit, with the observation's own values in the vocabulary.

A token's ids come out in the order of the listed patterns, unseen ones dropped,
as :func:`crfkit.features.extract.token_lists` gives them, so the decoder adds the
same weights in the same order. ``hash_mask`` ands every hash (all bits in use;
tests pass 0 to make every key collide).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from crfkit.config import JIT
from crfkit.features.intern import command_position, mix

_FNV = np.uint64(0x100000001B3)
# The per-token helpers are inlined into the window loops: a call would pass (and
# reference-count) every array of the tables' tuples.
INLINE = {**JIT, "inline": "always"}


@njit(**INLINE)
def bytes_hash(data, a, b, seed, hash_mask):
    """Hash of ``data[a:b]`` in string table ``seed``."""
    h = mix(np.uint64(seed + 1))
    for k in range(a, b):
        h = (h ^ np.uint64(data[k])) * _FNV
    return mix(h) & hash_mask


@njit(**JIT)
def _table_size(n):
    size = 2
    while size < 2 * n:
        size *= 2
    return size


@njit(**JIT)
def _place(slots, hashes, h, entry):
    """Put ``entry`` at the first free slot from its hash's home."""
    pos = _home(slots, h)
    while slots[pos] >= 0:
        pos = (pos + 1) & (len(slots) - 1)
    slots[pos] = entry
    hashes[pos] = h


@njit(**JIT)
def string_table(blob, ptr, owner, hash_mask):
    """(slots, their hashes) of the strings ``blob[ptr[e]:ptr[e + 1]]``, string e of
    table ``owner[e]``."""
    n = len(ptr) - 1
    size = _table_size(n)
    slots = np.full(size, -1, dtype=np.int32)
    hashes = np.zeros(size, dtype=np.uint64)
    for e in range(n):
        _place(slots, hashes, bytes_hash(blob, ptr[e], ptr[e + 1], owner[e], hash_mask), e)
    return slots, hashes


@njit(**INLINE)
def _home(slots, h):
    return np.int64(h & np.uint64(len(slots) - 1))


@njit(**INLINE)
def _candidate(slots, hashes, h, pos):
    """From slot ``pos`` on, the first slot whose entry has hash ``h``; -1 once an empty
    slot is reached (the entry is not in the table)."""
    while slots[pos] >= 0:
        if hashes[pos] == h:
            return pos
        pos = (pos + 1) & (len(slots) - 1)
    return -1


@njit(**INLINE)
def same_bytes(x, xa, xb, y, ya, yb):
    """Whether bytes x[xa:xb] equal y[ya:yb]."""
    if xb - xa != yb - ya:
        return False
    for k in range(xb - xa):
        if x[xa + k] != y[ya + k]:
            return False
    return True


@njit(**JIT)
def code_table(codes, owner, ids, hash_mask):
    """Rows (code, owner << 32 | id) of the observations ``ids``, each the tuple of
    mixed-radix ``code`` of listed pattern ``owner``; (-1, -1) rows are free."""
    rows = np.full((_table_size(len(ids)), 2), -1, dtype=np.int64)
    mask = len(rows) - 1
    for e in range(len(ids)):
        pos = np.int64(code_hash(codes[e], owner[e], hash_mask) & np.uint64(mask))
        while rows[pos, 1] >= 0:
            pos = (pos + 1) & mask
        rows[pos, 0] = codes[e]
        rows[pos, 1] = (owner[e] << 32) | ids[e]
    return rows


@njit(**INLINE)
def code_hash(code, owner, hash_mask):
    return mix(np.uint64(code) ^ mix(np.uint64(owner + 1))) & hash_mask


@njit(**INLINE)
def find_code(code, owner, rows, hash_mask):
    """Id of listed pattern ``owner``'s tuple of ``code`` (-1: unseen). The code is the
    tuple itself, so equal codes are the same observation."""
    mask = len(rows) - 1
    pos = np.int64(code_hash(code, owner, hash_mask) & np.uint64(mask))
    while rows[pos, 1] >= 0:
        if rows[pos, 0] == code and rows[pos, 1] >> 32 == owner:
            return rows[pos, 1] & 0xFFFFFFFF
        pos = (pos + 1) & mask
    return -1


@njit(**JIT)
def window_cells(data, starts, ends, columns, table_column, strings, hash_mask):
    """(tables, tokens) ids of every token's cell in each string table's column (-1 all
    along for a table whose column is -1).

    A column's cells are hashed first, then looked up, the lookup written out here:
    the processor then overlaps the table reads of successive cells (the table is
    larger than the fastest caches), which a loop over bytes of varying length or the
    reference counting of an inlined helper's array arguments held back."""
    blob, ptr, owner, ids, slots, hashes = strings
    n = len(starts) // columns
    cells = np.full((len(table_column), n), -1, dtype=np.int32)
    hashed = np.empty(n, dtype=np.uint64)
    for k in range(len(table_column)):
        c = table_column[k]
        if c < 0:
            continue
        for t in range(n):
            f = t * columns + c
            hashed[t] = bytes_hash(data, starts[f], ends[f], k, hash_mask)
        for t in range(n):
            f = t * columns + c
            h = hashed[t]
            found = -1
            pos = _candidate(slots, hashes, h, _home(slots, h))
            while pos >= 0:  # a hash hit counts once the bytes compare equal
                e = slots[pos]
                if owner[e] == k and same_bytes(data, starts[f], ends[f], blob, ptr[e],
                                                ptr[e + 1]):
                    found = ids[e]
                    break
                pos = _candidate(slots, hashes, h, (pos + 1) & (len(slots) - 1))
            cells[k, t] = found
    return cells


@njit(**JIT)
def window_observations(cells, lengths, commands, codes, hash_mask):
    """(tok_ptr, tok_obs) of a window from its cells; ``commands`` is (listed, cmd_ptr,
    table, offset, absolute, pad_ptr, pad, radix, direct_ptr, direct), ``codes`` the
    :func:`code_table` of the patterns without a direct table.

    A pattern's observation is the mixed-radix code of its commands' values (digit:
    value + 1; none if a value is unseen). A token at least ``reach`` tokens from both
    ends of its sequence reads every relative command inside the sequence (and there
    are no absolute ones): it skips the padding's tests."""
    listed, cmd_ptr, table, offset, absolute, pad_ptr, pad, radix, direct_ptr, direct = commands
    n = cells.shape[1]
    tok_ptr = np.zeros(n + 1, dtype=np.int64)
    tok_obs = np.empty(n * len(listed), dtype=np.int32)
    reach = 0
    for c in range(len(offset)):
        reach = max(reach, abs(offset[c]))
        if absolute[c]:
            reach = n  # no token is that far from both ends
    m = 0
    t0 = 0
    for s in range(len(lengths)):
        T = lengths[s]
        for i in range(T):
            inside = reach <= i < T - reach
            for j in range(len(listed)):
                code = 0
                for c in range(cmd_ptr[j], cmd_ptr[j + 1]):
                    if inside:
                        v = cells[table[c], t0 + i + offset[c]]
                    else:
                        p, outside = command_position(offset[c], absolute[c], i, T)
                        v = pad[pad_ptr[c] + outside] if outside else cells[table[c], t0 + p]
                    if v < 0:
                        code = -1
                        break
                    code = code * radix[c] + v + 1
                if code < 0:
                    continue
                if direct_ptr[j] >= 0:
                    o = direct[direct_ptr[j] + code]
                else:
                    o = find_code(code, j, codes, hash_mask)
                if o >= 0:
                    tok_obs[m] = o
                    m += 1
            tok_ptr[t0 + i + 1] = m
        t0 += T
    return tok_ptr, tok_obs[:m].copy()
