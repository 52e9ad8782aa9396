"""Partial labels: how a training file says "one of these labels" or "any label".

A gold label column may hold ``?`` (any label: the annotator left the token out) or
``A|B`` (one of the labels listed, e.g. a dictionary match that is ``B-PER`` or
``B-ORG``). Training sums over every label sequence the annotation allows (Tsuboi et
al. 2008); scoring leaves such tokens out or counts them, as the user chooses. This
module is the one place that spells the notation, for the readers of every format.
"""

from __future__ import annotations

ANY = "?"
SEPARATOR = "|"


def is_partial(label: str) -> bool:
    """Whether a gold label is a set (``?`` or ``A|B``) rather than one label."""
    return label == ANY or SEPARATOR in label


def members(label: str) -> tuple[str, ...] | None:
    """The labels a gold label allows: None for ``?`` (every label), else the listed ones
    (one label: a tuple of one). Empty members (``A||B``, ``A|``) are a ValueError."""
    if label == ANY:
        return None
    parts = tuple(label.split(SEPARATOR))
    if any(not p for p in parts):
        raise ValueError(f"the label set {label!r} has an empty member")
    return parts


def spell(allowed: object) -> str:
    """The column text of a Python label set: None -> ``?``; a str stays as it is; a set,
    frozenset, list or tuple of labels -> ``A|B`` (sorted: the same set, the same text)."""
    if allowed is None:
        return ANY
    if isinstance(allowed, str):
        return allowed
    labels = sorted(str(a) for a in allowed)  # type: ignore[attr-defined]
    if not labels:
        raise ValueError("an empty label set allows no label")
    return SEPARATOR.join(labels)
