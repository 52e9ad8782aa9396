"""Ctrl-C held back while an optimiser updates its state, so a saved state is whole.

An optimiser's state (its point, history, step sizes, stopping window) changes in several
statements after each objective evaluation. A Ctrl-C landing between two of them would
leave a state that no uninterrupted run ever had, and ``--sstate`` would save it: the
resumed run would then differ from the uninterrupted one. Inside :func:`uninterrupted` the
signal is only noted, and raised once the block has finished. The objective evaluations,
where the time goes, stay outside: a Ctrl-C still stops a run within one evaluation.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def uninterrupted() -> Iterator[None]:
    """Run the block whole: a SIGINT during it raises KeyboardInterrupt after it.

    Outside the main thread (where Python delivers signals) there is nothing to hold back.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda number, frame: caught.append(number))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler if previous is None
                      else previous)  # None: a handler installed outside Python
    if caught:
        raise KeyboardInterrupt
