"""The skip chain's command-line options (training and labelling), declared once."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import click

from crfkit.options import Option
from crfkit.structures.skipchain.graph import SKIP_MODES, SkipOptions


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
