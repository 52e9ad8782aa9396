"""What several commands share: the separator choice, the names --help lists, the checks of
input files and report directories made before any work starts."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

import click

from crfkit.model.types import MODEL_TYPES
from crfkit.options import Option

SEPARATORS = click.Choice(["auto", "tab", "space"])


MODEL_TYPE_NAMES = tuple(MODEL_TYPES)
"""The names of ``modeltypes.MODEL_TYPES`` and ``train.ALGORITHMS``; the algorithms are
spelled out here so that ``--help`` lists them without importing the training code (a test
keeps them equal)."""
ALGORITHM_NAMES = ("l-bfgs", "sgd-l1", "ap", "l2sgd", "pa", "arow", "mira", "rprop", "rprop+",
                   "rprop-", "bcd")


def refuse_dask_crfsuite(dask_address: str | None) -> None:
    """CRFsuite data files are read and trained in this process only: say so rather than
    run the work here unasked."""
    from crfkit.errors import UsageError

    if dask_address is not None:
        raise UsageError("--dask is not available with --format crfsuite (columns only)")


def report_log(report_dir: str | None) -> list[dict] | None:
    """With --report, check the directory now and return the list the log goes to."""
    if report_dir is None:
        return None
    from crfkit.evaluation.report import prepare_directory

    prepare_directory(report_dir)
    return []


def existing_file(path: str | None, option: str, numeric_hint: str | None) -> None:
    """Refuse a missing file in one line; a number where a file belongs is a CRF++ habit."""
    from crfkit.errors import UsageError

    if path is None or os.path.isfile(path):
        return
    problem = "is a directory" if os.path.isdir(path) else "does not exist"
    hint = ""
    if numeric_hint and path.replace(".", "", 1).isdigit():
        hint = f" ({numeric_hint})"
    raise UsageError(f"{option}: {path!r} {problem}{hint}")


def structure_values(params: Mapping[str, Any], declared: Iterable[Option]) -> dict[str, Any]:
    """The structures' options a command was given, by name (None: not given), for
    TrainOptions.structure / LabelOptions.structure: the command names no structure."""
    return {o.name: params[o.name] for o in declared if o.name in params}
