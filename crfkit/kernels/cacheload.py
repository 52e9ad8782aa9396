"""Loading cached kernels without Numba's whole compiler set-up.

Before it looks a kernel up in its on-disk cache, Numba loads every typing and
lowering registry it has (``BaseContext.refresh``: the numpy, random, typed
containers, jitclass and cffi implementations, about a hundred modules; 0.3 s
of a warm ``crfkit train`` or ``crfkit label``), which only a compilation
uses. A cached kernel's machine code needs only the symbols it calls: Numba's
helpers (installed with the CPU context), its runtime (NRT: allocation,
reference counts), and the symbols of the Numba modules whose implementations
it inlined (string hashing's secret, say), which unpickling its environment
imports. :func:`install` makes a cache lookup start the runtime and load the
kernel; on a miss, the compilation that follows runs the full set-up as it
always does. The kernels loaded are the same bytes either way, so the results
are too.

Installed by the command line only (``crfkit.cli.startup``); library users
keep Numba's own behaviour. Anything unexpected in Numba's internals sends the
lookup back to Numba's own.
"""

from __future__ import annotations

from numba.core import caching

_numba_load_overload = caching.FunctionCache.load_overload


def install() -> None:
    """Make every Numba cache lookup in this process skip the compiler set-up on a hit."""
    caching.FunctionCache.load_overload = _load_overload  # type: ignore[method-assign]


def _load_overload(self: caching.FunctionCache, sig: object, target_context: object) -> object:
    """``FunctionCache.load_overload`` without the registries (a miss is compiled next, and
    Numba's compiler loads them first)."""
    try:
        with self._guard_against_spurious_io_errors():
            return _load_cached(self, sig, target_context)
    except AttributeError:  # another Numba's internals
        return _numba_load_overload(self, sig, target_context)
    return None  # an I/O error the guard swallowed


def _load_cached(cache: caching.FunctionCache, sig: object, target_context: object) -> object:
    """The compiled kernel for ``sig`` from the cache, or None (disabled, not cached)."""
    if not cache._enabled:
        return None
    data = cache._cache_file.load(cache._index_key(sig, target_context.codegen()))  # type: ignore[attr-defined]
    if data is None:
        return None
    from numba.core.runtime import nrt

    nrt.rtsys.initialize(target_context)
    return cache._impl.rebuild(target_context, data)
