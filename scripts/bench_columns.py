"""Column files for ``scripts/bench.py``, and the derived columns that give CRF++
the values of ``%X``, ``%t`` and ``%m`` commands.

CRF++ templates read ``%x`` only. A pattern that case-folds or tests a token
reaches CRF++ as a ``%x`` of an extra column holding that value for every
token, inserted before the label. Each value is written with a leading ``=``:
a column field cannot be empty (``%m`` without a match is), and the prefix
keeps every value distinct from CRF++'s padding (``_B-1``), so CRF++ sees
exactly as many distinct observations as crfkit does. The transform is
crfkit's own (:func:`crfkit.features.transforms.transform_values`).
Stdlib only at import: the crfsuite child processes read files with it too.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator

Rows = list[list[str]]
DERIVED_PREFIX = "="


def read_column_file(path: str | os.PathLike) -> Iterator[Rows]:
    """Sequences of a column file: rows of whitespace-separated fields, blank line between."""
    rows: Rows = []
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            fields = line.split()
            if fields:
                rows.append(fields)
            elif rows:
                yield rows
                rows = []
    if rows:
        yield rows


def write_column_file(path: str | os.PathLike, sequences: Iterable[Rows]) -> None:
    with open(path, "w", encoding="utf-8") as out:
        for rows in sequences:
            out.write("".join(" ".join(row) + "\n" for row in rows))
            out.write("\n")


def _tables(transforms: list[tuple], path: str | os.PathLike) -> list[dict[str, str]]:
    """For each transform, its value of every distinct token of its column in ``path``."""
    from crfkit.features.transforms import transform_values

    distinct: dict[int, set[str]] = {t[1]: set() for t in transforms}
    for rows in read_column_file(path):
        for column, seen in distinct.items():
            seen.update(row[column] for row in rows)
    tables = []
    for transform in transforms:
        tokens = sorted(distinct[transform[1]])
        values = transform_values(transform, tokens)
        tables.append({t: DERIVED_PREFIX + v for t, v in zip(tokens, values, strict=True)})
    return tables


def write_derived(transforms: list[tuple], source: str | os.PathLike,
                  dest: str | os.PathLike) -> None:
    """``source`` with one column per transform inserted before the last (the label)."""
    tables = _tables(transforms, source)

    def extended() -> Iterator[Rows]:
        for rows in read_column_file(source):
            yield [[*row[:-1], *(table[row[t[1]]] for t, table in zip(transforms, tables,
                                                                      strict=True)), row[-1]]
                   for row in rows]

    write_column_file(dest, extended())
