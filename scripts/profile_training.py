"""Where a crf training's wall time goes: ``crfkit train`` with timers around its phases.

    python scripts/profile_training.py -p patterns/chunking.pat -i 60 \\
        ../shared/data/conll2000/train.txt /tmp/model

takes the arguments of ``crfkit train`` and prints, after the run, each phase's wall
seconds and calls: reading and encoding, the objective's parts per evaluation (the
shared tables, the blocks on threads, summing their gradient rows, the last step),
L-BFGS's vector work, the progress line. ``loss blocks`` adds every block's time over
the threads (CPU seconds, more than the wall time with 2 threads). The kernels'
own split (unigram factors, forward-backward, expectations) needs Numba kernels timed
one by one: the kernel is one compiled function.
"""

from __future__ import annotations

import atexit
import collections
import sys
import threading
import time
from collections.abc import Callable

START = time.perf_counter()
seconds: dict[str, float] = collections.defaultdict(float)
calls: collections.Counter = collections.Counter()
lock = threading.Lock()


def timed(name: str, fn: Callable) -> Callable:
    def wrapper(*args, **kwargs):
        t = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            with lock:
                seconds[name] += time.perf_counter() - t
                calls[name] += 1
    return wrapper


def instrument() -> None:
    from crfkit.kernels import loss, objective
    from crfkit.optim import lbfgs
    from crfkit.training import monitor, train

    seconds["imports"] = time.perf_counter() - START
    o = objective.Objective
    for name, label in (("__call__", "evaluation"), ("shared", "shared tables + factors"),
                        ("fill_blocks", "blocks (wall)"), ("_loss_block", "loss blocks (cpu)")):
        setattr(o, name, timed(label, getattr(o, name)))
    loss.add_blocks = timed("sum of gradient rows", loss.add_blocks)
    objective.finish = timed("finish (L2, dot products)", objective.finish)
    lbfgs._two_loop = timed("l-bfgs two-loop", lbfgs._two_loop)
    lbfgs._trial_point = timed("l-bfgs trial point", lbfgs._trial_point)
    lbfgs._History.push = timed("l-bfgs history push", lbfgs._History.push)
    monitor.Monitor.__call__ = timed("progress line", monitor.Monitor.__call__)
    for name in ("_read", "_encode"):
        setattr(train, name, timed(name.strip("_"), getattr(train, name)))


def report() -> None:
    seconds["whole run"] = time.perf_counter() - START
    for name in sorted(seconds, key=lambda k: -seconds[k]):
        print(f"{name:28s} {seconds[name]:9.3f} s  {calls[name] or '':>6}", file=sys.stderr)


if __name__ == "__main__":
    instrument()
    atexit.register(report)
    from crfkit.cli import main

    sys.argv[0] = "crfkit"
    sys.argv.insert(1, "train")
    main()
