"""The path ``crfkit tune`` walks and what it reports: strengths, folds, the table row of a
point, the summary and what the model records of the search (:mod:`crfkit.training.tune`
trains the points)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from crfkit.errors import UsageError
from crfkit.model.model import Model
from crfkit.training.train_options import TrainOptions

DEFAULT_RHO2_PATH = (0.5, 0.25, 0.125)
"""The L2 strengths tried by default: powers of two from half train's default (1)
through CRF++'s tuned ``-c 4`` (0.25) to one step beyond (the manual gives the
measurements behind the choice)."""


DEFAULT_LIKELY = (0.01,)
"""The likely-feature thresholds scored by default at the best observed strength."""


@dataclass(frozen=True)
class Strength:
    """One point of the path: the L1 and L2 strengths, and the feature set (``likely``:
    0 for the features observed in training, else the threshold of the likely
    unsupported features added to them, :mod:`crfkit.training.likely_features`)."""

    rho1: float
    rho2: float
    likely: float = 0.0

    def __str__(self) -> str:
        text = f"rho1={self.rho1:g} rho2={self.rho2:g}"
        return text + (f" likely={self.likely:g}" if self.likely else "")


def parse_strengths(text: str, option: str) -> list[float]:
    """``2,1,0.5`` (a list) or ``2:0.125:5`` (5 log-spaced values from 2 to 0.125).

    Raises UsageError naming ``option`` for anything else or a negative value.
    """
    try:
        if ":" in text:
            parts = text.split(":")
            if len(parts) != 3:
                raise ValueError
            first, last, count = float(parts[0]), float(parts[1]), int(parts[2])
            if count < 1 or first <= 0 or last <= 0:
                raise ValueError
            if count == 1:
                return [first]
            ratio = math.log(last / first) / (count - 1)
            return [float(f"{first * math.exp(ratio * i):.6g}") for i in range(count)]
        values = [float(v) for v in text.split(",")]
    except ValueError:
        raise UsageError(f"{option}: expected a list like '2,1,0.5' or a log-spaced range "
                         f"FROM:TO:COUNT like '2:0.125:5', got {text!r}") from None
    for v in values:
        if not (v >= 0 and math.isfinite(v)):
            raise UsageError(f"{option}: strengths must be finite and >= 0, got {v:g}")
    return values


def parse_likely(text: str) -> tuple[float, ...]:
    """``0.1,0.01`` (thresholds in (0, 1]) or ``none`` (no likely features)."""
    if text.strip().lower() == "none":
        return ()
    values = parse_strengths(text, "--likely")
    for v in values:
        if not 0 < v <= 1:
            raise UsageError(f"--likely: thresholds must be in (0, 1] (or 'none'), got {v:g}")
    return tuple(values)


def strength_path(rho1: Sequence[float] | None, rho2: Sequence[float] | None,
                  default_rho2: float = 1.0) -> list[Strength]:
    """The points to visit, strongest first, each next to the one before it.

    Neither list given: :data:`DEFAULT_RHO2_PATH` with no L1. One given: the
    other is fixed (L1 0, L2 ``default_rho2``). Both: their grid, rows of
    decreasing ``rho1``, each row's ``rho2`` alternately decreasing and
    increasing (snake order, so every step changes one strength).
    """
    if rho1 is None and rho2 is None:
        rho2 = DEFAULT_RHO2_PATH
    ones = sorted(set(rho1 if rho1 is not None else [0.0]), reverse=True)
    twos = sorted(set(rho2 if rho2 is not None else [default_rho2]), reverse=True)
    path = []
    for row, r1 in enumerate(ones):
        for r2 in (twos if row % 2 == 0 else twos[::-1]):
            path.append(Strength(r1, r2))
    return path


def make_folds(n_sequences: int, k: int, seed: int) -> list[np.ndarray]:
    """Deal sequence indices into ``k`` folds (sorted index arrays) by a seeded shuffle.

    Whole sequences, never tokens: a fold's tokens are not seen in training
    through their neighbours. Sizes differ by at most one; the same
    ``(n_sequences, k, seed)`` always gives the same folds.
    """
    if k < 2:
        raise UsageError(f"--folds must be >= 2, got {k}")
    if n_sequences < k:
        raise UsageError(f"--folds {k}: the training data has only {n_sequences} "
                         f"sequence(s), fewer than the folds")
    order = np.random.default_rng(seed).permutation(n_sequences)
    return [np.sort(order[i::k]) for i in range(k)]


@dataclass
class TuneOptions:
    """Settings of the search; the training settings are a :class:`TrainOptions`."""

    folds: int = 5
    seed: int = 0
    # likely-feature thresholds tried at the best point; None: DEFAULT_LIKELY, quietly
    # skipped for a structure without likely features (an explicit list is refused there)
    likely: tuple[float, ...] | None = None
    jobs: int = 0  # fold paths trained at once; 0: one per core (at most the folds)
    warm_start: bool = True
    path_stopeps: float | None = 5e-4  # -e of the path points (None: the final one's, -e)


@dataclass
class FoldPoint:
    """One fold trained at one strength."""

    x: np.ndarray
    objective: float
    iterations: int
    seconds: float
    reason: str
    gold: list[list[str]]
    pred: list[list[str]]
    log: list[dict]


@dataclass
class PointResult:
    """One strength scored: pooled F1 over the folds (or the devel F1) and costs."""

    strength: Strength
    f1: float
    fold_f1: list[float]
    iterations: int  # summed over the folds
    seconds: float  # training time summed over the folds
    nonzero: float  # non-zero weights, mean over the folds
    objective: list[float]
    reasons: list[str]
    logs: list[list[dict]] = field(default_factory=list, repr=False)  # per fold
    features: float = 0.0  # weights of the feature space, mean over the folds

    def as_dict(self) -> dict:
        return {"rho1": self.strength.rho1, "rho2": self.strength.rho2,
                "likely": self.strength.likely or None, "f1": self.f1,
                "fold_f1": self.fold_f1, "iterations": self.iterations,
                "seconds": self.seconds, "nonzero": self.nonzero, "features": self.features,
                "objective": self.objective}


@dataclass
class TuneResult:
    """What :func:`tune` returns: the scored points, the best one and its model."""

    points: list[PointResult]
    best: PointResult | None
    model: Model | None
    interrupted: bool
    mode: str  # "folds" or "devel"
    seconds: float
    final_log: list[dict] = field(default_factory=list)
    final: dict = field(default_factory=dict)


def edge_warning(path: Sequence[Strength], best: Strength) -> str | None:
    """When the best strength is the strongest or weakest the grid tried (in a coordinate
    with several values): the F1 may still rise beyond it, the search should extend."""
    for name, option in (("rho1", "--rho1"), ("rho2", "--rho2")):
        values = sorted({getattr(s, name) for s in path})
        value = getattr(best, name)
        if len(values) < 2 or values[0] < value < values[-1]:
            continue
        side, beyond = ("weakest", "below") if value == values[0] else ("strongest", "above")
        return (f"the best {name}={value:g} is the {side} the grid tried: a strength "
                f"{beyond} it may score higher (extend {option} {beyond} {value:g})")
    return None


def chosen_options(options: TrainOptions, strength: Strength) -> TrainOptions:
    """The training settings of a path point."""
    return replace(options, rho1=strength.rho1, rho2=strength.rho2,
                   likely=strength.likely or None)


TABLE_HEADER = (f"  {'rho1':>8} {'rho2':>8} {'likely':>6} {'iterations':>10} {'seconds':>9} "
                f"{'F1':>7} {'sd':>6} {'non-zero':>10}")


def table_row(point: PointResult) -> str:
    """One row of the table ``tune`` prints: iterations and seconds summed over the folds,
    F1 pooled over them, ``sd`` the standard deviation of the folds' own F1; ``likely``
    the threshold of the likely features added (``-``: the observed features only)."""
    sd = f"{np.std(point.fold_f1, ddof=1):6.2f}" if len(point.fold_f1) > 1 else f"{'-':>6}"
    s = point.strength
    likely = f"{s.likely:>6g}" if s.likely else f"{'-':>6}"
    return (f"  {s.rho1:>8g} {s.rho2:>8g} {likely} {point.iterations:>10d} "
            f"{point.seconds:>9.1f} {point.f1:>7.2f} {sd} {point.nonzero:>10,.0f}")


def tune_info(result: TuneResult, t: TuneOptions, n_path: int) -> dict:
    """What the model records about the search (``crfkit info`` prints it on one line)."""
    best = result.best
    assert best is not None
    criterion = ("chunk F1 of the development set" if result.mode == "devel" else
                 f"chunk F1 of {t.folds} folds pooled (seed {t.seed})")
    scores = " ".join(f"{p.strength.rho1:g}/{p.strength.rho2:g}/{p.strength.likely:g}:"
                      f"{p.f1:.2f}" for p in result.points)
    return {"criterion": criterion, "chosen_rho1": best.strength.rho1,
            "chosen_rho2": best.strength.rho2, "chosen_likely": best.strength.likely or None,
            "f1": round(best.f1, 4), "scored": f"{len(result.points)} of {n_path}",
            "rho1/rho2/likely:F1": scores, "warm_start": t.warm_start,
            "path_stopeps": t.path_stopeps,
            "interrupted": result.interrupted}


def tune_summary(result: TuneResult, t: TuneOptions, model_file: str | None) -> dict:
    """The JSON summary (``tune --json``; also the report's ``report.json``)."""
    return {
        "format": "crfkit-tune/1",
        "mode": result.mode,
        "folds": t.folds if result.mode == "folds" else None,
        "seed": t.seed if result.mode == "folds" else None,
        "warm_start": t.warm_start,
        "points": [p.as_dict() for p in result.points],
        "best": None if result.best is None else result.best.as_dict(),
        "final_training": result.final or None,
        "model": model_file,
        "interrupted": result.interrupted,
        "seconds": result.seconds,
    }
