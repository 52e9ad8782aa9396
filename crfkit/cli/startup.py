"""What the command-line process changes in Numba before it runs a command.

Library users keep Numba's defaults; a ``crfkit`` process knows that its
kernels call no BLAS and that a warm run only loads kernels, so:

* Numba's first compilation imports scipy (about 1 s) only to look for BLAS,
  which crfkit's kernels never use: the process says there is none;
* Numba's import does not load scipy (only to check its version) or yaml (only
  for a ``.numba_config.yaml``, which is read when the working directory has
  one): a tenth of its import time when they are installed;
* cache lookups skip Numba's compiler set-up on a hit
  (:mod:`crfkit.kernels.cacheload`), installed when Numba is first imported
  (:mod:`crfkit.numbahook`), so that a command that never needs Numba
  (``crfkit label`` of a small file) still does not import it.
"""

from __future__ import annotations

import os
import sys

from crfkit.numbahook import after_numba, hide_from_numba

# Numba reads this file from the working directory when yaml is importable
NUMBA_CONFIG_FILE = ".numba_config.yaml"


def prepare_process() -> None:
    """Set the command line's Numba habits up for this process (installing the cache
    loads again changes nothing)."""
    sys.modules.setdefault("scipy.linalg.cython_blas", None)
    hide_from_numba("scipy", *(() if os.path.isfile(NUMBA_CONFIG_FILE) else ("yaml",)))
    after_numba(_install_cache_loads)


def _install_cache_loads() -> None:
    from crfkit.kernels import cacheload

    cacheload.install()
