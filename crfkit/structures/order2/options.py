"""The second order's command-line option, declared once (light: the registry reads it to
build the command line)."""

from __future__ import annotations

from typing import Any

from crfkit.options import Option


def _check_order(order: Any) -> str | None:
    return None if order in (None, 1, 2) else f"--order must be 1 or 2, got {order}"


ORDER = Option("order", ("--order",), None,
               "Label order of a crf: 2 adds label-trigram states and the t patterns "
               "(observation x three labels)  [default: 1]", int, "1|2", check=_check_order)

TRAIN_OPTIONS = (ORDER,)
LABEL_OPTIONS: tuple[Option, ...] = ()
