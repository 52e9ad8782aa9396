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

While the child works, this process compiles first the kernels the child's
kernel calls last (:func:`compile_now`: the child then finds them in the cache),
then the kernels it calls itself next: the shared scores, then those queued
with :func:`compile_meanwhile` (the optimiser's vector kernels, the gradient
sums), compiled by :meth:`Aside.wait` before it blocks. Otherwise they would
be compiled one after the other once the child is done, with the second core
idle. The child, done with its kernel, compiles the queue too, from its end:
each process loads from the cache what the other has compiled, so the two meet
wherever the queue's work balances theirs (kernels queued before the fork).
"""

from __future__ import annotations

import mmap
import os
import sys
import threading
from collections.abc import Sequence

# Kernels to compile here while a child compiles another: (dispatcher id, signature) ->
# (dispatcher, signature); kept until the next child starts or is found of no use.
_meanwhile: dict[tuple[int, tuple], tuple[object, tuple]] = {}


class Aside:
    """A child compiling a kernel; :meth:`wait` before calling it here. ``claims``: one
    byte per kernel queued at the fork, shared with the child, set by whichever process
    takes the kernel (this one from the queue's start, the child from its end)."""

    def __init__(self, pid: int, claims: mmap.mmap | None = None) -> None:
        self.pid, self.claims = pid, claims

    def wait(self) -> None:
        """Compile the queued kernels the child has not taken, block until the child is
        done (at once if it already was), then load from the cache those it compiled."""
        compile_queued(self.claims)
        if self.pid:
            try:
                os.waitpid(self.pid, 0)
            except ChildProcessError:  # already reaped
                pass
            self.pid = 0
        compile_queued()


def compile_aside(dispatcher: object, args: Sequence[object]) -> Aside | None:
    """Start compiling ``dispatcher`` for the types of ``args`` in a child process, or
    None when it is of no use (compiled or cached already, no fork, no writable cache)."""
    if not may_fork():
        drop_queued()
        return None
    try:
        signature = _signature(dispatcher, args)
        if signature in dispatcher.overloads or not _cacheable(dispatcher, signature):  # type: ignore[attr-defined]
            drop_queued()
            return None
        # Numba's one-off set-up (loading its implementations, ~0.5 s), which this process
        # needs next anyway: done before the fork, the child inherits it.
        dispatcher.targetctx.refresh()  # type: ignore[attr-defined]
    except Exception:  # not a caching dispatcher (NUMBA_DISABLE_JIT), or a new Numba
        drop_queued()
        return None
    sys.stdout.flush()
    sys.stderr.flush()
    claims = mmap.mmap(-1, max(1, len(_meanwhile)))  # shared with the child
    pid = os.fork()
    if pid == 0:  # the child: compile (saved to the cache), then leave without cleanup
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.dup2(devnull, 2)
            dispatcher.compile(signature)  # type: ignore[attr-defined]
            queued = list(_meanwhile.values())
            for i in reversed(range(len(queued))):
                if not claims[i]:
                    claims[i] = 1
                    _compile(*queued[i])
        finally:
            os._exit(0)
    return Aside(pid, claims)


def compile_meanwhile(calls: Sequence[tuple[object, Sequence[object]]]) -> None:
    """Queue kernels (each with arguments of the types it will be called with) for this
    process to compile while the next child compiles its kernel (:meth:`Aside.wait`), and
    for that child to compile after its kernel, from the queue's end.
    Queued only if not compiled here yet; dropped if no child starts (a warm cache: each
    is then loaded from it on its first call, as it would have been anyway)."""
    for dispatcher, args in calls:
        try:
            signature = _signature(dispatcher, args)
            if signature not in dispatcher.overloads:  # type: ignore[attr-defined]
                _meanwhile[id(dispatcher), signature] = (dispatcher, signature)
        except Exception:  # not a dispatcher (NUMBA_DISABLE_JIT): it compiles nothing
            pass


def drop_queued() -> None:
    """Forget the queued kernels: no child will compile beside them (a locally normalised
    model has no loss kernel to set aside), and each compiles on its first call."""
    _meanwhile.clear()


def compile_queued(claims: mmap.mmap | None = None) -> None:
    """Compile the queued kernels now (loaded from the cache if they are in it), in the
    order queued; with ``claims``, only those no other process has taken (the others stay
    queued)."""
    for i, key in enumerate(list(_meanwhile)):
        if claims is not None and i < len(claims):
            if claims[i]:
                continue
            claims[i] = 1
        _compile(*_meanwhile.pop(key))


def compile_now(calls: Sequence[tuple[object, Sequence[object]]]) -> None:
    """Compile kernels (each with arguments of its call types) in this process now, into
    the cache: for a child compiling a kernel that calls them, which then loads them."""
    for dispatcher, args in calls:
        try:
            _compile(dispatcher, _signature(dispatcher, args))
        except Exception:  # not a dispatcher (NUMBA_DISABLE_JIT): it compiles nothing
            pass


def _compile(dispatcher: object, signature: tuple) -> None:
    try:
        dispatcher.compile(signature)  # type: ignore[attr-defined]
    except Exception:  # pragma: no cover - the kernel's own call will raise it
        pass


def may_fork() -> bool:
    """True on Linux in a process whose only thread is this one."""
    return (sys.platform.startswith("linux") and threading.active_count() == 1
            and threading.current_thread() is threading.main_thread())


def _signature(dispatcher: object, args: Sequence[object]) -> tuple:
    return tuple(dispatcher.typeof_pyval(a) for a in args)  # type: ignore[attr-defined]


def _cacheable(dispatcher: object, signature: tuple) -> bool:
    """True if the on-disk cache lacks ``signature`` and its directory can be written."""
    cache = dispatcher._cache  # type: ignore[attr-defined]
    if not os.access(cache._cache_path, os.W_OK):
        return False
    key = cache._index_key(signature, dispatcher.targetctx.codegen())  # type: ignore[attr-defined]
    return key not in (cache._cache_file._load_index() or {})
