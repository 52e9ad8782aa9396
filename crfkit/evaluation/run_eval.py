"""The ``crfkit eval`` command: read, check the scheme, score, format, analyse, draw.

The scoring itself is :mod:`crfkit.evaluation.scoring` (conlleval's rules and report);
the error analysis :mod:`crfkit.evaluation.confusion`; the plots :mod:`crfkit.evaluation.report`
(imported only when asked, so plain ``eval`` never loads matplotlib).
"""

from __future__ import annotations

import sys
from typing import IO

from crfkit.errors import InputError, UsageError
from crfkit.evaluation.confusion import chunk_errors, confusion_document, format_confusion
from crfkit.evaluation.formatting import (
    format_conlleval,
    format_json,
    format_latex,
    format_token_table,
)
from crfkit.evaluation.partial import PartialTagError, ResolvedTags, resolve_partial
from crfkit.evaluation.reading import EvalInput, read_eval_file
from crfkit.evaluation.scoring import check_scheme, evaluate_tags


def run_eval_command(
    input_file: str,
    *,
    delimiter: str | None,
    outside: str,
    raw: bool,
    latex: bool,
    fmt: str,
    tokens: bool,
    scheme: str | None,
    encoding: str | None,
    out: IO[str],
    confusion: bool = False,
    report_dir: str | None = None,
    partial: str = "skip",
) -> None:
    """Body of ``crfkit eval``: read, score, print. Low scores never fail it.

    ``encoding`` None reads any bytes (see the module docstring). The text
    report goes out in the encoding the input was read with, as bytes to
    ``out.buffer`` when there is one, so type names keep their bytes.
    ``confusion`` adds the error analysis of :mod:`crfkit.evaluation.confusion`;
    ``report_dir`` draws it (:func:`crfkit.evaluation.report.eval_report`).
    ``partial``: what partial gold tags mean (:func:`_resolve`).
    """
    _check_options(latex=latex, fmt=fmt, confusion=confusion, raw=raw, scheme=scheme)
    if report_dir is not None:
        from crfkit.evaluation.report import prepare_directory

        prepare_directory(report_dir)
    data = read_eval_file(input_file, delimiter=delimiter, encoding=encoding)
    if scheme is not None:
        check_scheme(data, scheme, outside=outside, partial=partial)
    tags = _resolve(data, partial)
    report = evaluate_tags(tags.gold, tags.pred, outside=outside, raw=raw, scheme=scheme,
                           encoding=data.encoding, partial="literal")
    errors = None
    if confusion or report_dir is not None:
        errors = chunk_errors(tags.gold, tags.pred, outside=outside, raw=raw, scheme=scheme)
    if fmt == "json":
        extra = {"partial": {"mode": partial, "tokens": tags.partial_tokens}} \
            if tags.partial_tokens else {}
        if confusion:
            extra.update(confusion_document(report, errors))
        _write(out, format_json(report, extra), "utf-8")  # JSON text is UTF-8 (RFC 8259)
    else:
        text = format_latex(report) if latex else format_conlleval(report)
        if tokens:
            text += format_token_table(report, latex=latex)
        if confusion:
            text += format_confusion(report, errors)
        _write(out, text, data.encoding)
    if report_dir is not None:
        from crfkit.evaluation.report import eval_report

        for line in eval_report(report_dir, report, errors, data.path):
            sys.stderr.write(line + "\n")


def _check_options(*, latex: bool, fmt: str, confusion: bool, raw: bool,
                   scheme: str | None) -> None:
    """Refuse the options that exclude each other, one line each."""
    if latex and fmt == "json":
        raise UsageError("--latex and --format json exclude each other")
    if latex and confusion:
        raise UsageError("--confusion prints text or JSON, not LaTeX: drop -l or --confusion")
    if raw and scheme is not None:
        raise UsageError("--scheme describes prefixed tags; -r reads tags without prefixes")


def _resolve(data: EvalInput, partial: str) -> ResolvedTags:
    """The tags to score, partial gold tags resolved (:mod:`crfkit.evaluation.partial`;
    a malformed set is an error at its line). When there are some, a note on stderr
    says how many (the report keeps conlleval's lines for the scripts that parse them);
    the JSON report has them under ``partial``."""
    try:
        tags = resolve_partial(data.gold, data.pred, partial)
    except PartialTagError as err:
        raise InputError(str(err), path=data.path, line=data.first_line + err.index) from None
    if tags.partial_tokens:
        verb = "left out" if partial == "skip" else "scored against their label sets"
        sys.stderr.write(f"crfkit eval: {tags.partial_tokens} tokens with a partial gold "
                         f"label {verb} (--partial {partial})\n")
    return tags


def _write(out: IO[str], text: str, encoding: str) -> None:
    """Write ``text`` encoded as ``encoding`` to ``out``'s byte buffer, else as text."""
    buffer = getattr(out, "buffer", None)
    if buffer is None:
        out.write(text)
        out.flush()
        return
    out.flush()
    buffer.write(text.encode(encoding, "surrogateescape"))
    buffer.flush()
