"""What a model has learnt, as text: ``crfkit dump`` and ``crfkit info``.

The weight vector is flat (:mod:`crfkit.space`); a reader wants "which
observation pushes towards which label, how hard". :func:`features` turns
the layout back into (observation, label or transition, weight) triples:

* a unigram feature prints as ``OBSERVATION<TAB>LABEL<TAB>WEIGHT``;
* an observation bigram as ``OBSERVATION<TAB>PREV->LABEL<TAB>WEIGHT``;
* the dense transition block as ``B<TAB>PREV->LABEL<TAB>WEIGHT``, ``B``
  being the text of the model's (first) constant bigram pattern;
* then the rows of the model's structure (:meth:`crfkit.structures.base.Structure.dump_rows`),
  with a label two tokens back as ``PREV2->PREV->LABEL`` where the structure has one.

The arrow is ASCII, so the dump is the same in every output encoding and greps
the same in every terminal.
Observations are in id order (most frequent in training first), then the
transitions. Weights print with six significant digits, or a fixed number of
decimal places (Wapiti's ``dump --prec``). Zero weights (a feature the
optimiser never moved) are left out unless asked for (Wapiti's ``--all``):
the features of the model's space, every one, whatever its weight.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TextIO

import numpy as np

from crfkit.errors import UsageError
from crfkit.model.model import Model
from crfkit.model.types import MODEL_TYPES
from crfkit.structures.base import DumpParts

ARROW = "->"
MAX_PRECISION = 1074  # a double has no binary digit below 2**-1074: more decimals are zeros


@dataclass
class Features:
    """All features of a model as parallel arrays (one entry per weight)."""

    observation: np.ndarray  # object: observation text
    prev: np.ndarray  # int64: previous label id, -1 for a unigram feature
    label: np.ndarray  # int64: label id
    weight: np.ndarray  # float64
    prev2: np.ndarray | None = None  # int64: label two tokens back, -1 if none (order 2)


def features(model: Model) -> Features:
    """Every weight of the model with the observation and label(s) it belongs to."""
    s = model.space
    L = s.n_labels
    obs_text = np.array(model.featurizer.observation_strings(), dtype=object)
    u_obs, b_obs = s.owners()
    parts = DumpParts(observation=[obs_text[u_obs], obs_text[b_obs]],
                      prev=[np.full(s.n_u, -1, dtype=np.int64), s.b_prev.astype(np.int64)],
                      label=[s.u_lab.astype(np.int64), s.b_cur.astype(np.int64)])
    if s.has_trans:
        constant = next(p.text for p in model.patterns if p.is_constant and p.has_bigram)
        parts.observation.append(np.full(L * L, constant, dtype=object))
        parts.prev.append(np.repeat(np.arange(L, dtype=np.int64), L))
        parts.label.append(np.tile(np.arange(L, dtype=np.int64), L))
    prev2 = model.structure.dump_rows(model, obs_text, parts)
    return Features(observation=np.concatenate(parts.observation),
                    prev=np.concatenate(parts.prev), label=np.concatenate(parts.label),
                    weight=model.weights.copy(), prev2=prev2)


def dump(model: Model, out: TextIO, *, top: int | None = None, threshold: float = 0.0,
         precision: int | None = None, zeros: bool = False) -> None:
    """Write patterns, labels, then the features with ``|weight| >= threshold`` (and non-zero
    unless ``zeros``).

    With ``top`` only the ``top`` strongest features (largest ``|weight|``)
    of each label are written, label by label in model order, each group
    headed ``# LABEL``; a transition belongs to the label it leads to.
    ``precision``: decimal places of the weights (None: six significant digits).
    """
    if top is not None and top < 1:
        raise UsageError(f"--top must be >= 1, got {top}")
    if threshold < 0:
        raise UsageError(f"--threshold must be >= 0, got {threshold}")
    if precision is not None and not 0 <= precision <= MAX_PRECISION:
        raise UsageError(f"--prec must be in 0..{MAX_PRECISION}, got {precision}")
    number = ".6g" if precision is None else f".{precision}f"
    f = features(model)
    keep = np.abs(f.weight) >= threshold
    if not zeros:
        keep &= f.weight != 0.0
    out.write("# patterns\n")
    out.write("".join(p.text + "\n" for p in model.patterns))
    out.write("# labels\n")
    out.write("".join(name + "\n" for name in model.labels))
    out.write(f"# features: observation<TAB>label or previous{ARROW}label<TAB>weight\n")
    states = model.structure.state_names(model)
    names = np.array(states, dtype=object)
    if top is None:
        out.write(_lines(f, np.flatnonzero(keep), names, number))
        return
    for y, name in enumerate(states):
        mine = np.flatnonzero(keep & (f.label == y))
        # stable sort: equal strengths keep the dump order
        best = mine[np.argsort(-np.abs(f.weight[mine]), kind="stable")[:top]]
        out.write(f"# {name}\n")
        out.write(_lines(f, best, names, number))


def _lines(f: Features, rows: np.ndarray, names: np.ndarray, number: str = ".6g") -> str:
    prev = f.prev[rows]
    label = names[f.label[rows]]
    target = np.where(prev >= 0, names[np.maximum(prev, 0)] + ARROW + label, label)
    if f.prev2 is not None:
        prev2 = f.prev2[rows]
        target = np.where(prev2 >= 0, names[np.maximum(prev2, 0)] + ARROW + target, target)
    return "".join(f"{o}\t{t}\t{w:{number}}\n" for o, t, w in zip(
        f.observation[rows].tolist(), target.tolist(), f.weight[rows].tolist(), strict=True))


def info(model: Model) -> list[tuple[str, str]]:
    """``(key, value)`` lines describing the model and how it was trained."""
    s = model.space
    nonzero = int(np.count_nonzero(model.weights))
    described = model.structure.describe(model)
    counts = [f"{s.n_u} unigram", f"{s.n_b} observation bigram",
              f"{s.n_labels ** 2 if s.has_trans else 0} transition", *described.feature_counts]
    lines = [
        ("type", MODEL_TYPES[model.model_type].title),
        ("labels", f"{len(model.labels)}: {' '.join(model.labels)}"),
        ("token columns", str(model.n_token_columns)),
        ("observations", str(s.n_obs)),
        *described.lines,
        ("features", f"{s.n_weights} ({', '.join(counts)})"),
        ("non-zero weights", str(nonzero)),
        ("patterns", str(len(model.patterns))),
    ]
    lines += [("", p.text) for p in model.patterns]
    for key, value in model.info.items():
        if isinstance(value, dict):
            lines.append((key, " ".join(f"{k}={v}" for k, v in value.items())))
        else:
            lines.append((key, str(value)))
    return lines


def write_info(model: Model, out: TextIO) -> None:
    """Print :func:`info` as aligned ``key: value`` lines (patterns indented below)."""
    lines = info(model)
    width = max(len(key) for key, _ in lines) + 1
    out.write("".join(f"{key + ':' if key else '':<{width}} {value}\n" for key, value in lines))
