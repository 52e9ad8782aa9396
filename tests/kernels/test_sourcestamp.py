"""Every crfkit kernel in Numba's cache carries the stamp of the package's whole source
(crfkit.kernels.sourcestamp): a change to a callee's file alone compiles its callers again,
where Numba's own per-file stamps would load them with the old callee inlined."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from crfkit.kernels.sourcestamp import LEFT_OUT, PACKAGE, package_stamp, tree_stamp

CALLEE = '''
from numba import njit

@njit(cache=True)
def answer():
    return {value}
'''

CALLER = '''
from numba import njit

from crfkit.kernels.probe_callee import answer

@njit(cache=True)
def ask():
    return answer()  # inlined into ask's machine code
'''

ASK = "from crfkit.kernels.probe_caller import ask; print(ask(), ask.stats.cache_hits)"


def test_a_callee_changed_in_its_own_file_is_compiled_into_its_caller(tmp_path: Path) -> None:
    copy = tmp_path / "crfkit"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "kernels" / "probe_caller.py").write_text(CALLER, encoding="utf-8")
    callee = copy / "kernels" / "probe_callee.py"
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "NUMBA_CACHE_DIR": str(tmp_path / "nc")}

    def ask() -> list[str]:
        run = subprocess.run([sys.executable, "-c", ASK], env=env, cwd=tmp_path,
                             capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stderr
        return run.stdout.strip().split(maxsplit=1)

    callee.write_text(CALLEE.format(value=1), encoding="utf-8")
    assert ask() == ["1", "Counter()"]  # compiled
    assert ask() == ["1", "Counter({(): 1})"]  # loaded from the cache
    callee.write_text(CALLEE.format(value=2), encoding="utf-8")
    assert ask() == ["2", "Counter()"]  # the caller's file is unchanged: compiled again


def test_a_kernel_is_cached_where_numba_puts_it_with_the_package_stamp() -> None:
    from crfkit.kernels import fusedpath

    cache = fusedpath.batch_paths._cache
    assert cache._cache_file._source_stamp == package_stamp() == tree_stamp(PACKAGE, LEFT_OUT)
    folder = Path(cache._cache_path)
    given = os.environ.get("NUMBA_CACHE_DIR")
    assert folder == PACKAGE / "kernels" / "__pycache__" if not given \
        else folder.is_relative_to(given)


def test_the_stamp_follows_every_source_file_and_only_those(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "sub" / "b.py").write_text("y = 2\n")
    first = tree_stamp(tmp_path)
    (tmp_path / "__pycache__").mkdir()
    (tmp_path / "__pycache__" / "c.py").write_text("stale")
    (tmp_path / "notes.txt").write_text("not source")
    os.utime(tmp_path / "a.py", (0, 0))
    assert tree_stamp(tmp_path) == first
    (tmp_path / "sub" / "b.py").write_text("y = 3\n")
    changed = tree_stamp(tmp_path)
    assert changed != first
    (tmp_path / "sub" / "b.py").rename(tmp_path / "sub" / "c.py")
    assert tree_stamp(tmp_path) not in (first, changed)


def test_a_folder_left_out_at_the_top_only(tmp_path: Path) -> None:
    (tmp_path / "cli").mkdir()
    (tmp_path / "kernels" / "cli").mkdir(parents=True)
    (tmp_path / "cli" / "a.py").write_text("x = 1\n")
    (tmp_path / "kernels" / "cli" / "b.py").write_text("y = 1\n")
    first = tree_stamp(tmp_path, ("cli",))
    (tmp_path / "cli" / "a.py").write_text("x = 2\n")
    assert tree_stamp(tmp_path, ("cli",)) == first
    assert tree_stamp(tmp_path) != tree_stamp(tmp_path, ("cli",))
    (tmp_path / "kernels" / "cli" / "b.py").write_text("y = 2\n")
    assert tree_stamp(tmp_path, ("cli",)) != first


def test_an_unreadable_source_falls_back_to_the_kernels_own_file_stamp(monkeypatch) -> None:
    from numba.core import caching

    from crfkit.kernels import fusedpath, sourcestamp

    def unreadable() -> bytes:
        raise PermissionError("a source file cannot be read")

    monkeypatch.setattr(sourcestamp, "package_stamp", unreadable)
    kernel = fusedpath.batch_paths
    locator = type(kernel._cache._impl.locator).from_function(kernel.py_func, fusedpath.__file__)
    own = caching._SourceFileBackedLocatorMixin.get_source_stamp(locator)
    assert locator.get_source_stamp() == own != package_stamp()
