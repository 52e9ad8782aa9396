"""The reports of ``crfkit eval``: conlleval's text byte for byte, the token table, LaTeX
and JSON.

JSON report (``--format json``)
-------------------------------
The JSON object has these keys (stable; new keys may be added later):

| key | meaning |
| --- | --- |
| `format` | `"crfkit-eval/1"`, the version of this layout |
| `options` | `{"outside": str, "raw": bool, "scheme": str or null}` as used |
| `tokens` | number of tokens (sentence-break lines not counted) |
| `correct_tags` | tokens whose predicted tag equals the gold tag |
| `accuracy` | `100 * correct_tags / tokens` (0 when there are no tokens) |
| `overall` | chunk scores over all types, a *score object* |
| `types` | chunk type → *score object*; gold and predicted types, sorted (see below) |
| `labels` | full tag (e.g. `B-NP`) → token-level *score object* (what `--tokens` prints) |
| `confusion` | with `--confusion`: `{"tags": [...], "matrix": [[...]]}` (tokens; row gold) |
| `chunk_errors` | with `--confusion`: chunk error classes (:mod:`crfkit.evaluation.confusion`) |
| `partial` | with label-set gold tags: `{"mode": "skip" or "count", "tokens": int}` |

Types are sorted by name; `""` is the type of tags without a hyphen.
A *score object* has `precision`, `recall`, `f1` (percentages, 0–100,
unrounded, 0 when undefined), `support` (number of gold chunks or tokens),
`found` (number of predicted ones) and `correct` (number of correct ones).
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from crfkit.evaluation.counts import ChunkCounts, EvalReport

JSON_FORMAT = "crfkit-eval/1"


def format_conlleval(report: EvalReport) -> str:
    """The text report exactly as conlleval prints it (what scripts parse)."""
    o = report.overall
    out = [f"processed {report.tokens} tokens with {o.support} phrases; "
           f"found: {o.found} phrases; correct: {o.correct}.\n"]
    if report.tokens > 0:
        out.append(f"accuracy: {report.accuracy:6.2f}%; precision: {o.precision:6.2f}%; "
                   f"recall: {o.recall:6.2f}%; FB1: {o.f1:6.2f}\n")
    for name in report.listed_types():
        c = report.types[name]
        pad = " " * max(0, 17 - report._width(name))
        out.append(f"{pad}{name}: precision: {c.precision:6.2f}%; recall: {c.recall:6.2f}%; "
                   f"FB1: {c.f1:6.2f}  {c.found}\n")
    return "".join(out)


def _latex_rows(report: EvalReport, rows: Iterable[tuple[str, ChunkCounts]]) -> str:
    out = ["        & Precision &  Recall  & F$_{\\beta=1} \\\\\\hline"]
    for name, c in rows:
        pad = " " * max(0, 7 - report._width(name))
        out.append(f"\n{name}{pad} &  {c.precision:6.2f}\\% & {c.recall:6.2f}\\% & "
                   f"{c.f1:6.2f} \\\\")
    out.append("\\hline\n")
    return "".join(out)


def format_latex(report: EvalReport) -> str:
    """conlleval's ``-l`` output: a LaTeX table body, one row per type plus Overall."""
    rows = [(name, report.types[name]) for name in report.listed_types()]
    o = report.overall
    return _latex_rows(report, rows) + (
        f"Overall &  {o.precision:6.2f}\\% & {o.recall:6.2f}\\% & {o.f1:6.2f} \\\\\\hline\n")


def format_json(report: EvalReport, extra: dict | None = None) -> str:
    """The JSON report (keys documented in the module docstring), newline-terminated;
    ``extra`` adds keys (``--confusion``: ``confusion``, ``chunk_errors``)."""
    document = {
        "format": JSON_FORMAT,
        "options": {"outside": report.outside, "raw": report.raw, "scheme": report.scheme},
        "tokens": report.tokens,
        "correct_tags": report.correct_tags,
        "accuracy": report.accuracy,
        "overall": report.overall.as_dict(),
        "types": {name: c.as_dict() for name, c in report.types.items()},
        "labels": {tag: c.as_dict() for tag, c in report.labels().items()},
        **(extra or {}),
    }
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def format_token_table(report: EvalReport, *, latex: bool = False) -> str:
    """Token-level precision/recall/F1 per full tag (like Wapiti's check mode).

    Chunk scores hide which tags a model confuses; this table shows it. The
    header line differs from conlleval's lines so that report parsers skip it.
    """
    labels = report.labels()
    if latex:
        return _latex_rows(report, labels.items())
    out = [f"token-level scores per tag: {report.tokens} tokens; "
           f"correct: {report.correct_tags}; accuracy: {report.accuracy:6.2f}%\n",
           f"{'tag':>17}  {'precision':>9}  {'recall':>9}  {'F1':>9}  {'gold':>8}  "
           f"{'found':>8}  {'correct':>8}\n"]
    for tag, c in labels.items():
        pad = " " * max(0, 17 - report._width(tag))
        out.append(f"{pad}{tag}  {c.precision:8.2f}%  {c.recall:8.2f}%  {c.f1:9.2f}  "
                   f"{c.support:8d}  {c.found:8d}  {c.correct:8d}\n")
    return "".join(out)
