"""The estimator's parameters checked under their own names (``c1 must be >= 0``), as a
ValueError: what scikit-learn's model selection and users' ``except ValueError`` expect,
instead of the command-line flags the engine's own checks would name."""

from __future__ import annotations

import math

# CRFsuite's line-search methods: crfkit's L-BFGS runs its own backtracking line search
# for each, so a grid that passes any of them trains.
LINESEARCH_NAMES = ("MoreThuente", "Backtracking", "StrongBacktracking")

# parameter -> (lowest allowed value, whether that value itself is allowed)
_RANGES = {
    "c1": (0.0, True), "c2": (0.0, True), "max_iterations": (0, True),
    "num_memories": (1, True), "epsilon": (0.0, True), "period": (1, True),
    "delta": (0.0, True), "max_linesearch": (1, True), "min_freq": (0.0, True),
    "c": (0.0, False), "variance": (0.0, False), "gamma": (0.0, False),
}


def check_parameters(crf: object) -> None:
    """Raise ValueError naming the first parameter of ``crf`` that is out of range."""
    for name, (low, inclusive) in _RANGES.items():
        value = getattr(crf, name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or not math.isfinite(value):
            raise ValueError(f"{name} must be a number, got {value!r}")
        if value < low or (value == low and not inclusive):
            relation = ">=" if inclusive else ">"
            raise ValueError(f"{name} must be {relation} {low}, got {value!r}")
    pa_type = crf.pa_type
    if pa_type is not None and pa_type not in (0, 1, 2):
        raise ValueError(f"pa_type must be 0, 1 or 2, got {pa_type!r}")
    linesearch = crf.linesearch
    if linesearch is not None and linesearch not in LINESEARCH_NAMES:
        raise ValueError(f"linesearch must be one of {', '.join(LINESEARCH_NAMES)}, got "
                         f"{linesearch!r}")
