"""crfkit eval: conlleval's report, from the tagged output of crfkit label -c."""

from __future__ import annotations

import sys

import click


@click.command("eval", short_help="Score tagged output exactly like conlleval.")
@click.argument("input_file", metavar="[FILE]", default="-", type=click.Path(allow_dash=True))
@click.option("-d", "--delimiter", default=None, help="Field delimiter (default: any whitespace).")
@click.option("-o", "--outside", "outside", default="O", show_default=True,
              help="The tag that marks tokens outside any chunk (read with -r or --scheme).")
@click.option("-r", "--raw", is_flag=True,
              help="Raw tags: every non-outside tag is a one-word chunk.")
@click.option("-l", "--latex", is_flag=True, help="Print a LaTeX table instead of the text report.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
              show_default=True, help="Report format; json has stable keys (see README).")
@click.option("--tokens", is_flag=True, help="Also print per-label token precision/recall/F1.")
@click.option("--scheme", type=click.Choice(["iob1", "iob2", "iobes"]), default=None,
              help="Tagging scheme: stop at the first line whose gold or predicted tag breaks "
                   "its transition rules (-o is the outside tag); iobes also adds the IOBES "
                   "chunk rules conlleval lacks (default: conlleval's rules exactly).")
@click.option("--encoding", default=None,
              help="Text encoding of FILE, decoded strictly; the report is written in it. "
                   "Default: byte for byte as conlleval: UTF-8, or Latin-1 (any bytes) for "
                   "input that is not valid UTF-8.")
@click.option("--confusion", is_flag=True,
              help="Also print the token confusion matrix and the chunk error classes "
                   "(wrong type, wrong boundary, missed, spurious).")
@click.option("--report", "report_dir", default=None, metavar="DIR",
              help="Draw the confusion matrix and per-type P/R/F1 into DIR (PNG, HTML; "
                   "needs matplotlib: pip install 'crfkit[plot]').")
@click.option("--partial", type=click.Choice(["skip", "count", "literal"]), default="skip",
              show_default=True,
              help="Gold tags that are label sets ('?' any label, 'A|B' one of these): "
                   "skip leaves their tokens out (each acts as a sentence break); count "
                   "scores them, right when the prediction is in the set; literal reads "
                   "them as ordinary tags, as conlleval does.")
def eval_command(input_file, delimiter, outside, raw, latex, fmt, tokens, scheme, encoding,
                 confusion, report_dir, partial) -> None:
    """Score tagged output like conlleval: the last two columns are gold and predicted tags.

    FILE defaults to stdin ('-'), so 'crfkit label -c ... | crfkit eval' works;
    'crfkit label -s' output is read too (its '# LOGPROB' lines and /PROB
    suffixes are ignored). Blank lines and -X- lines end sentences; a
    -DOCSTART- line with fewer or more fields than the others ends a document.
    """
    from crfkit.evaluation.run_eval import run_eval_command

    run_eval_command(
        input_file,
        delimiter=delimiter,
        outside=outside,
        raw=raw,
        latex=latex,
        fmt=fmt,
        tokens=tokens,
        scheme=scheme,
        encoding=encoding,
        out=sys.stdout,
        confusion=confusion,
        report_dir=report_dir,
        partial=partial,
    )


