"""What the command-line process changes in Numba before it runs a command.

Library users keep Numba's defaults; a ``crfkit`` process knows that its
kernels call no BLAS and that a warm run only loads kernels, so:

* Numba's first compilation imports scipy (about 1 s) only to look for BLAS,
  which crfkit's kernels never use: the process says there is none;
* cache lookups skip Numba's compiler set-up on a hit
  (:mod:`crfkit.kernels.cacheload`), installed when Numba is first imported, so
  that a command that never needs Numba (``crfkit label`` of a small file) still
  does not import it.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from collections.abc import Callable


def prepare_process() -> None:
    """Set the command line's Numba habits up for this process (once)."""
    sys.modules.setdefault("scipy.linalg.cython_blas", None)
    if "numba" in sys.modules:
        _install_cache_loads()
    elif not any(isinstance(f, _AfterImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterImport("numba", _install_cache_loads))


def _install_cache_loads() -> None:
    from crfkit.kernels import cacheload

    cacheload.install()


class _AfterImport(importlib.abc.MetaPathFinder):
    """Runs ``then`` right after the first import of the top-level module ``name``."""

    def __init__(self, name: str, then: Callable[[], None]) -> None:
        self.name, self.then = name, then

    def find_spec(self, fullname: str, path: object = None, target: object = None):
        if fullname != self.name:
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(fullname)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        run_module, then = spec.loader.exec_module, self.then

        def exec_module(module: object) -> None:
            run_module(module)
            then()

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec
