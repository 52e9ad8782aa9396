"""Progress on stderr, through one reporter: library code never prints.

Two kinds of output: lines (:meth:`Progress.message`, one per training
iteration and per phase), and a live status line rewritten in place
(:meth:`Progress.status`) for the long silent phases, such as reading a
large corpus. The status line is shown only when stderr is a terminal:
in a pipe or a log file, carriage returns would only add noise.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Iterator
from typing import TextIO, TypeVar

T = TypeVar("T")
STATUS_INTERVAL = 0.25  # seconds between two rewrites of the status line


class Progress:
    """Prints training progress; library code reports here, never with print()."""

    def __init__(self, stream: TextIO | None = None, *, quiet: bool = False,
                 live: bool | None = None) -> None:
        """``live``: show the status line (default: when the stream is a terminal)."""
        self.stream = stream if stream is not None else sys.stderr
        self.quiet = quiet
        if live is None:
            isatty = getattr(self.stream, "isatty", None)
            live = bool(isatty and isatty())
        self.live = live and not quiet
        self._status_shown = False

    def message(self, text: str) -> None:
        if not self.quiet:
            self.clear_status()
            self.stream.write(text + "\n")
            self.stream.flush()

    def warning(self, text: str) -> None:
        """A ``* warning:`` line, shown even when quiet: -q silences progress, not problems."""
        self.clear_status()
        self.stream.write(f"* warning: {text}\n")
        self.stream.flush()

    def status(self, text: str) -> None:
        """Show ``text`` on the status line (terminals only), replacing what was there."""
        if self.live:
            self.stream.write("\r" + text + "\x1b[K")
            self.stream.flush()
            self._status_shown = True

    def clear_status(self) -> None:
        if self._status_shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self._status_shown = False

    def counted(self, sequences: Iterable[T], what: str = "reading") -> Iterator[T]:
        """Pass ``sequences`` through, counting them and their tokens on the status line."""
        if not self.live:
            yield from sequences
            return
        start = last = time.perf_counter()
        n_seqs = n_tokens = 0
        try:  # erased however reading ends: Ctrl-C's message must start a line of its own
            for seq in sequences:
                n_seqs += 1
                n_tokens += len(getattr(seq, "rows", ()))
                now = time.perf_counter()
                if now - last >= STATUS_INTERVAL:
                    last = now
                    self.status(f"* {what}: {n_seqs:,} sequences, {n_tokens:,} tokens "
                                f"({n_tokens / (now - start):,.0f} tokens/s)")
                yield seq
        finally:
            self.clear_status()

    def iteration(self, it: int, objective: float, token_error: float, sequence_error: float,
                  seconds: float, extra: str = "") -> None:
        self.message(f"  [{it:4d}] obj={objective:<14.6f} tok-err={token_error * 100:6.2f}% "
                     f"seq-err={sequence_error * 100:6.2f}% time={seconds:7.2f}s{extra}")
