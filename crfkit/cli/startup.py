"""What the command-line process changes in Numba before it runs a command.

Library users keep Numba's defaults; a ``crfkit`` process knows that its
kernels call no BLAS and that a warm run only loads kernels, so:

* Numba's first compilation imports scipy (about 1 s) only to look for BLAS,
  which crfkit's kernels never use: the process says there is none;
* cache lookups skip Numba's compiler set-up on a hit
  (:mod:`crfkit.kernels.cacheload`), installed when Numba is first imported
  (:mod:`crfkit.numbahook`), so that a command that never needs Numba
  (``crfkit label`` of a small file) still does not import it.
"""

from __future__ import annotations

import sys

from crfkit.numbahook import after_numba


def prepare_process() -> None:
    """Set the command line's Numba habits up for this process (installing the cache
    loads again changes nothing)."""
    sys.modules.setdefault("scipy.linalg.cython_blas", None)
    after_numba(_install_cache_loads)


def _install_cache_loads() -> None:
    from crfkit.kernels import cacheload

    cacheload.install()
