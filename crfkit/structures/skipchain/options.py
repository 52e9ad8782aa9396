"""The skip chain's settings and its command-line options (training and labelling), declared
once. Light on purpose: the registry reads these declarations to build the command line."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import click

from crfkit.errors import UsageError
from crfkit.options import Option

SKIP_MODES = ("next", "all", "first")


@dataclass(frozen=True)
class SkipOptions:
    """How skip edges are made and how belief propagation runs (training and labelling)."""

    mode: str = "next"
    cap: int = 1000
    bp_maxiter: int = 50
    bp_tol: float = 1e-6
    # undamped: the serial sweeps settle without it, in fewer rounds (docs/benchmarks.md)
    bp_damping: float = 0.0
    doc_sep: str | None = None  # regex of document separator lines, besides -DOCSTART-
    label_damping: float = 0.5  # max-product BP when labelling (undamped, it can oscillate)

    def validate(self) -> None:
        if self.mode not in SKIP_MODES:
            raise UsageError(f"unknown skip-edge mode {self.mode!r} (expected "
                             f"{' or '.join(SKIP_MODES)})")
        if self.cap < 0:
            raise UsageError(f"--skip-cap must be >= 0, got {self.cap}")
        if self.bp_maxiter < 1:
            raise UsageError(f"--bp-maxiter must be >= 1, got {self.bp_maxiter}")
        if not self.bp_tol >= 0:
            raise UsageError(f"--bp-tol must be >= 0, got {self.bp_tol}")
        if not 0 <= self.bp_damping < 1:
            raise UsageError(f"--bp-damping must be in [0, 1), got {self.bp_damping}")
        if not 0 <= self.label_damping < 1:
            raise UsageError(f"--bp-label-damping must be in [0, 1), got {self.label_damping}")

    def as_dict(self) -> dict:
        return {"mode": self.mode, "cap": self.cap, "bp_maxiter": self.bp_maxiter,
                "bp_tol": self.bp_tol, "bp_damping": self.bp_damping, "doc_sep": self.doc_sep,
                "label_damping": self.label_damping}

    @classmethod
    def from_dict(cls, value: object) -> SkipOptions:
        """The options a model recorded; ValueError if they are malformed. A model from
        before ``label_damping`` labels with its training damping, as it did."""
        if not isinstance(value, dict):
            raise ValueError("skip-chain settings missing")
        try:
            options = cls(mode=value["mode"], cap=int(value["cap"]),
                          bp_maxiter=int(value["bp_maxiter"]), bp_tol=float(value["bp_tol"]),
                          bp_damping=float(value["bp_damping"]),
                          doc_sep=value.get("doc_sep"),
                          label_damping=float(value.get("label_damping",
                                                        value["bp_damping"])))
            if options.doc_sep is not None and not isinstance(options.doc_sep, str):
                raise ValueError("doc_sep is not a string")
            options.validate()
        except (KeyError, TypeError, ValueError, UsageError) as err:
            raise ValueError(f"bad skip-chain settings: {err}") from None
        return options


def _at_least(flag: str, low: float):
    return lambda v: None if v >= low else f"{flag} must be >= {low}, got {v}"


def _damping(flag: str):
    return lambda v: None if 0 <= v < 1 else f"{flag} must be in [0, 1), got {v}"


def _given(check):
    """A check of a label option, whose default None means "the model's"."""
    return lambda v: None if v is None else check(v)


_DEFAULT = SkipOptions()

SKIP_MODE = Option(
    "skip_mode", ("--skip-mode",), _DEFAULT.mode,
    "skipchain: join each occurrence of a key to the next one, all pairs, or each later one "
    "to the first.", click.Choice(list(SKIP_MODES)), show_default=True,
    check=lambda v: None if v in SKIP_MODES else (
        f"unknown skip-edge mode {v!r} (expected {' or '.join(SKIP_MODES)})"))
SKIP_CAP = Option(
    "skip_cap", ("--skip-cap",), _DEFAULT.cap,
    "skipchain: at most this many skip edges a document (the shortest kept).", int,
    show_default=True, check=_at_least("--skip-cap", 0))
BP_MAXITER = Option(
    "bp_maxiter", ("--bp-maxiter",), _DEFAULT.bp_maxiter,
    "skipchain: rounds of belief propagation at most.", int, show_default=True,
    check=_at_least("--bp-maxiter", 1))
BP_TOL = Option(
    "bp_tol", ("--bp-tol",), _DEFAULT.bp_tol,
    "skipchain: BP stops when no message moves more than this (log space).", float,
    show_default=True,
    check=lambda v: None if v >= 0 else f"--bp-tol must be >= 0, got {v}")
BP_DAMPING = Option(
    "bp_damping", ("--bp-damping",), _DEFAULT.bp_damping,
    "skipchain: share of the old message kept at each update, in [0, 1).", float,
    show_default=True, check=_damping("--bp-damping"))
BP_LABEL_DAMPING = Option(
    "bp_label_damping", ("--bp-label-damping",), _DEFAULT.label_damping,
    "skipchain: damping of belief propagation when labelling (recorded in the model; "
    "undamped max-product can oscillate).", float, show_default=True,
    check=_damping("--bp-label-damping"))
DOC_SEP = Option(
    "doc_sep", ("--doc-sep",), None,
    "skipchain: lines matching REGEX separate documents, as -DOCSTART- lines do (recorded "
    "in the model for crfkit label).", str, "REGEX")

TRAIN_OPTIONS = (SKIP_MODE, SKIP_CAP, BP_MAXITER, BP_TOL, BP_DAMPING, BP_LABEL_DAMPING,
                 DOC_SEP)

LABEL_BP_DAMPING = Option(
    "bp_damping", ("--bp-damping",), None,
    "Skip-chain models: damp belief propagation's messages by X in [0, 1) [default: the "
    "--bp-label-damping the model was trained with].", float, "X",
    check=_given(_damping("--bp-damping")))
LABEL_BP_MAXITER = Option(
    "bp_maxiter", ("--bp-maxiter",), None,
    "Skip-chain models: at most N rounds of belief propagation a document [default: the "
    "model's --bp-maxiter].", int, "N", check=_given(_at_least("--bp-maxiter", 1)))
LABEL_DOC_SEP = Option(
    "doc_sep", ("--doc-sep",), None,
    "Skip-chain models: lines matching REGEX separate documents, as -DOCSTART- lines do  "
    "[default: the --doc-sep the model was trained with]", str, "REGEX")

LABEL_OPTIONS = (LABEL_BP_DAMPING, LABEL_BP_MAXITER, LABEL_DOC_SEP)


def skip_options(values: Mapping[str, Any]) -> SkipOptions:
    """The skip-edge and BP settings of a training's option values (defaults where absent)."""
    def get(option: Option) -> Any:
        value = values.get(option.name)
        return option.default if value is None else value

    return SkipOptions(mode=get(SKIP_MODE), cap=get(SKIP_CAP), bp_maxiter=get(BP_MAXITER),
                       bp_tol=get(BP_TOL), bp_damping=get(BP_DAMPING),
                       doc_sep=values.get(DOC_SEP.name), label_damping=get(BP_LABEL_DAMPING))
