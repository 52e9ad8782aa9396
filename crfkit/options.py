"""One declaration per command-line option, beside the code that reads it; the CLI is built
from these (crfkit.cli.options), the defaults of TrainOptions/LabelOptions too."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Option:
    name: str                     # the key it has in TrainOptions / LabelOptions / values
    flags: tuple[str, ...]        # ("-1", "--rho1")
    default: Any                  # None: "not given" (the reader resolves it)
    help: str
    kind: Any = None              # int, float, str, a click type; None: a flag
    metavar: str | None = None
    show_default: bool = False
    reads: tuple[str, ...] = ()   # algorithms that read it (recorded and accepted only for those)
    check: Callable[[Any], str | None] | None = None  # the one-line refusal of a bad value
