"""Decoding constraints as boolean masks: which labels and label pairs a path may use.

Kept apart from :mod:`crfkit.kernels.decoder` (Numba kernels) because the plain
labelling path (:mod:`crfkit.kernels.bestpath`, numpy only) needs them too, and must
not pay Numba's start-up cost to get them. The decoders turn a false entry
into a ``-inf`` score; see the :mod:`crfkit.kernels.decoder` docstring.
"""

from __future__ import annotations

import numpy as np

from crfkit.errors import UsageError

CONSTRAINTS = ("iob",)


def iob_masks(labels: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """IOB2 rules as (start_ok (L,), trans_ok (L, L)) boolean masks.

    Forbidden: ``I-X`` at the start of a sequence, and ``I-X`` after anything
    but ``B-X`` or ``I-X`` (so ``O -> I-X``, ``B-X -> I-Y``, ``I-X -> I-Y``).
    Untyped ``B`` and ``I`` (CRF++'s base-NP example) are chunks of one
    unnamed type, as conlleval reads them. Other labels are refused: guessing
    what ``E-X`` or ``NP`` should allow would silently decode nonsense.
    """
    types = []
    for name in labels:
        if name in ("O", "B", "I"):
            types.append((name, ""))
        elif name[:2] in ("B-", "I-") and len(name) > 2:
            types.append((name[0], name[2:]))
        else:
            raise UsageError(f"--constraints iob: label {name!r} is not IOB2 "
                             f"(expected O, B, I, B-TYPE or I-TYPE)")
    L = len(labels)
    start_ok = np.array([prefix != "I" for prefix, _ in types], dtype=np.bool_)
    trans_ok = np.ones((L, L), dtype=np.bool_)
    for b, (prefix_b, type_b) in enumerate(types):
        if prefix_b != "I":
            continue
        for a, (prefix_a, type_a) in enumerate(types):
            trans_ok[a, b] = prefix_a in ("B", "I") and type_a == type_b
    return start_ok, trans_ok


def constraint_masks(labels: list[str], constraints: str | None
                     ) -> tuple[np.ndarray | None, np.ndarray | None]:
    """(start_ok, trans_ok) of a named constraint set; (None, None) for no constraints."""
    if constraints is None:
        return None, None
    if constraints == "iob":
        return iob_masks(labels)
    raise UsageError(f"unknown constraints {constraints!r} (expected one of: "
                     f"{', '.join(CONSTRAINTS)})")
