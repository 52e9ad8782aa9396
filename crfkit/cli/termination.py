"""``kill PID`` (SIGTERM) stops a command as Ctrl-C does, so nothing done is lost.

A training started in the background (``crfkit train ... &``) ignores Ctrl-C, as
the shell asks of every background job; ``kill`` is then how a user stops it. By
default SIGTERM ends the process on the spot: hours of training gone, a temporary
output file left behind. Here SIGTERM goes where SIGINT would: to the handler in
place (an optimiser holding the signal back while it updates its state, a tuning
run's stop flag), or, when SIGINT has none or is ignored, as a KeyboardInterrupt.
Training then keeps the model trained so far, an output file is removed whole, and
the command exits with 143, the status a shell gives a process ended by SIGTERM.
"""

from __future__ import annotations

import signal
import threading

# 128 + SIGTERM, what a shell reports for a process SIGTERM ended
TERMINATED_STATUS = 128 + signal.SIGTERM

_received: list[int] = []


def _as_interrupt(signum: int, frame) -> None:
    _received.append(signum)
    handler = signal.getsignal(signal.SIGINT)
    if callable(handler):
        handler(signal.SIGINT, frame)  # raises KeyboardInterrupt, or notes the stop
        return
    raise KeyboardInterrupt  # SIGINT ignored (a background job) or not Python's


def terminate_like_interrupt() -> None:
    """Route SIGTERM to the SIGINT handling; a SIGTERM already ignored stays ignored."""
    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _as_interrupt)


def terminated() -> bool:
    """Whether a SIGTERM came (the exit status is then :data:`TERMINATED_STATUS`)."""
    return bool(_received)
