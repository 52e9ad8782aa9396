"""Compiling a kernel in a forked child while this process compiles the others.

A first run (empty Numba cache) spends most of its time compiling, on one
core; the CRF loss kernel alone is about half of it. :func:`compile_aside`
forks a child that compiles one kernel into Numba's on-disk cache while this
process goes on compiling the kernels it calls first; the first call here
then loads the kernel from the cache (:meth:`Aside.wait` first). Cached
kernels are the same bits as freshly compiled ones (``crfkit.config``), so
the model does not depend on it.

Only on Linux and from a process running one thread (a fork copies only the
calling thread: a lock another thread held, Numba's compiler lock say, would
stay locked in the child for good), only for a kernel whose signature is not
cached yet, and only when the cache directory is writable. Whatever goes wrong in the
child (no room, a read-only cache, an interrupt) only means that this
process finds nothing in the cache and compiles the kernel itself.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Sequence


class Aside:
    """A child compiling a kernel; :meth:`wait` before calling it here."""

    def __init__(self, pid: int) -> None:
        self.pid = pid

    def wait(self) -> None:
        """Block until the child is done (at once if it already was)."""
        if self.pid:
            try:
                os.waitpid(self.pid, 0)
            except ChildProcessError:  # already reaped
                pass
            self.pid = 0


def compile_aside(dispatcher: object, args: Sequence[object]) -> Aside | None:
    """Start compiling ``dispatcher`` for the types of ``args`` in a child process, or
    None when it is of no use (compiled or cached already, no fork, no writable cache)."""
    if not may_fork():
        return None
    try:
        signature = tuple(dispatcher.typeof_pyval(a) for a in args)  # type: ignore[attr-defined]
        if signature in dispatcher.overloads or not _cacheable(dispatcher, signature):  # type: ignore[attr-defined]
            return None
        # Numba's one-off set-up (loading its implementations, ~0.5 s), which this process
        # needs next anyway: done before the fork, the child inherits it.
        dispatcher.targetctx.refresh()  # type: ignore[attr-defined]
    except Exception:  # not a caching dispatcher (NUMBA_DISABLE_JIT), or a new Numba
        return None
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the child: compile (saved to the cache), then leave without cleanup
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.dup2(devnull, 2)
            dispatcher.compile(signature)  # type: ignore[attr-defined]
        finally:
            os._exit(0)
    return Aside(pid)


def may_fork() -> bool:
    """True on Linux in a process whose only thread is this one."""
    return (sys.platform.startswith("linux") and threading.active_count() == 1
            and threading.current_thread() is threading.main_thread())


def _cacheable(dispatcher: object, signature: tuple) -> bool:
    """True if the on-disk cache lacks ``signature`` and its directory can be written."""
    cache = dispatcher._cache  # type: ignore[attr-defined]
    if not os.access(cache._cache_path, os.W_OK):
        return False
    key = cache._index_key(signature, dispatcher.targetctx.codegen())  # type: ignore[attr-defined]
    return key not in (cache._cache_file._load_index() or {})
