"""Loading cached kernels without Numba's compiler set-up (crfkit.kernels.cacheload),
as the command line does (crfkit.cli.startup): a fresh process loads a kernel that
allocates and hashes strings from the cache and gets its results without loading
Numba's registries, and still compiles what the cache lacks."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.helpers import ROOT

KERNELS = '''
import numpy as np
from numba import njit

@njit(cache=True)
def hash_of(word):
    return hash(word)  # string hashing reads the hash secret

@njit(cache=True)
def squares(n):
    out = np.empty(n, np.int64)  # the runtime allocates it
    for i in range(n):
        out[i] = i * i
    return out

@njit(cache=True)
def never_cached(x):
    return x + 1
'''

FILL = "import kernels; kernels.hash_of('ab'); kernels.squares(4)"
LOAD = '''
import sys
from crfkit.cli.startup import prepare_process
prepare_process()
assert "numba" not in sys.modules
import kernels
assert kernels.hash_of("ab") == hash("ab")
assert list(kernels.squares(4)) == [0, 1, 4, 9]
assert kernels.hash_of.stats.cache_hits and kernels.squares.stats.cache_hits, "compiled"
assert "numba.np.arraymath" not in sys.modules, "the registries were loaded"
assert kernels.never_cached(41) == 42
print("ok")
'''


def test_a_fresh_process_loads_cached_kernels_without_the_registries(tmp_path: Path) -> None:
    (tmp_path / "kernels.py").write_text(KERNELS, encoding="utf-8")
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache"),
           "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)]),
           "PYTHONHASHSEED": "7"}  # both processes hash alike; the loaded code must read it

    def run(code: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp_path,
                              capture_output=True, text=True, timeout=120)

    filled = run(FILL)
    assert filled.returncode == 0, filled.stderr
    loaded = run(LOAD)
    assert loaded.returncode == 0, loaded.stderr
    assert loaded.stdout.strip() == "ok"
