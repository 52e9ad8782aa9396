"""crfkit convert, dump and info: the commands that read one model file."""

from __future__ import annotations

import sys

import click


@click.command("convert", short_help="Convert a CRF++, Wapiti or CRFsuite model to crfkit's.")
@click.argument("input_file", metavar="IN", type=click.Path(exists=True, dir_okay=False))
@click.argument("output_file", metavar="OUT", type=click.Path(allow_dash=False))
@click.option("--from", "fmt", type=click.Choice(["auto", "crfpp", "wapiti", "crfsuite"]),
              default="auto", show_default=True,
              help="Format of IN (auto: recognised by its content).")
@click.option("-p", "--patterns", "patterns_file", default=None,
              type=click.Path(exists=True, dir_okay=False),
              help="CRFsuite only: the pattern file that generates the model's attributes.")
@click.option("--encoding", default="utf-8", show_default=True,
              help="Text encoding of IN's strings (and of the pattern file).")
@click.option("-q", "--quiet", is_flag=True,
              help="No summary line on stderr; errors are still shown.")
def convert_command(input_file, output_file, fmt, patterns_file, encoding, quiet) -> None:
    """Convert another tool's model file IN into a crfkit model OUT.

    Reads CRF++ models (binary, or the text form 'crf_learn -t' writes, gzipped
    or not), Wapiti models and CRFsuite models; 'crfkit label' then gives the
    labels the tool itself gives. A CRFsuite model with -p (a pattern file
    whose patterns generate its attribute strings) becomes a column-file
    model; without -p, an attribute model for 'label --format crfsuite' and
    crfkit.sklearn (as python-crfsuite and sklearn-crfsuite use it). 'crfkit
    label -m' also takes IN directly (converted in memory).
    """
    import time

    from crfkit.foreign import FORMAT_NAMES, read_bytes, read_model
    from crfkit.foreign import crfsuite as crfsuite_format
    from crfkit.io.atomic import check_writable

    check_writable(output_file)
    start = time.perf_counter()
    if patterns_file is None and fmt in ("auto", "crfsuite") \
            and crfsuite_format.looks_like(read_bytes(input_file)):
        _convert_attribute_model(input_file, output_file, encoding, quiet, start)
        return
    model = read_model(input_file, fmt=fmt, patterns=patterns_file, encoding=encoding,
                       foreign_only=True)
    model.save(output_file)
    if not quiet:
        source = model.info.get("converted_from", {}).get("format", FORMAT_NAMES["crfkit"])
        click.echo(f"converted {source} model: {len(model.labels)} labels, "
                   f"{model.space.n_obs} observations, {model.space.n_weights} weights, "
                   f"{time.perf_counter() - start:.2f} s", err=True)


def _convert_attribute_model(input_file: str, output_file: str, encoding: str, quiet: bool,
                             start: float) -> None:
    """convert: a CRFsuite model without patterns, saved as an attribute model."""
    import time

    from crfkit.foreign import read_bytes
    from crfkit.foreign.crfsuite_attributes import attribute_model

    model = attribute_model(read_bytes(input_file), input_file, encoding=encoding)
    model.save(output_file)
    if not quiet:
        click.echo(f"converted CRFsuite model to an attribute model: {len(model.labels)} "
                   f"labels, {len(model.attributes)} attributes, {model.space.n_weights} "
                   f"weights, {time.perf_counter() - start:.2f} s", err=True)


@click.command("dump", short_help="Write a model's weights as text.")
@click.argument("model_file", metavar="MODEL", type=click.Path(exists=True, dir_okay=False))
@click.argument("output_file", metavar="[OUTPUT]", default="-", type=click.Path(allow_dash=True))
@click.option("--top", type=int, default=None,
              help="Only the K strongest features (largest |weight|) of each label.")
@click.option("--threshold", type=float, default=0.0, show_default=True,
              help="Hide features with |weight| below this.")
@click.option("-p", "--prec", "precision", type=int, default=None, metavar="N",
              help="Write weights with N decimal places (Wapiti's --prec)  [default: six "
                   "significant digits]")
@click.option("--all", "zeros", is_flag=True,
              help="Also write the features whose weight is zero (Wapiti's --all).")
@click.option("--encoding", default=None,
              help="Text encoding of OUTPUT  [default: the model's training encoding]")
def dump_command(model_file, output_file, top, threshold, precision, zeros, encoding) -> None:
    """Write a model as text: patterns, labels, then one line per non-zero weight
    (observation TAB label-or-prev->label TAB weight; --all: every weight). OUTPUT
    defaults to stdout."""
    from crfkit.io.atomic import atomic_output
    from crfkit.model.describe import dump
    from crfkit.model.model import Model

    model = Model.load(model_file)
    with atomic_output(output_file, encoding=encoding or model.encoding) as out:
        dump(model, out, top=top, threshold=threshold, precision=precision, zeros=zeros)


@click.command("info", short_help="Describe a model and how it was trained.")
@click.argument("model_file", metavar="MODEL", type=click.Path(exists=True, dir_okay=False))
def info_command(model_file) -> None:
    """Describe a model: labels, sizes, patterns, training options and corpus."""
    from crfkit.model.describe import write_info
    from crfkit.model.model import Model

    write_info(Model.load(model_file), sys.stdout)


