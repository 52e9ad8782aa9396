"""Whether Numba still has to compile the kernels a training run needs.

The kernels are compiled on their first call and kept in Numba's on-disk
cache (``cache=True``), so only the first run after an install (or after a
kernel changed) compiles, for about ten seconds, before its first progress
line. :func:`announce_compile` prints one line first, so that run does not
look hung; a warm run prints nothing.

How it tells, without compiling or loading anything: each kernel's cache
index (``<function>-<line>.py311.nbi``) maps the compiled versions to their
data files. Numba accepts an index only if it was written by the same Numba
version for the current source (for crfkit's kernels, the whole package's:
:mod:`crfkit.kernels.sourcestamp`); an entry is usable
only on the same CPU (``magic_tuple``) and for the same bytecode and
closure values. A kernel counts as cached if such an entry exists, whatever
its argument types. The index is Numba's private format: if reading it
fails in any way, the kernel counts as cached, so that a Numba upgrade can
at worst lose the line, never print it on a warm run.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable

from crfkit.features.small_counts import is_small
from crfkit.progress import Progress
from crfkit.structures import named
from crfkit.structures.base import Kernels, Structure

# Compile time of each group of kernels, in seconds, on the 2-core machine the
# README's figures come from (first run of each path with an empty cache).
# (a structure's own kernel groups: Structure.kernels)
COUNTING = 3
# crfkit.sklearn: an attribute corpus's counting kernels
ATTRIBUTE_COUNTING = 3


def announce_compile(progress: Progress, algo: str, model_type: str, devel: bool,
                     structure: Structure | None = None, *, attributes: bool = False,
                     n_tokens: int | None = None) -> None:
    """Tell the user, before it happens, that the kernels of this training are compiled
    (``structure``: None for the linear chain; ``attributes``: a training on attribute
    sequences, :mod:`crfkit.attributes.attribute_model`; ``n_tokens``: the corpus's size
    when known, see :func:`compile_seconds`)."""
    if progress.quiet:
        return
    seconds = compile_seconds(algo, model_type, devel, structure, attributes=attributes,
                              n_tokens=n_tokens)
    if seconds:
        progress.message(compile_note(seconds))


def announce_label_compile(echo: Callable[[str], None], structure: Structure) -> None:
    """The same line for ``crfkit label`` when the decoder it calls through Numba (the
    model structure's: :meth:`Structure.label_kernels`) is not compiled yet."""
    seconds = _uncached_seconds(structure.label_kernels(False))
    if seconds:
        echo(compile_note(seconds))


def compile_note(seconds: float) -> str:
    """The announcement, its figure scaled to the machine's load now (:func:`load_factor`)."""
    return f"* compiling kernels (first run only, about {round(seconds * load_factor())} s)"


def load_factor() -> float:
    """How many times longer than on an idle machine a compilation takes now: it runs on
    one thread, which gets about cores/load of a core once more threads than cores want
    to run (the 1-minute load average counts them)."""
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):  # no load average on this system
        return 1.0
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1.0, load / max(1, cores or 1))


def compile_seconds(algo: str, model_type: str, devel: bool,
                    structure: Structure | None = None, *, attributes: bool = False,
                    n_tokens: int | None = None) -> int:
    """Estimated compile time of the kernels this training needs that are not cached (0: none).

    A small corpus is counted with numpy (:mod:`crfkit.features.small_counts`), so the
    counting kernels may stay uncompiled for good: they alone make a run announce only
    when its corpus (``n_tokens``, None: not known) is large enough to need them, as
    the first large corpus after small ones does."""
    groups = _groups(algo, model_type, devel, structure or named("chain"))
    if attributes:  # an attribute corpus is counted by its own kernels, not by intern's
        return _uncached_seconds(_attribute_groups(groups))
    counting, *rest = groups
    seconds = _uncached_seconds(rest)
    counted_by_kernels = n_tokens is not None and not is_small(n_tokens)
    return seconds + _uncached_seconds([counting]) if seconds or counted_by_kernels else 0


def decode_compile_seconds() -> int:
    """Estimated compile time of the labelling kernels if they are not cached (0: cached)."""
    return _uncached_seconds(named("chain").label_kernels(False))


def _uncached_seconds(groups: Iterable[tuple[int, Kernels]]) -> int:
    return sum(seconds for seconds, kernels in groups
               if not all(any(is_cached(d) for d in alternatives) for alternatives in kernels()))


def is_cached(dispatcher: object) -> bool:
    """True if Numba's on-disk cache holds a version of this kernel usable here."""
    try:
        cache = dispatcher._cache  # type: ignore[attr-defined]
        index = cache._cache_file._load_index()
        if not index:
            return False
        wanted = cache._index_key(None, dispatcher.targetctx.codegen())[1:]  # type: ignore
        return any(key[1:] == wanted for key in index)
    except Exception:  # not a caching dispatcher (NUMBA_DISABLE_JIT), or a new Numba
        return True


def _groups(algo: str, model_type: str, devel: bool, structure: Structure
            ) -> Iterable[tuple[int, Kernels]]:
    """The groups of kernels a training runs (imported only when asked): the counting
    kernels, then the structure's (:meth:`Structure.kernels`)."""
    yield COUNTING, _counting
    yield from structure.kernels(algo, model_type, devel)


def _attribute_groups(groups: Iterable[tuple[int, Kernels]]
                      ) -> Iterable[tuple[int, Kernels]]:
    """The training's groups with the counting kernels of an attribute corpus."""
    for seconds, kernels in groups:
        yield (ATTRIBUTE_COUNTING, _attribute_counting) if kernels is _counting \
            else (seconds, kernels)


def _attribute_counting() -> list[tuple[object, ...]]:
    from crfkit.kernels import valued as values

    return [(values.label_totals,), (values.path_totals,)]


def _counting() -> list[tuple[object, ...]]:
    from crfkit.features import intern

    return [(intern.intern_rows,), (intern.observed_pairs,)]
