"""Training progress: one line per iteration on stderr, through one reporter."""

from __future__ import annotations

import sys
from typing import TextIO


class Progress:
    """Prints training progress; library code reports here, never with print()."""

    def __init__(self, stream: TextIO | None = None, *, quiet: bool = False) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.quiet = quiet

    def message(self, text: str) -> None:
        if not self.quiet:
            self.stream.write(text + "\n")
            self.stream.flush()

    def iteration(self, it: int, objective: float, token_error: float, sequence_error: float,
                  seconds: float, extra: str = "") -> None:
        self.message(f"  [{it:4d}] obj={objective:<14.6f} tok-err={token_error * 100:6.2f}% "
                     f"seq-err={sequence_error * 100:6.2f}% time={seconds:7.2f}s{extra}")
