"""Ending the ``crfkit`` process without tearing the interpreter down.

Why: after a large run the interpreter's teardown (freeing every module's
objects, Numba's and LLVM's among them, a model of millions of weights, the
mapped input) takes a tenth of a second or more, which the operating system
does at once when the process ends. Labelling a million tokens takes about
1.4 s, so that is a tenth of it, and a user waits for it after every command.

What a normal exit does that matters is done first: the exit handlers run
(:mod:`atexit`: a library's clean-up), standard output and error are flushed,
and when a thread other than the main one is still running, or anything is
unexpected, the process exits the usual way instead. Outputs are already
complete here: every file a command writes is closed and renamed by the command.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from typing import NoReturn


def exit_status(code: object) -> int:
    """The process status of ``SystemExit(code)``: None is 0, an int itself, anything
    else (a message, which is printed) 1, as the interpreter has it."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def leave(status: int) -> NoReturn:
    """End the process with ``status`` (module docstring); the usual exit when another
    thread still runs or a standard stream cannot be flushed."""
    run_handlers = getattr(atexit, "_run_exitfuncs", None)
    if run_handlers is None or _other_threads_running():
        raise SystemExit(status)
    run_handlers()
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
    except (OSError, ValueError):
        raise SystemExit(status) from None
    os._exit(status)


def _other_threads_running() -> bool:
    """Whether a thread the interpreter would wait for at exit is still alive."""
    main = threading.main_thread()
    return any(t is not main and t.is_alive() and not t.daemon for t in threading.enumerate())
