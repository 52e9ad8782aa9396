"""A warm command of two crfkit checkouts, alternated: its CPU and wall seconds, fastest and median.

Start-up costs are a few tenths of a second, less than the noise of a shared
machine, so each round runs the command once under each checkout (``PYTHONPATH``,
its own directory, its own Numba cache and bytecode directory, filled by a first
run that is not counted), and the figures compared are the fastest and the median
of the rounds, with the load averages seen. The outputs are compared byte for
byte::

    python scripts/bench_startup.py --base /path/to/other/checkout --rounds 6
    python scripts/bench_startup.py --base /path/to/other/checkout -- \\
        label -m M big.txt {out}

The command is ``crfkit`` with the arguments after ``--`` (``{out}``: the output
file); the README's quick-start training by default.
"""

from __future__ import annotations

import argparse
import filecmp
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
QUICK_START = ["train", "-p", "patterns/address.pat", "data/address-train.txt", "{out}"]


def timed(command: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """(user + system, wall) seconds of one run of ``command``."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as report:
        subprocess.run(["/usr/bin/time", "-o", report.name, "-f", "%e %U %S", *command],
                       cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        wall, user, system = map(float, report.read().split()[-3:])
    return user + system, wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base", required=True, help="the crfkit checkout to compare with")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--work", default=None, help="directory for caches and outputs")
    parser.add_argument("arguments", nargs="*", help="crfkit's arguments ({out}: the output)")
    a = parser.parse_args()
    work = Path(a.work or tempfile.mkdtemp(prefix="bench_startup."))
    trees = {"base": Path(a.base).resolve(), "this": HERE}
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}

    def run(name: str) -> tuple[float, float]:
        out = str(work / f"{name}.out")
        # the checkout's own command line (what the installed `crfkit` runs)
        command = [sys.executable, "-m", "crfkit.cli",
                   *[arg.replace("{out}", out) for arg in a.arguments or QUICK_START]]
        return timed(command, trees[name], {**env, "PYTHONPATH": str(trees[name]),
                                            "NUMBA_CACHE_DIR": str(work / f"numba-{name}"),
                                            "PYTHONPYCACHEPREFIX": str(work / f"pyc-{name}")})

    for name in trees:  # fill the caches
        run(name)
    seen: dict[str, list[tuple[float, float]]] = {name: [] for name in trees}
    for r in range(a.rounds):
        for name in trees:
            seen[name].append(run(name))
        print(f"round {r + 1}: " + ", ".join(f"{n} {v[-1][0]:.2f} s CPU {v[-1][1]:.2f} s wall"
                                             for n, v in seen.items())
              + f"; load {os.getloadavg()[0]:.2f}", flush=True)
    for name, runs in seen.items():
        cpu, wall = [r[0] for r in runs], [r[1] for r in runs]
        print(f"{name}: CPU fastest {min(cpu):.2f} s, median {statistics.median(cpu):.2f} s; "
              f"wall fastest {min(wall):.2f} s, median {statistics.median(wall):.2f} s")
    same = filecmp.cmp(work / "base.out", work / "this.out", shallow=False)
    print(f"outputs identical: {same}")


if __name__ == "__main__":
    main()
