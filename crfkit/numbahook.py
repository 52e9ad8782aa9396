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


def after_numba(then: Callable[[], None]) -> None:
    """Call ``then`` now if Numba is imported, else right after it is (once)."""
    if "numba" in sys.modules:
        then()
        return
    _waiting.append(then)
    if not any(isinstance(f, _AfterImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterImport())


def _run_waiting() -> None:
    while _waiting:
        _waiting.pop(0)()


class _AfterImport(importlib.abc.MetaPathFinder):
    """Runs the waiting callbacks right after the top-level ``numba`` module executes."""

    def find_spec(self, fullname: str, path: object = None, target: object = None):
        if fullname != "numba":
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(fullname)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        run_module = spec.loader.exec_module

        def exec_module(module: object) -> None:
            run_module(module)
            _run_waiting()

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec
