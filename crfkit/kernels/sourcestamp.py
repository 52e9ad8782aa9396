"""One source stamp for every crfkit kernel in Numba's cache: the package's whole source.

Why: Numba keys a cached kernel to the source of the file defining it (a hash of
its bytes), but the kernel's machine code also holds the callees it inlined from
other files. After a change to a callee's file alone (a ``git pull`` into an
editable install, an edit), the caller's cached version, compiled with the old
callee, would still be loaded: results from code that is no longer there. Here
every kernel under ``crfkit/`` carries the hash of all of crfkit's Python source
instead, so any change to it compiles each kernel again, once. The command line
(``crfkit/cli/``) is left out: no other module imports it, so no kernel's code can
depend on it, and editing it need not compile every kernel again.

Installed right after Numba's first import (``crfkit/__init__.py``), before a
crfkit kernel is decorated; functions outside the package keep Numba's own
stamps. The cache files stay where Numba puts them. If Numba's cache locators
are not where this expects them, nothing is installed and Numba's per-file
stamps stay.
"""

from __future__ import annotations

import hashlib
import os
from functools import cache
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent
LEFT_OUT = ("cli",)  # the package's folders no kernel can depend on (module docstring)


def tree_stamp(root: Path, left_out: tuple[str, ...] = ()) -> bytes:
    """The SHA-256 of every ``*.py`` file under ``root`` (``__pycache__`` and the top
    folders ``left_out`` left out): relative names and bytes, in name order."""
    names = []
    for folder, subfolders, files in os.walk(root):
        skip = {"__pycache__", *(left_out if folder == str(root) else ())}
        subfolders[:] = [d for d in subfolders if d not in skip]
        names += [os.path.relpath(os.path.join(folder, f), root) for f in files
                  if f.endswith(".py")]
    digest = hashlib.sha256()
    for name in sorted(names):
        digest.update(Path(name).as_posix().encode("utf-8") + b"\0")
        digest.update((root / name).read_bytes())
        digest.update(b"\0")
    return digest.digest()


@cache
def package_stamp() -> bytes:
    """:func:`tree_stamp` of the crfkit package, read once a process."""
    return tree_stamp(PACKAGE, LEFT_OUT)


def install() -> None:
    """Put the package locators first in Numba's list (once)."""
    try:
        from numba.core import caching

        classes = caching.CacheImpl._locator_classes
        bases = [caching.UserProvidedCacheLocator, caching.InTreeCacheLocator,
                 caching.UserWideCacheLocator]
    except AttributeError:  # another Numba's internals
        return
    if not any(getattr(c, "crfkit_package", False) for c in classes):
        classes[:0] = [_package_locator(base) for base in bases]


def _package_locator(base: type) -> type:
    """``base`` for files inside crfkit, stamped with :func:`package_stamp`."""
    inside = str(PACKAGE) + os.sep

    class PackageLocator(base):  # type: ignore[valid-type, misc]
        crfkit_package = True

        @classmethod
        def from_function(cls, py_func, py_file):
            if not os.path.realpath(py_file).startswith(inside):
                return None
            return super().from_function(py_func, py_file)

        def get_source_stamp(self) -> object:
            try:
                return package_stamp()
            except OSError:  # a source file that cannot be read: the file's own stamp
                return super().get_source_stamp()

    PackageLocator.__name__ = PackageLocator.__qualname__ = f"Package{base.__name__}"
    return PackageLocator
