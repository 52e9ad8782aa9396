"""Code to run right after Numba is first imported, without importing it.

Why: ``import crfkit`` and ``crfkit label`` of a small file never load Numba
(a few tenths of a second), but a few settings must be in place before the
first crfkit kernel is decorated (:mod:`crfkit.kernels.sourcestamp`) or looked
up in Numba's cache (:mod:`crfkit.kernels.cacheload`). :func:`after_numba`
runs a callback at once if Numba is loaded, else right after its import.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from collections.abc import Callable

_waiting: list[Callable[[], None]] = []
_hidden: set[str] = set()  # modules Numba's own import must not load (hide_from_numba)


def after_numba(then: Callable[[], None]) -> None:
    """Call ``then`` now if Numba is imported, else right after it is (once)."""
    if "numba" in sys.modules:
        then()
        return
    _waiting.append(then)
    _install_finder()


def _install_finder() -> None:
    if not any(isinstance(f, _AfterImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterImport())


def hide_from_numba(*names: str) -> None:
    """Let Numba's import find none of the top-level modules ``names`` (unless one is
    imported already, or Numba is): they become importable again right after it.

    Why: Numba imports scipy only to check its version, and yaml only to read a
    ``.numba_config.yaml``, which a crfkit command never needs (a tenth of Numba's
    import time when they are installed)."""
    if "numba" in sys.modules:
        return
    _hidden.update(names)
    _install_finder()


def _run_waiting() -> None:
    while _waiting:
        _waiting.pop(0)()


class _AfterImport(importlib.abc.MetaPathFinder):
    """Runs the waiting callbacks right after the top-level ``numba`` module executes,
    with the hidden modules unavailable while it does."""

    def find_spec(self, fullname: str, path: object = None, target: object = None):
        if fullname != "numba":
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(fullname)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        run_module = spec.loader.exec_module

        def exec_module(module: object) -> None:
            hidden = [name for name in sorted(_hidden) if name not in sys.modules]
            for name in hidden:
                sys.modules[name] = None  # type: ignore[assignment]  # import raises
            try:
                run_module(module)
            finally:
                for name in hidden:
                    if sys.modules.get(name, 0) is None:
                        del sys.modules[name]
            _run_waiting()

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec
