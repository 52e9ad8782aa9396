"""Draw the benchmarks page's plot from the figures recorded on that page.

    python scripts/plot_benchmarks.py [OUT.png]     (default: docs/img/bench-peers.png)

The numbers below are copied from docs/benchmarks.md (CoNLL-2000,
patterns/chunking.pat, the 2-core machine): training wall time against
python-crfsuite (the converged ``scripts/bench.py`` runs), seconds per
iteration of the four tools (the same run) and labelling speed
on the 994,917-token file (``scripts/bench_label_paths.py``: crfkit, ``crf_test``,
``wapiti label``). Change them there and here together.
Needs matplotlib (``pip install 'crfkit[plot]'``).
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOOLS = ("crfkit", "crfsuite", "CRF++", "Wapiti")
TRAINING_WALL = {"crfkit": [14.66, 13.73, 13.98, 14.49],
                 "crfsuite": [67.49, 64.03, 61.47, 60.33]}
SECONDS_PER_ITERATION = {"crfkit": 0.0706, "crfsuite": 0.3461, "CRF++": 3.025, "Wapiti": 1.383}
LABELLING_TOKENS_PER_S = {"crfkit": round(994_917 / 0.68), "CRF++": round(994_917 / 6.74),
                          "Wapiti": round(994_917 / 8.03)}
COLOURS = {"crfkit": "tab:blue", "crfsuite": "tab:orange", "CRF++": "tab:green",
           "Wapiti": "tab:red"}


def bars(axes, values: dict[str, float], title: str, unit: str, fmt: str) -> None:
    """One horizontal bar a tool, its value written at the bar's end."""
    names = [tool for tool in TOOLS if tool in values]
    numbers = [values[name] for name in names]
    axes.barh(names, numbers, color=[COLOURS[name] for name in names])
    axes.invert_yaxis()
    axes.set_title(title)
    axes.set_xlabel(unit)
    for row, number in enumerate(numbers):
        axes.text(number, row, " " + format(number, fmt), va="center")
    axes.set_xlim(0, max(numbers) * 1.3)


def main(out: Path) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(12, 3.2), layout="constrained")
    FigureCanvasAgg(figure)
    left, middle, right = figure.subplots(1, 3)
    wall = {tool: statistics.median(runs) for tool, runs in TRAINING_WALL.items()}
    bars(left, wall, "training, converged (lower: better)", "seconds", ".1f")
    bars(middle, SECONDS_PER_ITERATION, "one iteration (lower: better)", "seconds",
         ".3f")
    thousands = {tool: value / 1000 for tool, value in LABELLING_TOKENS_PER_S.items()}
    bars(right, thousands, "labelling (higher: better)",
         "thousand tokens per second", ".0f")
    figure.savefig(out, dpi=100)
    print(f"written {out}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs/img/bench-peers.png")
