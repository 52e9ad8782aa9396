"""crfkit patterns: how a pattern file compiles, and what it generates on data."""

from __future__ import annotations

import os

import click

from crfkit.cli.common import SEPARATORS
from crfkit.io import shipped


@click.command("patterns", short_help="Show how a pattern file compiles and what it generates.")
@click.argument("pattern_file", metavar="PATFILE", required=False)
@click.argument("data_file", metavar="[DATA]", required=False, type=click.Path(allow_dash=True))
@click.option("--list", "list_shipped", is_flag=True,
              help="List the pattern files shipped with crfkit (usable by name: -p chunking).")
@click.option("-s", "--sequence", "sequence_number", type=click.IntRange(min=1), default=1,
              show_default=True, help="Which sequence of DATA to show (1 = the first).")
@click.option("--sep", type=SEPARATORS, default="auto", show_default=True,
              help="Column separator of DATA (auto: tabs or runs of spaces).")
@click.option("--encoding", default="utf-8", show_default=True,
              help="Text encoding of PATFILE and DATA.")
def patterns_command(pattern_file, data_file, list_shipped, sequence_number, sep,
                     encoding) -> None:
    """Show how PATFILE compiled and, with DATA, what it generates.

    Prints each pattern's kind, name, literal text and commands; with DATA
    (a column file, labelled or not), also the observation string every
    pattern generates at every position of one sequence -- the tool to
    debug feature engineering. Patterns may read any column of DATA here;
    training refuses the last one (the label). PATFILE may name a shipped
    pattern file (--list shows them).
    """
    from itertools import islice

    from crfkit.errors import UsageError
    from crfkit.features.explain import describe_patterns, explain_sequence
    from crfkit.features.patterns import check_columns, read_patterns
    from crfkit.io.reader import read_sequences

    if list_shipped:
        for name, path, about in shipped.shipped_patterns():
            click.echo(f"{name:<16} {about}  ({path})")
        click.echo(f"sample data: {shipped.SAMPLES_DIR}")
        return
    pattern_file = shipped.pattern_file(pattern_file)
    if pattern_file is None or not os.path.isfile(pattern_file):
        raise click.BadParameter(f"{pattern_file!r} is not a file" if pattern_file else
                                 "give a pattern file (or --list)", param_hint="PATFILE")
    patterns = read_patterns(pattern_file, encoding=encoding)
    for line in describe_patterns(patterns):
        click.echo(line)
    if data_file is None:
        return
    source = "<stdin>" if data_file == "-" else data_file
    found = list(islice(read_sequences(data_file, encoding=encoding, sep=sep), sequence_number))
    if len(found) < sequence_number:
        raise UsageError(f"--sequence {sequence_number}: DATA has only {len(found)} "
                         f"sequence(s)", path=source)
    seq = found[-1]
    check_columns(patterns, len(seq.rows[0]), label_column=False)
    click.echo("")
    click.echo(f"sequence {sequence_number} of {source}: {len(seq.rows)} token(s), "
               f"lines {seq.lines[0]}-{seq.lines[-1]}")
    for line in explain_sequence(patterns, seq.rows, seq.lines):
        click.echo(line)


