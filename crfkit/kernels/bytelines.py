"""Lines and fields of a column file's bytes, and the labelled lines written back as bytes.

The byte path of ``crfkit label`` (:mod:`crfkit.labelling.bytepath`) reads a file
as one array of bytes. These kernels split it as :class:`crfkit.io.reader.BlockParser`
splits decoded text, byte for byte: a line of only spaces and tabs is blank; with
``auto`` runs of spaces and tabs separate fields and edge ones are dropped, with
``space`` only spaces do (a tab is a token character), with ``tab`` every single
tab does and fields are kept verbatim. The caller has made sure the bytes hold no
carriage return, no document marker and valid UTF-8, whose multi-byte characters
never contain these ASCII bytes, so splitting bytes is splitting characters.

An output line is the token's fields joined by the output separator (the line as
today's reader normalises it), the separator and the label; a blank line follows
every sequence.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from crfkit.config import JIT

MODES = {"auto": 0, "space": 1, "tab": 2}
_TAB, _SPACE, _NEWLINE = 9, 32, 10


@njit(**JIT)
def _separates(byte, mode):
    if mode == 2:
        return byte == _TAB
    return byte == _SPACE or (mode == 0 and byte == _TAB)


@njit(**JIT)
def line_fields(data, a, b, mode, starts, ends, at):
    """The fields of line ``data[a:b]`` stored from index ``at`` (as many as fit); their
    count returned, 0 for a blank line."""
    k = a
    while k < b and (data[k] == _SPACE or data[k] == _TAB):
        k += 1
    if k == b:
        return 0
    n = 0
    room = len(starts) - at
    k = a
    if mode == 2:
        first = a
        for k in range(a, b + 1):
            if k == b or data[k] == _TAB:
                if n < room:
                    starts[at + n] = first
                    ends[at + n] = k
                n += 1
                first = k + 1
        return n
    while True:
        while k < b and _separates(data[k], mode):
            k += 1
        if k >= b:
            return n
        first = k
        while k < b and not _separates(data[k], mode):
            k += 1
        if n < room:
            starts[at + n] = first
            ends[at + n] = k
        n += 1


@njit(**JIT)
def _line_end(data, i, stop):
    while i < stop and data[i] != _NEWLINE:
        i += 1
    return i


@njit(**JIT)
def column_count(data, start, mode):
    """The field count of every token line of ``data[start:]``; -1 if they differ, 0 if
    there is no token line."""
    none = np.empty(0, dtype=np.int64)
    columns = 0
    i = start
    while i < len(data):
        e = _line_end(data, i, len(data))
        c = line_fields(data, i, e, mode, none, none, 0)
        if c:
            if columns == 0:
                columns = c
            elif c != columns:
                return -1
        i = e + 1
    return columns


@njit(**JIT)
def scan_window(data, start, stop, mode, columns):
    """Fields (``starts``/``ends``, ``columns`` a token) and sequence lengths of the lines
    in ``data[start:stop]``, which start and end at sequence boundaries."""
    lines = 1
    for i in range(start, stop):
        if data[i] == _NEWLINE:
            lines += 1
    starts = np.empty(lines * columns, dtype=np.int64)
    ends = np.empty(lines * columns, dtype=np.int64)
    lengths = np.empty(lines, dtype=np.int64)
    t = s = run = 0
    i = start
    while i < stop:
        e = _line_end(data, i, stop)
        if line_fields(data, i, e, mode, starts, ends, t * columns):
            t += 1
            run += 1
        elif run:
            lengths[s] = run
            s += 1
            run = 0
        i = e + 1
    if run:
        lengths[s] = run
        s += 1
    return starts[:t * columns], ends[:t * columns], lengths[:s]


@njit(**JIT)
def write_lines(data, starts, ends, columns, lengths, path, names, name_ptr, sep,
                labels_only):
    """The output bytes of a window (module docstring)."""
    n = len(path)
    size = len(lengths)
    for t in range(n):
        size += name_ptr[path[t] + 1] - name_ptr[path[t]] + 1
        if not labels_only:
            size += columns
            for c in range(columns):
                size += ends[t * columns + c] - starts[t * columns + c]
    out = np.empty(size, dtype=np.uint8)
    at = 0
    t = 0
    for s in range(len(lengths)):
        for _ in range(lengths[s]):
            if not labels_only:
                for c in range(columns):
                    for k in range(starts[t * columns + c], ends[t * columns + c]):
                        out[at] = data[k]
                        at += 1
                    out[at] = sep
                    at += 1
            y = path[t]
            a, b = name_ptr[y], name_ptr[y + 1]
            for k in range(a, b):
                out[at] = names[k]
                at += 1
            out[at] = _NEWLINE
            at += 1
            t += 1
        out[at] = _NEWLINE
        at += 1
    return out
