"""Label one large file with crf_test, wapiti label and two crfkit checkouts, alternated.

Each round runs every command once, whole (``/usr/bin/time``: wall, user and system
seconds, peak RSS); the table keeps each command's fastest wall time of the rounds,
with the load averages seen before each round. The crfkit outputs are compared
byte for byte. Models are made beforehand, e.g. on CoNLL-2000 (test.txt repeated
21 times is 994,917 tokens)::

    crfkit train -p patterns/chunking.pat train.txt M
    crf_learn -m 3 -p 1 template train.txt crfpp.model
    wapiti train -t 1 -i 3 -p template train.txt wapiti.model
    python scripts/bench_label_paths.py --input big.txt --model M --crfpp crfpp.model \\
        --wapiti wapiti.model --base /path/to/other/checkout
"""

from __future__ import annotations

import argparse
import filecmp
import os
import subprocess
import sys
import tempfile
from pathlib import Path

PEERS = Path.home() / ".cache/crfkit-peers"
HERE = Path(__file__).resolve().parent.parent


def timed(command: list[str], env: dict[str, str]) -> tuple[float, float, float, int]:
    """(wall, user, system seconds, peak RSS in MB) of one run of ``command``."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as report:
        # run from a neutral directory: `python -m` puts the working directory first on
        # the path, which would make a run from a checkout import that checkout's crfkit
        # whatever PYTHONPATH says
        subprocess.run(["/usr/bin/time", "-o", report.name, "-f", "%e %U %S %M", *command],
                       env=env, check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, cwd=tempfile.gettempdir())
        wall, user, system, rss = report.read().split()[-4:]
    return float(wall), float(user), float(system), int(rss) // 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--input", required=True)
    parser.add_argument("--model", required=True, help="the crfkit model")
    parser.add_argument("--crfpp", required=True, help="crf_learn's model")
    parser.add_argument("--wapiti", required=True, help="wapiti train's model")
    parser.add_argument("--base", required=True, help="the crfkit checkout to compare with")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", default=tempfile.gettempdir())
    a = parser.parse_args()
    for name in ("input", "model", "crfpp", "wapiti"):  # the commands run elsewhere
        setattr(a, name, str(Path(getattr(a, name)).resolve()))
    out = Path(a.out)
    env = dict(os.environ)

    def crfkit(root: Path) -> tuple[list[str], dict[str, str]]:
        name = "base" if root != HERE else "this"
        # the checkout's own command line (`python -m crfkit.cli`: what the installed
        # `crfkit` runs), whichever checkout the installed entry point comes from
        return ([sys.executable, "-m", "crfkit.cli", "label", "-m", a.model, a.input,
                 str(out / f"crfkit-{name}.out")],
                {**env, "PYTHONPATH": str(root)})

    commands = {
        "crf_test": ([str(PEERS / "crfpp-0.59/crf_test"), "-m", a.crfpp, "-o",
                      str(out / "crf_test.out"), a.input], env),
        "wapiti label": ([str(PEERS / "wapiti-1.5.0/wapiti"), "label", "-m", a.wapiti, a.input,
                          str(out / "wapiti.out")], env),
        "crfkit base": crfkit(Path(a.base).resolve()),
        "crfkit this": crfkit(HERE),
    }
    best: dict[str, tuple[float, float, float, int]] = {}
    for r in range(a.rounds):
        print(f"round {r + 1}: load average {os.getloadavg()[0]:.2f} "
              f"{os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}", flush=True)
        for name, (command, command_env) in commands.items():
            got = timed(command, command_env)
            print(f"  {name:13} {got[0]:6.2f} s wall {got[1]:6.2f} user {got[2]:5.2f} sys "
                  f"{got[3]:5d} MB", flush=True)
            if name not in best or got[0] < best[name][0]:
                best[name] = got
    same = filecmp.cmp(out / "crfkit-base.out", out / "crfkit-this.out", shallow=False)
    print(f"crfkit outputs identical: {same}")
    for name, got in best.items():
        print(f"fastest {name:13} {got[0]:6.2f} s")
    this = best["crfkit this"][0]
    print(f"crf_test / this {best['crf_test'][0] / this:.2f}, wapiti / this "
          f"{best['wapiti label'][0] / this:.2f}, base / this "
          f"{best['crfkit base'][0] / this:.2f}")


if __name__ == "__main__":
    main()
