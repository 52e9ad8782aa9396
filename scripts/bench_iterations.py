"""Per-iteration figures of ``scripts/bench.py``: each tool's own progress log,
the extrapolated time to convergence, the floating-point work per iteration and
the plot.

Seconds per iteration come from each tool's own log, one figure per iteration:

crfkit
    the cumulative ``time=`` of its progress lines (from the start of L-BFGS).
Wapiti
    the per-iteration ``time=ITER/TOTAL`` of its progress lines (wall clock,
    including its error-rate report on the training data).
CRF++
    the arrival times of its ``iter=`` lines (it prints no times; each line is
    flushed). A line is an objective evaluation, line-search trials included,
    and the first line's duration includes reading the corpus, so it is unknown.
CRFsuite
    the arrival times of its ``Seconds required for this iteration`` messages
    (wall clock; its own figures are CPU time of one thread).

The steady figure is the mean of iterations 2 to 4: the first iteration
carries one-off costs (memory first touched, CRF++'s reading).

The work per iteration is an estimate of what any first-order CRF trainer must
compute, the same for every tool: a forward, a backward and a pairwise-marginal
pass, each an L x L multiply-add (2 floating-point operations) per token, plus
one multiply-add per weight (observations x labels) for the gradient:
``2 * 3 * T * L^2 + 2 * O * L``. Scoring the tokens' features, exponentials and
L-BFGS's vector updates are left out: the figure is a floor, so the fraction of
the machine's peak it gives is a floor too. The peak is measured, not read
from the CPU model: the best of a few float64 matrix products by numpy's BLAS
on all cores (what this machine can really sustain; a nominal
clock x vector width figure is higher and unreachable here).
"""

from __future__ import annotations

import os
import re
import statistics
import tempfile
import time
from pathlib import Path

STEADY = (2, 3, 4)  # the iterations whose mean is the steady s / iteration
PASSES = 3  # forward, backward, pairwise marginals
FLOPS_PER_MULTIPLY_ADD = 2
LOG_SCALE_SPREAD = 20  # the plot's y axis is logarithmic beyond this max / min ratio

_CRFKIT_PROGRESS = re.compile(r"^\s*\[\s*(\d+)\] obj=\S+.* time=\s*([\d.]+)s", re.MULTILINE)
_WAPITI_TIME = re.compile(r"^\s*\[\s*(\d+)\] obj=.* time=([\d.]+)s/", re.MULTILINE)


def durations(ends: list[float], start: float | None = None) -> list[float | None]:
    """Per-iteration seconds from the times iterations ended (``start``: when the first began)."""
    previous = [start, *ends[:-1]]
    return [None if before is None else end - before for before, end in zip(previous, ends,
                                                                             strict=True)]


def crfkit_iteration_s(stderr: str) -> list[float | None]:
    """crfkit: differences of the cumulative ``time=`` of its progress lines."""
    ends = [float(seconds) for _, seconds in _CRFKIT_PROGRESS.findall(stderr)]
    return durations(ends, 0.0)


def wapiti_iteration_s(output: str) -> list[float | None]:
    """Wapiti: the first figure of ``time=ITER/TOTAL`` on each progress line."""
    return [float(seconds) for _, seconds in _WAPITI_TIME.findall(output)]


def steady_s_per_iteration(iteration_s: list[float | None]) -> float | None:
    """Mean seconds of iterations 2-4 (those present), None without any."""
    known = [iteration_s[i - 1] for i in STEADY
             if i <= len(iteration_s) and iteration_s[i - 1] is not None]
    return statistics.fmean(known) if known else None


def add_steady(result: dict, iteration_s: list[float | None]) -> None:
    """Store a tool's per-iteration seconds and the steady figure in its result."""
    result["iteration_s"] = iteration_s
    result["s_per_iteration_2_4"] = steady_s_per_iteration(iteration_s)


def extrapolate(result: dict, target_iterations: int) -> None:
    """Converged training time of a run stopped early: the rest at its steady rate.

    ``converged_train_s`` = measured ``train_wall_s`` (the same figure a tool
    that converged reports) + (target - done) x s/iteration (2-4);
    ``extrapolated_from`` records the iterations it was based on.
    """
    done, rate = result.get("iterations"), result.get("s_per_iteration_2_4")
    wall = result.get("train_wall_s")
    if not done or rate is None or wall is None:
        return
    result["converged_train_s"] = wall + max(target_iterations - done, 0) * rate
    result["extrapolated_from"] = done
    result["extrapolated_to"] = target_iterations


def flops_per_iteration(tokens: int, labels: int, observations: int | None) -> float:
    """Floating-point operations one iteration needs at least (module docstring)."""
    passes = FLOPS_PER_MULTIPLY_ADD * PASSES * tokens * labels * labels
    gradient = FLOPS_PER_MULTIPLY_ADD * (observations or 0) * labels
    return float(passes + gradient)


def measure_peak_gflops(size: int = 1024, runs: int = 5) -> float:
    """Best float64 matrix-product rate of numpy's BLAS on all cores (GFLOP/s)."""
    import numpy as np

    rng = np.random.default_rng(0)
    a, b = rng.random((size, size)), rng.random((size, size))
    a @ b  # the BLAS threads start and the pages are touched once
    best = float("inf")
    for _ in range(runs):
        started = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - started)
    return 2.0 * size ** 3 / best / 1e9


def add_peak_fraction(result: dict | None, flops: float, peak_gflops: float | None) -> None:
    """Achieved GFLOP/s at the steady s / iteration, and its fraction of the peak (%)."""
    rate = (result or {}).get("s_per_iteration_2_4")
    if result is None or not rate:
        return
    result["gflops_per_s"] = flops / rate / 1e9
    if peak_gflops:
        result["peak_percent"] = 100.0 * result["gflops_per_s"] / peak_gflops


def format_iterations(sides: dict[str, dict | None], shown: int = 4) -> str:
    """Seconds of iterations 1..shown of every tool, from its own log."""
    header = f"{'s / iteration (own log)':<30}" + "".join(f"{'it ' + str(i):>10}"
                                                          for i in range(1, shown + 1))
    lines = [header + f"{'mean 2-4':>12}"]
    for name, result in sides.items():
        if not result or "iteration_s" not in result:
            continue
        times = result["iteration_s"][:shown]
        cells = ["-" if t is None else f"{t:.3f}" for t in times]
        cells += ["-"] * (shown - len(cells))
        steady = result.get("s_per_iteration_2_4")
        lines.append(f"{name:<30}" + "".join(f"{c:>10}" for c in cells)
                     + f"{'-' if steady is None else f'{steady:.3f}':>12}")
    return "\n".join(lines)


def write_plot(path: Path, sides: dict[str, dict | None], title: str) -> bool:
    """A PNG bar chart of each tool's s / iteration (2-4); False without matplotlib.

    Written to a temporary file beside ``path`` and renamed, so an interrupted
    run never leaves half a PNG.
    """
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    names = [n for n, r in sides.items() if r and r.get("s_per_iteration_2_4") is not None]
    values = [sides[n]["s_per_iteration_2_4"] for n in names]
    fig, ax = plt.subplots(figsize=(6, 3.5), dpi=120)
    bars = ax.bar(names, values, color="#4c72b0")
    ax.bar_label(bars, labels=[f"{v:.3g} s" for v in values], padding=2)
    if values and max(values) > LOG_SCALE_SPREAD * min(values):
        ax.set_yscale("log")  # tools a hundred times apart stay readable
    ax.set_ylabel("seconds per iteration (mean of 2-4)")
    ax.set_title(title, fontsize=9)
    ax.margins(y=0.15)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temp = tempfile.mkstemp(prefix=path.name, suffix=".png", dir=path.parent)
    os.close(handle)
    try:
        fig.savefig(temp, format="png")
        os.replace(temp, path)
    finally:
        plt.close(fig)
        Path(temp).unlink(missing_ok=True)
    return True
