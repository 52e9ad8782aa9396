"""Reports of a run: the per-iteration log as CSV and JSON, PNG plots, one HTML page.

``crfkit train --report DIR``, ``crfkit tune --report DIR`` and ``crfkit eval
--report DIR`` write here. Users pasted progress lines into spreadsheets to
see whether a training converged; the log holds the same values, unrounded,
one row per iteration, and the plots show them.

Plots need matplotlib, an optional extra (``pip install 'crfkit[plot]'``).
It is imported only inside the plotting functions, and only its object API is
used (a ``Figure`` on an Agg canvas, never ``pyplot``): no window, no global
backend switched under a program that embeds crfkit. Without matplotlib the
CSV and JSON files are still written, and the command says in one line how
to get the plots.

Files (every one written atomically; DIR is created if missing):

* ``iterations.csv`` / ``iterations.json``: the log (columns in :data:`LOG_COLUMNS`);
* ``report.json``: the settings and, for ``tune``, the strengths scored;
* ``*.png``: the plots; ``index.html``: one page showing the settings and
  every plot (PNG data embedded as base64, so the page is one file to mail).
"""

from __future__ import annotations

import base64
import csv
import html
import importlib.util
import io
import json
import math
import os
import sys
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from crfkit.errors import UsageError
from crfkit.io.atomic import atomic_output, check_writable

__all__ = ["LOG_COLUMNS", "PLOT_HINT", "Report", "plots_available", "prepare_directory"]

REPORT_FORMAT = "crfkit-report/1"
PLOT_HINT = "pip install 'crfkit[plot]'"

LOG_COLUMNS = ("iteration", "objective", "gradient_norm", "token_error", "sequence_error",
               "seconds", "iteration_seconds", "devel_error", "devel_f1")
"""The log's columns. Errors and F1 are percentages, ``seconds`` counts from the
optimiser's start (as the progress line), ``iteration_seconds`` is this iteration's
share. ``gradient_norm`` is empty for sgd-l1 and ap, devel values without ``-d``."""

FIGURE_SIZE = (6.4, 3.6)  # inches; at DPI a plot is 640 x 360 pixels, 20-40 KB
DPI = 100


def plots_available() -> bool:
    """Whether matplotlib can be imported (without importing it)."""
    if "matplotlib" in sys.modules:  # imported, or blocked (None) as the tests do
        return sys.modules["matplotlib"] is not None
    try:
        return importlib.util.find_spec("matplotlib") is not None
    except (ImportError, ValueError):
        return False


def prepare_directory(path: str) -> None:
    """Create the report directory (and parents) and check it takes files, before work starts."""
    if os.path.exists(path) and not os.path.isdir(path):
        raise UsageError(f"--report: {path!r} exists and is not a directory")
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as err:
        raise UsageError(f"--report: cannot create {path!r}: {err.strerror or err}") from None
    check_writable(os.path.join(path, "index.html"))


def with_iteration_seconds(rows: Sequence[dict]) -> list[dict]:
    """The rows with ``iteration_seconds`` (the time of each iteration) filled in."""
    out, last = [], 0.0
    for row in rows:
        out.append({**row, "iteration_seconds": row["seconds"] - last})
        last = row["seconds"]
    return out


class Report:
    """The files of one report directory; :meth:`finish` writes the page and says what it wrote.

    ``plot``: draw PNG files (None: when matplotlib is available).
    """

    def __init__(self, directory: str, title: str, settings: dict[str, Any], *,
                 plot: bool | None = None) -> None:
        self.directory = directory
        self.title = title
        self.settings = settings
        self.plot = plots_available() if plot is None else plot
        self.written: list[str] = []
        self.figures: list[tuple[str, str, bytes]] = []  # (file name, caption, PNG data)
        self.data: dict[str, Any] = {}

    def path(self, name: str) -> str:
        return os.path.join(self.directory, name)

    def write_text(self, name: str, text: str) -> None:
        with atomic_output(self.path(name)) as out:
            out.write(text)
        self.written.append(name)

    def write_bytes(self, name: str, data: bytes) -> None:
        with atomic_output(self.path(name), binary=True) as out:
            out.write(data)
        self.written.append(name)

    def write_table(self, stem: str, rows: Sequence[dict], columns: Sequence[str]) -> None:
        """``stem.csv`` and ``stem.json``: the rows, floats at full precision, None empty."""
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(columns)
        for row in rows:
            writer.writerow(["" if _missing(row.get(c)) else _cell(row.get(c)) for c in columns])
        self.write_text(f"{stem}.csv", buffer.getvalue())
        clean = [{c: None if _missing(row.get(c)) else row.get(c) for c in columns}
                 for row in rows]
        self.write_text(f"{stem}.json", json.dumps(clean, indent=1) + "\n")

    def write_log(self, rows: Sequence[dict], stem: str = "iterations") -> list[dict]:
        """The per-iteration log (:data:`LOG_COLUMNS`); returns the rows written."""
        full = with_iteration_seconds(rows)
        self.write_table(stem, full, LOG_COLUMNS)
        return full

    def figure(self, name: str, caption: str, draw: Callable[[Any], None]) -> None:
        """Draw one plot with ``draw(figure)`` and keep it as ``name`` (nothing if not plotting)."""
        if not self.plot:
            return
        data = render_png(draw)
        self.write_bytes(name, data)
        self.figures.append((name, caption, data))

    def finish(self) -> list[str]:
        """Write ``report.json`` and ``index.html``; return the lines to tell the user."""
        document = {"format": REPORT_FORMAT, "title": self.title, "settings": self.settings,
                    **self.data}
        self.write_text("report.json", json.dumps(_jsonable(document), indent=1) + "\n")
        self.write_text("index.html", self.html())
        lines = [f"* report written to {self.directory}/ ({len(self.written)} files: "
                 f"{', '.join(sorted(self.written))})"]
        if not self.plot:
            lines.append(f"* no plots: matplotlib is not installed ({PLOT_HINT} to get them)")
        return lines

    def html(self) -> str:
        """One self-contained page: the settings as a table, then every plot."""
        esc = html.escape
        rows = "".join(f"<tr><th>{esc(str(k))}</th><td>{esc(_show(v))}</td></tr>\n"
                       for k, v in self.settings.items())
        parts = [f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
                 f"<title>{esc(self.title)}</title>\n<style>body{{font-family:sans-serif;"
                 f"max-width:60em;margin:2em auto}}th{{text-align:left;padding-right:1em}}"
                 f"img{{max-width:100%}}</style></head><body>\n<h1>{esc(self.title)}</h1>\n"
                 f"<h2>Settings</h2>\n<table>\n{rows}</table>\n"]
        if not self.plot:
            parts.append(f"<p>No plots: matplotlib is not installed "
                         f"(<code>{esc(PLOT_HINT)}</code>).</p>\n")
        for name, caption, data in self.figures:
            encoded = base64.b64encode(data).decode("ascii")
            parts.append(f"<h2>{esc(caption)}</h2>\n<img alt=\"{esc(name)}\" "
                         f"src=\"data:image/png;base64,{encoded}\">\n")
        files = ", ".join(esc(n) for n in sorted(set(self.written) | {"index.html"}))
        parts.append(f"<p>Files: {files}</p>\n</body></html>\n")
        return "".join(parts)


def render_png(draw: Callable[[Any], None]) -> bytes:
    """PNG bytes of a figure drawn by ``draw(figure)`` on matplotlib's Agg canvas."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=FIGURE_SIZE, dpi=DPI, layout="constrained")
    FigureCanvasAgg(figure)
    draw(figure)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=DPI, metadata={"Software": None})
    return buffer.getvalue()


# --- training plots --------------------------------------------------------------------------
def training_plots(report: Report, rows: Sequence[dict], *, prefix: str = "",
                   what: str = "") -> None:
    """Objective and gradient norm, training token error, devel F1 (if any), time per iteration."""
    its = [r["iteration"] for r in rows]
    if not its:
        return
    col = {c: [r.get(c) for r in rows] for c in LOG_COLUMNS}
    has_f1 = not all(_missing(v) for v in col["devel_f1"])
    for name, title, plot, shown in (
            ("objective", "Objective and gradient norm", _objective_plot, True),
            ("token_error", "Token error", _error_plot, True),
            ("devel_f1", "Development chunk F1", _devel_f1_plot, has_f1),
            ("time", "Time per iteration", _timing_plot, True)):
        if shown:
            report.figure(f"{prefix}{name}.png", f"{what}{title}",
                          partial(plot, its=its, col=col, what=what))


def _objective_plot(fig, its: list, col: dict, what: str) -> None:
    has_grad = not all(_missing(v) for v in col["gradient_norm"])
    ax = fig.add_subplot()
    ax.plot(its, col["objective"], color="tab:blue", label="objective")
    ax.set_xlabel("iteration")
    ax.set_ylabel("objective", color="tab:blue")
    if min(col["objective"]) > 0:
        ax.set_yscale("log")
    if has_grad:
        ax2 = ax.twinx()
        ax2.plot(its, col["gradient_norm"], color="tab:red", linewidth=0.8)
        ax2.set_ylabel("gradient norm", color="tab:red")
        ax2.set_yscale("log")
    ax.set_title(f"{what}objective{' and gradient norm' if has_grad else ''}")


def _error_plot(fig, its: list, col: dict, what: str) -> None:
    ax = fig.add_subplot()
    ax.plot(its, col["token_error"], label="training token error")
    if not all(_missing(v) for v in col["devel_error"]):
        ax.plot(its, col["devel_error"], label="devel token error")
    ax.set_xlabel("iteration")
    ax.set_ylabel("token error (%)")
    shown = [v for c in ("token_error", "devel_error") for v in col[c] if not _missing(v)]
    if min(shown) > 0:  # log: the late, small errors stay visible
        ax.set_yscale("log")
    ax.legend()
    ax.set_title(f"{what}token error")


def _devel_f1_plot(fig, its: list, col: dict, what: str) -> None:
    ax = fig.add_subplot()
    ax.plot(its, col["devel_f1"], color="tab:green")
    best = max(range(len(its)), key=lambda i: col["devel_f1"][i])
    ax.plot([its[best]], [col["devel_f1"][best]], "o", color="tab:green")
    ax.annotate(f"best {col['devel_f1'][best]:.2f} (iteration {its[best]})",
                (its[best], col["devel_f1"][best]), textcoords="offset points",
                xytext=(0, -14), ha="right" if best > len(its) / 2 else "left")
    ax.set_xlabel("iteration")
    ax.set_ylabel("devel chunk F1")
    top = max(col["devel_f1"])
    ax.set_ylim(max(0.0, top - 10.0), top + 0.5)  # the early, low values off the scale
    ax.set_title(f"{what}development chunk F1")


def _timing_plot(fig, its: list, col: dict, what: str) -> None:
    ax = fig.add_subplot()
    ax.plot(its, col["iteration_seconds"], color="tab:gray")
    ax.set_xlabel("iteration")
    ax.set_ylabel("seconds")
    ax.set_ylim(bottom=0)
    ax.set_title(f"{what}time per iteration")


def training_report(directory: str, rows: Sequence[dict], settings: dict[str, Any], *,
                    title: str = "crfkit train", plot: bool | None = None) -> list[str]:
    """The report of one training: log, plots, page. Returns the lines to tell the user."""
    report = Report(directory, title, settings, plot=plot)
    full = report.write_log(rows)
    training_plots(report, full)
    return report.finish()


# --- helpers ---------------------------------------------------------------------------------
def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _cell(value: Any) -> str:
    return repr(value) if isinstance(value, float) else str(value)


def _show(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, dict):
        return ", ".join(f"{k}={_show(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return ", ".join(_show(v) for v in value)
    return str(value)


def _jsonable(value: Any) -> Any:
    """NaN and infinity become None: JSON has no such numbers."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


# --- tune ------------------------------------------------------------------------------------
POINT_COLUMNS = ("rho1", "rho2", "f1", "f1_sd", "iterations", "seconds", "nonzero", "likely")
PATH_LOG_COLUMNS = ("rho1", "rho2", "likely", "fold", *LOG_COLUMNS)


def tune_report(directory: str, result: Any, summary: dict[str, Any], *,
                plot: bool | None = None) -> list[str]:
    """The report of ``crfkit tune`` (a :class:`crfkit.training.tune.TuneResult`): the strengths
    scored (``points.csv``, F1 against strength), every path training's iterations
    (``path_iterations.csv``) and the final training's log and plots."""
    settings = {k: v for k, v in summary.items() if k not in ("points", "best")}
    if result.best is not None:
        settings["chosen"] = f"{result.best.strength} (F1 {result.best.f1:.2f})"
    report = Report(directory, "crfkit tune", settings, plot=plot)
    points = [{"rho1": p.strength.rho1, "rho2": p.strength.rho2, "f1": p.f1,
               "f1_sd": _sd(p.fold_f1), "iterations": p.iterations, "seconds": p.seconds,
               "nonzero": p.nonzero, "likely": p.strength.likely or None}
              for p in result.points]
    report.write_table("points", points, POINT_COLUMNS)
    path_rows = [{"rho1": p.strength.rho1, "rho2": p.strength.rho2,
                  "likely": p.strength.likely or None, "fold": fold, **row}
                 for p in result.points for fold, log in enumerate(p.logs, 1)
                 for row in with_iteration_seconds(log)]
    report.write_table("path_iterations", path_rows, PATH_LOG_COLUMNS)
    report.data["points"] = points
    if points:
        report.figure("f1_strength.png", "Chunk F1 against regularisation strength",
                      lambda fig: _draw_f1_strength(fig, points, result))
    if result.final_log:
        full = report.write_log(result.final_log)
        training_plots(report, full, prefix="final_", what="final training: ")
    return report.finish()


def _sd(values: Sequence[float]) -> float | None:
    if len(values) < 2:
        return None
    mean = sum(values) / len(values)
    return math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))


def _draw_f1_strength(fig: Any, points: list[dict], result: Any) -> None:
    """F1 against the strength that varies (L2 unless only L1 does), one line per value of
    the other and feature set (a likely-feature point alone is a marker)."""
    vary, fixed = "rho2", "rho1"
    if len({p["rho2"] for p in points}) == 1 and len({p["rho1"] for p in points}) > 1:
        vary, fixed = "rho1", "rho2"
    ax = fig.add_subplot()
    for value, likely in sorted({(p[fixed], p["likely"] or 0.0) for p in points}):
        line = sorted((p for p in points if p[fixed] == value and (p["likely"] or 0.0) == likely),
                      key=lambda p: p[vary])
        xs = [p[vary] for p in line]
        errors = [p["f1_sd"] or 0.0 for p in line]
        label = f"{fixed} = {value:g}" + (f", likely features {likely:g}" if likely else "")
        ax.errorbar(xs, [p["f1"] for p in line], yerr=errors if any(errors) else None,
                    marker="s" if likely else "o", capsize=3, label=label)
    if min(p[vary] for p in points) > 0:
        ax.set_xscale("log", base=2)
    best = result.best
    if best is not None:
        x = getattr(best.strength, vary)
        ax.plot([x], [best.f1], "*", color="tab:red", markersize=14, label="chosen")
    criterion = "development set" if result.mode == "devel" else "folds pooled"
    ax.set_xlabel(f"{vary} ({'L2' if vary == 'rho2' else 'L1'} strength)")
    ax.set_ylabel(f"chunk F1 ({criterion})")
    ax.legend()
    ax.set_title("F1 against regularisation strength")


# --- eval ------------------------------------------------------------------------------------
def eval_report(directory: str, report: Any, errors: Any, source: str | None, *,
                plot: bool | None = None) -> list[str]:
    """The report of ``crfkit eval --report`` (an :class:`crfkit.evaluation.counts.EvalReport`
    and
    its :class:`crfkit.evaluation.confusion.ChunkErrors`): per-type scores, the confusion matrix as
    CSV and a heat map, per-type precision/recall/F1 bars."""
    from crfkit.evaluation.confusion import confusion_matrix

    settings = {"command": "crfkit eval", "input": source or "<stdin>",
                "tokens": report.tokens, "accuracy": round(report.accuracy, 2),
                "precision": round(report.precision, 2), "recall": round(report.recall, 2),
                "FB1": round(report.f1, 2), **errors.counts}
    out = Report(directory, "crfkit eval", settings, plot=plot)
    types = [{"type": name, **c.as_dict()} for name, c in report.types.items()]
    out.write_table("types", types, ("type", "precision", "recall", "f1", "support", "found",
                                     "correct"))
    tags, matrix = confusion_matrix(report)
    out.write_table("confusion", [{"gold": tag, **dict(zip(tags, row, strict=True))}
                                  for tag, row in zip(tags, matrix.tolist(), strict=True)],
                    ("gold", *tags))
    out.data["chunk_errors"] = errors.as_dict()
    if tags:
        out.figure("confusion.png", "Token confusion (rows gold, columns predicted)",
                   lambda fig: _draw_confusion(fig, tags, matrix))
    if types:
        out.figure("types.png", "Precision, recall and F1 per chunk type",
                   lambda fig: _draw_types(fig, types))
    return out.finish()


def _draw_confusion(fig: Any, tags: list[str], matrix: Any) -> None:
    """A heat map of the counts on a log colour scale (the diagonal dwarfs the errors)."""
    from matplotlib.colors import LogNorm

    n = len(tags)
    side = min(9.0, 2.0 + 0.32 * n)
    fig.set_size_inches(side + 1.2, side)
    ax = fig.add_subplot()
    shown = matrix.astype(float)
    shown[shown == 0] = float("nan")  # blank, not the lowest colour
    top = max(1.0, float(matrix.max()))
    image = ax.imshow(shown, cmap="viridis", norm=LogNorm(vmin=1, vmax=top))
    fig.colorbar(image, ax=ax, shrink=0.8, label="tokens")
    ax.set_xticks(range(n), tags, rotation=90, fontsize=7)
    ax.set_yticks(range(n), tags, fontsize=7)
    ax.set_xlabel("predicted")
    ax.set_ylabel("gold")
    if n <= 25:
        for i in range(n):
            for j in range(n):
                if matrix[i, j]:
                    dark = matrix[i, j] < top ** 0.5
                    ax.text(j, i, str(matrix[i, j]), ha="center", va="center", fontsize=5,
                            color="white" if dark else "black")
    ax.set_title("token confusion")


def _draw_types(fig: Any, types: list[dict]) -> None:
    names = [t["type"] or "(none)" for t in types]
    ax = fig.add_subplot()
    width = 0.27
    for k, (key, label) in enumerate((("precision", "precision"), ("recall", "recall"),
                                      ("f1", "F1"))):
        ax.bar([i + (k - 1) * width for i in range(len(names))], [t[key] for t in types],
               width, label=label)
    ax.set_xticks(range(len(names)), names, rotation=45 if len(names) > 8 else 0)
    ax.set_ylabel("%")
    ax.set_ylim(0, 105)
    ax.legend(loc="lower left", fontsize=8)
    ax.set_title("per chunk type")
