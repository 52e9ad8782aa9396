"""The first training after an install: where its CPU time goes, its wall time when idle.

Runs ``crfkit train`` in this process (arguments as for the command; the
quick start's by default) and splits its CPU seconds: the training process
before it forks the child that compiles the CRF loss kernel
(``crfkit.kernels.aside``), the training process from the fork until it
blocks on the child, the child, and the training process after the child is
done. On an idle 2-core machine the run takes about
``before + max(child, meanwhile) + after`` of wall time, whatever the load
while it was measured. Give it an empty Numba cache to measure a first run::

    NUMBA_CACHE_DIR=$(mktemp -d) python scripts/cold_start.py
    NUMBA_CACHE_DIR=$(mktemp -d) python scripts/cold_start.py -p patterns/chunking.pat train.txt M

A warm cache (or no fork) prints the training process's CPU alone.
"""

from __future__ import annotations

import os
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
QUICK_START = ["-q", "-p", str(ROOT / "patterns" / "address.pat"),
               str(ROOT / "data" / "address-train.txt"), os.devnull]

marks: dict[str, float] = {}
children: set[int] = set()
_real_fork, _real_waitpid = os.fork, os.waitpid


def _fork() -> int:
    pid = _real_fork()
    if pid:
        marks.setdefault("fork", time.process_time())
        children.add(pid)
    return pid


def _waitpid(pid: int, options: int) -> tuple[int, int]:
    """The training process blocks on the child here: note when, and the child's CPU (other
    processes, a subprocess's, pass through)."""
    if pid not in children:
        return _real_waitpid(pid, options)
    marks.setdefault("block", time.process_time())
    reaped, status, usage = os.wait4(pid, options)
    marks["child"] = marks.get("child", 0.0) + usage.ru_utime + usage.ru_stime
    return reaped, status



def main() -> None:
    os.fork, os.waitpid = _fork, _waitpid
    from crfkit.cli import cli
    from crfkit.cli.startup import prepare_process

    prepare_process()  # as crfkit.cli.main does

    start = time.perf_counter()
    try:
        cli.main(["train", *(sys.argv[1:] or QUICK_START)], prog_name="crfkit",
                 standalone_mode=False)
    finally:
        wall = time.perf_counter() - start
        usage = resource.getrusage(resource.RUSAGE_SELF)
        report(usage.ru_utime + usage.ru_stime, wall)


def report(cpu: float, wall: float) -> None:
    if "fork" not in marks or "child" not in marks:
        print(f"training process {cpu:.2f} s CPU (no child), wall {wall:.2f} s")
        return
    before, child = marks["fork"], marks["child"]
    meanwhile = marks["block"] - before
    after = cpu - marks["block"]
    idle = before + max(child, meanwhile) + after
    print(f"CPU (s): before the fork {before:.2f}, meanwhile {meanwhile:.2f}, child {child:.2f}, "
          f"after {after:.2f}; total {cpu + child:.2f}; idle-machine wall {idle:.2f} s "
          f"(measured {wall:.2f} s, load {os.getloadavg()[0]:.2f})")


if __name__ == "__main__":
    main()
