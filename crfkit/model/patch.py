"""Set chosen weights of a model from a patch file: ``crfkit update`` (Wapiti's update mode).

A patch line names one feature and its new weight, in the layout ``crfkit dump``
writes (``OBSERVATION<TAB>LABEL or PREV->LABEL<TAB>WEIGHT``) or in Wapiti's
(``OBSERVATION # LABEL WEIGHT`` for a unigram feature, ``OBSERVATION PREV LABEL
WEIGHT`` for a bigram one, separated by spaces or tabs). A whole dump is a
valid patch: its header (the ``# patterns`` and ``# labels`` sections) is
skipped, and so are blank lines and the ``# LABEL`` headings of ``--top``.
The weight replaces the old one, as Wapiti's update does; features that no
line names keep theirs. A feature the model does not have is an error (this
model stores only the features of its space, where Wapiti's has every label
of an observation): patching cannot add features.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from crfkit.errors import CrfkitError
from crfkit.model.describe import ARROW, features
from crfkit.model.model import Model

FEATURES_HEADER = "# features"
HEADER_START = "# patterns"
WAPITI_UNIGRAM = "#"  # Wapiti's previous-label field of a unigram feature


def _feature_index(model: Model) -> dict[tuple[str, str], int]:
    """(observation, target) -> weight index, the target spelt as ``crfkit dump`` spells it."""
    f = features(model)
    names = model.labels
    index: dict[tuple[str, str], int] = {}
    for k, (obs, prev, label) in enumerate(zip(f.observation.tolist(), f.prev.tolist(),
                                               f.label.tolist(), strict=True)):
        target = names[label] if prev < 0 else names[prev] + ARROW + names[label]
        if f.prev2 is not None and f.prev2[k] >= 0:
            target = names[f.prev2[k]] + ARROW + target
        index[(obs, target)] = k
    return index


def _fields(line: str) -> tuple[str, str, str] | None:
    """(observation, target, weight) of a patch line; None if it has neither layout."""
    tabbed = line.split("\t")
    if len(tabbed) == 3:
        return tabbed[0], tabbed[1], tabbed[2].strip()
    tokens = line.split()
    if len(tokens) != 4:
        return None
    obs, prev, label, weight = tokens
    return obs, label if prev == WAPITI_UNIGRAM else prev + ARROW + label, weight


def _patch_lines(lines: Iterable[str]) -> Iterable[tuple[int, str]]:
    """The numbered lines that carry a feature: a dump's header, blank lines and ``# ``
    headings left out."""
    in_header = False
    for number, raw in enumerate(lines, 1):
        line = raw.rstrip("\r\n")
        if line.startswith(HEADER_START) and number == 1:
            in_header = True
        if in_header:
            in_header = not line.startswith(FEATURES_HEADER)
            continue
        if not line.strip() or (line.startswith("# ") and "\t" not in line):
            continue
        yield number, line


def apply_patch(model: Model, lines: Iterable[str], source: str) -> int:
    """Set the weights the patch names (the model gets its own copy of its weights, which
    a loaded model shares read-only with its file); returns how many features it set.
    A bad line raises ``CrfkitError`` naming ``source:line``."""
    index = _feature_index(model)
    changes: dict[int, float] = {}
    for number, line in _patch_lines(lines):
        where = f"{source}:{number}"
        fields = _fields(line)
        if fields is None:
            raise CrfkitError(f"{where}: expected OBSERVATION<TAB>LABEL<TAB>WEIGHT (crfkit "
                              f"dump) or OBSERVATION PREV|# LABEL WEIGHT (Wapiti)")
        obs, target, text = fields
        try:
            weight = float(text)
        except ValueError:
            raise CrfkitError(f"{where}: bad weight {text!r}") from None
        if not math.isfinite(weight):
            raise CrfkitError(f"{where}: the weight must be finite, got {text!r}")
        k = index.get((obs, target))
        if k is None:
            raise CrfkitError(f"{where}: the model has no feature {obs!r} x {target!r}")
        changes[k] = weight
    if changes:
        model.weights = model.weights.copy()
        keys = np.fromiter(changes.keys(), dtype=np.int64, count=len(changes))
        model.weights[keys] = np.fromiter(changes.values(), dtype=np.float64,
                                          count=len(changes))
    return len(changes)
