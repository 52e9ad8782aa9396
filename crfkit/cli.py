"""Command-line front end: a thin click layer over the library.

Each command validates nothing itself beyond what click does; library code
raises :class:`crfkit.errors.CrfkitError` and :func:`main` turns it into one
line on stderr and exit status 1. Heavy modules (numba kernels) are imported
inside the commands that need them, so ``crfkit --help`` and ``crfkit eval``
start fast.
"""

from __future__ import annotations

import sys

import click

from crfkit import __version__
from crfkit.errors import CrfkitError


class _Group(click.Group):
    """A click group that reports library errors as one line and exit status 1."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except CrfkitError as err:
            click.echo(f"crfkit: error: {err}", err=True)
            ctx.exit(1)
        except KeyboardInterrupt:
            click.echo("crfkit: interrupted", err=True)
            ctx.exit(130)
        except BrokenPipeError:
            sys.stderr.close()
            ctx.exit(141)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="crfkit")
def cli() -> None:
    """Fast linear-chain CRFs: train, label, evaluate.

    Reads the column files and pattern (template) files of Wapiti and CRF++
    unchanged. Every FILE argument may be '-' for stdin/stdout.
    """


SEPARATORS = click.Choice(["auto", "tab", "space"])


@cli.command("train")
@click.option("-p", "--pattern", "pattern_file", required=True,
              type=click.Path(exists=True, dir_okay=False),
              help="Pattern (template) file, CRF++ or Wapiti syntax.")
@click.argument("input_file", metavar="[INPUT]", default="-", type=click.Path(allow_dash=True))
@click.argument("model_file", metavar="[MODEL]", default="crfkit.model",
                type=click.Path(dir_okay=False))
@click.option("-2", "--rho2", type=float, default=None,
              help="L2 regularisation strength  [default: 1.0]")
@click.option("-i", "--maxiter", type=int, default=None,
              help="Maximum number of iterations, 0 for no limit  [default: 0]")
@click.option("-e", "--stopeps", type=float, default=None,
              help="Stop when the objective improves by less than this (relative) over the "
                   "window  [default: 1e-5]")
@click.option("-w", "--stopwin", type=int, default=None,
              help="Window (iterations) of the stopping rule  [default: 10]")
@click.option("-f", "--cutoff", type=int, default=None,
              help="Ignore observations seen fewer than N times  [default: 1]")
@click.option("-t", "--nthread", type=int, default=None,
              help="Worker threads, 0 for all cores  [default: 0]")
@click.option("--history", type=int, default=None,
              help="L-BFGS history size  [default: 6]")
@click.option("--sep", type=SEPARATORS, default="auto", show_default=True,
              help="Column separator: tabs or runs of spaces (auto), tabs only, spaces only.")
@click.option("--encoding", default="utf-8", show_default=True, help="Text encoding of INPUT.")
@click.option("-q", "--quiet", is_flag=True, help="No progress output.")
def train_command(pattern_file, input_file, model_file, rho2, maxiter, stopeps, stopwin, cutoff,
                  nthread, history, sep, encoding, quiet) -> None:
    """Train a CRF on a labelled column file (last column = label) and write MODEL."""
    from crfkit.patterns import read_patterns
    from crfkit.progress import Progress
    from crfkit.reader import read_sequences
    from crfkit.train import TrainOptions, train

    given = {"rho2": rho2, "maxiter": maxiter, "stopeps": stopeps, "stopwin": stopwin,
             "cutoff": cutoff, "nthread": nthread, "history": history}
    options = TrainOptions(**{k: v for k, v in given.items() if v is not None})
    options.validate()
    patterns = read_patterns(pattern_file)
    progress = Progress(quiet=quiet)
    source = "<stdin>" if input_file == "-" else input_file
    sequences = read_sequences(input_file, encoding=encoding, sep=sep, min_columns=2)
    model = train(patterns, sequences, options, progress=progress, source=source)
    model.info["pattern_file"] = pattern_file
    model.info["train_file"] = source
    model.save(model_file)
    progress.message(f"* model written to {model_file}")


@cli.command("label")
@click.option("-m", "--model", "model_file", required=True,
              type=click.Path(exists=True, dir_okay=False), help="Model file from 'crfkit train'.")
@click.argument("input_file", metavar="[INPUT]", default="-", type=click.Path(allow_dash=True))
@click.argument("output_file", metavar="[OUTPUT]", default="-", type=click.Path(allow_dash=True))
@click.option("-l", "--label", "labels_only", is_flag=True,
              help="Output only the predicted labels.")
@click.option("-c", "--check", is_flag=True,
              help="INPUT has a gold label as last column: keep it, append the prediction "
                   "(ready for 'crfkit eval') and report token accuracy on stderr.")
@click.option("-t", "--nthread", type=int, default=0, show_default=True,
              help="Worker threads, 0 for all cores.")
@click.option("--sep", type=SEPARATORS, default="auto", show_default=True,
              help="Column separator of INPUT (auto: tabs or runs of spaces).")
@click.option("--encoding", default="utf-8", show_default=True,
              help="Text encoding of INPUT and OUTPUT.")
def label_command(model_file, input_file, output_file, labels_only, check, nthread, sep,
                  encoding) -> None:
    """Label a column file with a trained model; the prediction becomes the last column."""
    from crfkit.atomic import atomic_output
    from crfkit.label import label_stream
    from crfkit.model import Model
    from crfkit.reader import read_sequences
    from crfkit.train import _set_threads

    if nthread < 0:
        raise click.BadParameter("must be >= 0", param_hint="-t/--nthread")
    _set_threads(nthread)
    model = Model.load(model_file)
    source = "<stdin>" if input_file == "-" else input_file
    sequences = read_sequences(input_file, encoding=encoding, sep=sep)
    separator = "\t" if sep == "tab" else " "
    with atomic_output(output_file, encoding=encoding) as out:
        stats = label_stream(model, sequences, out, check=check, labels_only=labels_only,
                             separator=separator, source=source)
    if check and stats.tokens:
        click.echo(f"* {stats.sequences} sequences, {stats.tokens} tokens, token accuracy "
                   f"{100.0 * stats.correct / stats.tokens:.2f}%", err=True)


@cli.command("eval")
@click.argument("input_file", metavar="[FILE]", default="-", type=click.Path(allow_dash=True))
@click.option("-d", "--delimiter", default=None, help="Field delimiter (default: any whitespace).")
@click.option("-o", "--outside", "outside", default="O", show_default=True,
              help="The tag that marks tokens outside any chunk.")
@click.option("-r", "--raw", is_flag=True,
              help="Raw tags: every non-outside tag is a one-word chunk.")
@click.option("-l", "--latex", is_flag=True, help="Print a LaTeX table instead of the text report.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
              show_default=True, help="Report format; json has stable keys (see README).")
@click.option("--tokens", is_flag=True, help="Also print per-label token precision/recall/F1.")
@click.option("--scheme", type=click.Choice(["iob1", "iob2", "iobes"]), default=None,
              help="Tagging scheme: reject tags that do not fit it; iobes also adds the IOBES "
                   "chunk rules conlleval lacks (default: conlleval's rules exactly).")
@click.option("--encoding", default="utf-8", show_default=True, help="Text encoding of FILE.")
def eval_command(input_file, delimiter, outside, raw, latex, fmt, tokens, scheme, encoding) -> None:
    """Score tagged output like conlleval: the last two columns are gold and predicted tags."""
    from crfkit.evaluate import run_eval_command

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
        out=click.get_text_stream("stdout"),
    )


def main() -> None:
    """Console entry point."""
    cli(prog_name="crfkit")


if __name__ == "__main__":
    main()
