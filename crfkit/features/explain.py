"""The pattern explainer: what each pattern compiles to and generates, slowly and plainly.

:func:`apply_pattern` is the obviously-correct reference the vectorised
extractor (:mod:`crfkit.features.extract`) is tested against; ``crfkit
patterns`` prints :func:`describe_patterns` and :func:`explain_sequence`.
"""

from __future__ import annotations

import json

from crfkit.features.patterns import Pattern
from crfkit.features.transforms import transform_value


def apply_pattern(pattern: Pattern, rows: list[list[str]], i: int) -> str:
    """Observation string of ``pattern`` at token ``i`` (slow, obviously correct).

    The vectorised extractor is tested against this; ``crfkit patterns`` uses
    it to show users what their patterns produce.
    """
    values = []
    for command in pattern.commands:
        p = command.position(i, len(rows))
        if 0 <= p < len(rows):
            values.append(transform_value(command.transform, rows[p][command.column]))
        else:
            distance = p if p < 0 else p - len(rows) + 1
            values.append(transform_value(command.transform, None, padding=distance))
    return pattern.render(values)


_CONSTANT_MEANING = {
    "u": "a label bias (one weight per label)",
    "b": "label transitions only",
    "*": "a label bias and label transitions",
    "t": "label-trigram weights only (second-order models)",
}


def describe_patterns(patterns: list[Pattern]) -> list[str]:
    """How each pattern compiled, for ``crfkit patterns``: kind, name, literals, commands."""
    out = []
    for number, pattern in enumerate(patterns, start=1):
        literals = " ".join(json.dumps(literal, ensure_ascii=False)
                            for literal in pattern.literals)
        out.append(f"pattern {number}, line {pattern.line}: {pattern.text}")
        out.append(f"  kind {pattern.kind} ({pattern.kind_name}), name "
                   f"{json.dumps(pattern.name, ensure_ascii=False)}, literals {literals}")
        if pattern.is_constant and not pattern.value:
            out.append(f"  no command: {_CONSTANT_MEANING[pattern.kind]}")
        for j, command in enumerate(pattern.commands, start=1):
            out.append(f"  {j}. {command.describe()}")
        if pattern.value:
            out.append(f"  value: {pattern.value.describe()}")
    return out


def explain_sequence(patterns: list[Pattern], rows: list[list[str]],
                     lines: list[int] | None = None) -> list[str]:
    """The observation every pattern generates at every position of one sequence.

    Each position is a header (position, source line, columns) followed by
    one line per pattern: its line in the pattern file, its kind and the
    observation string (computed by :func:`apply_pattern`).
    """
    width = max(len(str(p.line)) for p in patterns) if patterns else 1
    out = []
    for i, row in enumerate(rows):
        where = f", line {lines[i]}" if lines else ""
        out.append(f"position {i + 1}{where}: " + " ".join(row))
        for pattern in patterns:
            note = ""
            if i == 0 and pattern.kind == "b":
                note = "   (unused here: no previous label)"
            elif i < 2 and pattern.kind == "t":
                note = "   (unused here: fewer than two previous labels)"
            out.append(f"  {pattern.line:>{width}} {pattern.kind} "
                       f"{apply_pattern(pattern, rows, i)}{note}")
    return out
