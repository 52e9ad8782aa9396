"""crfkit label: the options, and the choice of where the labelling runs (a Dask cluster,
two processes, or a stream here)."""

from __future__ import annotations

import gc
import math
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import click

from crfkit.cli.click_options import click_options
from crfkit.cli.common import SEPARATORS, refuse_dask_crfsuite, structure_values
from crfkit.cli.helpgroups import LABEL_GROUPS, GroupedCommand
from crfkit.config import cores
from crfkit.errors import UsageError
from crfkit.structures import declared_label_options

if TYPE_CHECKING:
    from crfkit.labelling.label import TokenMeter
    from crfkit.structures.base import Structure


@click.command("label", cls=GroupedCommand, option_groups=LABEL_GROUPS,
               short_help="Label a column file with a trained model.")
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
@click.option("--encoding", default=None,
              help="Text encoding of INPUT and OUTPUT  [default: the encoding the model was "
                   "trained with (utf-8 for models that do not record it)]")
@click.option("-n", "--nbest", type=int, default=None,
              help="The N best label sequences (exact), each as a block headed "
                   "'# RANK LOGPROB'.")
@click.option("--nbest-columns", is_flag=True,
              help="With -n: print the N labels as N columns of one block instead.")
@click.option("-s", "--score", is_flag=True,
              help="Print '# LOGPROB' before each sequence and LABEL/PROB (token marginal).")
@click.option("--marginals", is_flag=True,
              help="Append LABEL/PROB for every label (model order) to each token line.")
@click.option("--cost-factor", type=float, default=None, metavar="X",
              help="Multiply every score by X > 0 before normalising (crf_test's -c): the "
                   "labels and the n-best order stay, the probabilities of -s and "
                   "--marginals sharpen (X > 1) or flatten (X < 1)  [default: 1]")
@click.option("-p", "--post", is_flag=True,
              help="Posterior decoding: the most probable label of each token.")
@click.option("--force", is_flag=True,
              help="The last INPUT column holds known labels ('_' = free): the output "
                   "passes through them.")
@click.option("--constraints", type=click.Choice(["iob"]), default=None,
              help="Forbid label sequences invalid under IOB2 (I-X after O, B-Y, I-Y "
                   "or at the start).")
@click.option("-q", "--quiet", is_flag=True,
              help="No progress line (shown only when stderr is a terminal and OUTPUT "
                   "is not) and no -c summary; warnings and errors are still shown.")
@click.option("--patterns", "patterns_file", default=None,
              type=click.Path(exists=True, dir_okay=False),
              help="With a CRFsuite model: the pattern file that generates its attributes.")
@click.option("--format", "data_format", type=click.Choice(["columns", "crfsuite"]),
              default="columns", show_default=True,
              help="INPUT is a column file, or a CRFsuite data file for a model trained with "
                   "--format crfsuite (output: GOLD<TAB>PREDICTED per token, for crfkit eval).")
@click.option("--dask", "dask_address", default=None, metavar="ADDRESS",
              help="Label on a Dask cluster (tcp://host:8786, or local:N worker processes "
                   "here): INPUT, a file the workers can read, is cut at blank lines; the "
                   "output is the same, in input order. Needs pip install 'crfkit[dask]'.")
@click_options(declared_label_options())
def label_command(**params: Any) -> None:
    """Label a column file with a trained model; the prediction becomes the last column.

    INPUT and OUTPUT default to standard input and output ('-').

    Output (SEP is a space, a tab with --sep tab; a blank line ends a sequence;
    probabilities with four decimals):

    \b
      default      ROW SEP LABEL
      -s           a line '# LOGPROB' first; each label written LABEL/PROB
      --marginals  ROW SEP LABEL SEP L1/P1 SEP L2/P2 ... (model label order)
      -n N         N blocks per sequence, each headed '# RANK LOGPROB' (rank 0 = best)
      -n N --nbest-columns
                   ROW SEP LABEL1 ... LABELN ('_' where fewer paths exist)

    A -DOCSTART- line (CoNLL document marker) is copied with O as its label.
    When INPUT is a pipe or terminal, each sequence is labelled and written as
    soon as its blank line is read (crfkit can serve as a co-process).
    MODEL may also be a CRF++, Wapiti or CRFsuite model (see 'crfkit convert').
    """
    from crfkit.io.atomic import atomic_output

    o = SimpleNamespace(**params)
    if o.nthread < 0:
        raise click.BadParameter("must be >= 0", param_hint="-t/--nthread")
    if o.data_format == "crfsuite":
        _label_crfsuite_file(o)
        return
    model, options = _model_and_options(o)
    encoding = _output_encoding(model, o.encoding)
    meter = _label_meter(o.quiet, o.output_file)
    whole_documents, doc_sep = _documents_of(model, o.doc_sep)
    with atomic_output(o.output_file, encoding=encoding) as out, _without_cycle_collection(), \
            _erased_at_exit(meter):
        stats = _label_into(out, model, options, o, encoding=encoding, meter=meter,
                            whole_documents=whole_documents, doc_sep=doc_sep)
    _summary(stats, o, model.structure, doc_sep=doc_sep)


def _model_and_options(o: SimpleNamespace) -> tuple[Any, Any]:
    """The model read (in any format crfkit reads), and the labelling options checked
    against it; the kernels' threads set and their compile announced when they are used."""
    from dataclasses import replace

    from crfkit.foreign import read_model
    from crfkit.labelling.label import (
        LabelOptions,
        fused_decoding_pays,
        kernel_decoding_pays,
    )
    from crfkit.structures import label_options

    options = LabelOptions(nbest=o.nbest, marginals=o.marginals, posterior=o.post,
                           force=o.force, constraints=o.constraints, scores=o.score,
                           nbest_columns=o.nbest_columns, check=o.check,
                           labels_only=o.labels_only, separator="\t" if o.sep == "tab" else " ",
                           structure=structure_values(vars(o), label_options()))
    options.validate()
    model = read_model(o.model_file, patterns=o.patterns_file, encoding=o.encoding or "utf-8")
    if o.cost_factor is not None:
        model.weights = model.weights * _cost_factor(o.cost_factor)
    if o.dask_address is not None and model.structure.documents:  # shards would cut them
        raise UsageError("--dask cannot label with a skip-chain model (its documents must "
                         "stay whole)")
    if not options.uses_kernels and kernel_decoding_pays(model, o.input_file):
        options = replace(options, prefer_kernels=True)
    elif not options.uses_kernels and fused_decoding_pays(model, o.input_file):
        options = replace(options, fused=True)
        _load_fused(model, o.quiet)
    if options.uses_kernels:  # the plain best path is numpy only: no Numba to load
        from crfkit.kernels.blocks import set_thread_count

        set_thread_count(o.nthread)
    # a structure that labels documents decodes by belief propagation: Numba in every mode
    if (options.uses_kernels or model.structure.documents) and not o.quiet:
        from crfkit.training.jitcache import announce_label_compile

        announce_label_compile(lambda line: click.echo(line, err=True), model.structure)
    return model, options


def _load_fused(model: Any, quiet: bool) -> None:
    """Load the fused best-path kernel here, once, before a fork shares it with the child
    (announcing its compilation on a first run)."""
    from crfkit.kernels.fusedpath import FUSED_COMPILE_SECONDS, batch_paths, load_kernel
    from crfkit.training.jitcache import compile_note, is_cached

    if not quiet and not is_cached(batch_paths):
        click.echo(compile_note(FUSED_COMPILE_SECONDS), err=True)
    load_kernel(model)


def _cost_factor(value: float) -> float:
    """crf_test's cost factor scales the scores; it must keep their order."""
    if not (value > 0 and math.isfinite(value)):
        raise UsageError(f"--cost-factor must be > 0, got {value}")
    return value


def _output_encoding(model: Any, encoding: str | None) -> str:
    """The encoding given, else the model's; refused in one line, before any output, if it
    is unknown or cannot write the model's strings."""
    from crfkit.io.reader import canonical_encoding
    from crfkit.labelling.label import check_output_encoding

    if encoding is None:
        encoding = model.encoding
    canonical_encoding(encoding)
    check_output_encoding(model, encoding)
    return encoding


def _label_into(out: Any, model: Any, options: Any, o: SimpleNamespace, *, encoding: str,
                meter: TokenMeter | None, whole_documents: bool, doc_sep: str | None) -> Any:
    """Label INPUT into ``out``: on a Dask cluster, in two processes (a file, several cores,
    no documents to keep whole), else as a stream in this process."""
    from crfkit.io.columnar import read_token_blocks
    from crfkit.io.reader import is_live, read_items
    from crfkit.labelling.columnar import columnar_applies, label_blocks
    from crfkit.labelling.label import label_stream

    threads = o.nthread or cores()
    if o.dask_address is not None:
        from crfkit.dask.command import label_on_dask

        return label_on_dask(o.dask_address, model, o.input_file, out, options,
                             encoding=encoding, sep=o.sep)
    if not whole_documents:
        stats = _label_bytes(out, model, options, o, encoding=encoding, threads=threads,
                             meter=meter)
        if stats is not None:
            return stats
    if threads > 1 and o.input_file != "-" and os.path.isfile(o.input_file) \
            and not whole_documents:
        from crfkit.labelling.forklabel import label_file_in_two

        stats = label_file_in_two(model, o.input_file, out, options, encoding=encoding,
                                  sep=o.sep, meter=meter)
        if stats is not None:
            return stats
    if meter is not None:
        meter.restart()
    source = "<stdin>" if o.input_file == "-" else o.input_file
    live = is_live(o.input_file)
    if columnar_applies(model, options, sep=o.sep, live=live, doc_sep=doc_sep):
        blocks = read_token_blocks(o.input_file, encoding=encoding, sep=o.sep)
        return label_blocks(model, blocks, out, options, source=source,
                            progress=meter.add if meter is not None else None)
    items = read_items(o.input_file, encoding=encoding, sep=o.sep, pauses=live,
                       doc_sep=doc_sep)
    return label_stream(model, items, out, options, source=source, threads=threads,
                        progress=meter.add if meter is not None else None)


def _label_bytes(out: Any, model: Any, options: Any, o: SimpleNamespace, *, encoding: str,
                 threads: int, meter: TokenMeter | None) -> Any:
    """Label a large regular file from its bytes (:mod:`crfkit.labelling.bytepath`); None
    if that path does not serve it (nothing written then)."""
    from crfkit.labelling import bytepath

    if not (bytepath.pays(o.input_file, model.space.n_labels)
            and bytepath.byte_path_applies(model, options, encoding=encoding, sep=o.sep)):
        return None
    if meter is not None:
        meter.restart()
    return bytepath.label_file_bytes(model, o.input_file, out, options, sep=o.sep,
                                     threads=threads,
                                     progress=meter.add if meter is not None else None,
                                     loading=None if o.quiet else _announce_byte_kernels)


def _announce_byte_kernels() -> None:
    """The compile note of the byte path's kernels, on a first run."""
    from crfkit.features.bytecells import window_observations
    from crfkit.kernels.bytelines import write_lines
    from crfkit.kernels.fusedpath import FUSED_COMPILE_SECONDS, batch_paths
    from crfkit.labelling.bytepath import COMPILE_SECONDS
    from crfkit.training.jitcache import compile_note, is_cached

    if not all(map(is_cached, (window_observations, write_lines, batch_paths))):
        click.echo(compile_note(FUSED_COMPILE_SECONDS + COMPILE_SECONDS), err=True)


def _summary(stats: Any, o: SimpleNamespace, structure: Structure, *,
             doc_sep: str | None) -> None:
    """The lines on stderr after labelling: -c's accuracy, the structure's notes (a skip
    chain: input without document markers), belief propagation that did not settle."""
    if o.check and stats.tokens and not o.quiet:
        click.echo(f"* {stats.sequences} sequences, {stats.tokens} tokens, token accuracy "
                   f"{100.0 * stats.correct / stats.tokens:.2f}%", err=True)
    if o.dask_address is None:
        for note in structure.label_notes(stats.sequences, stats.markers, doc_sep):
            click.echo(note, err=True)
    if stats.unsettled:
        n = stats.unsettled
        click.echo(f"* belief propagation did not settle in {n} document{'s' * (n != 1)}: "
                   f"labels there are those of its last round (label with a larger "
                   f"--bp-damping or --bp-maxiter)", err=True)


def _label_crfsuite_file(o: SimpleNamespace) -> None:
    """label --format crfsuite: what does not apply to an attribute model is refused."""
    refuse_dask_crfsuite(o.dask_address)
    _label_crfsuite(o.model_file, o.input_file, o.output_file, nthread=o.nthread,
                    labels_only=o.labels_only, check=o.check and not o.quiet,
                    encoding=o.encoding or "utf-8",
                    refused={"-n/--nbest": o.nbest, "--nbest-columns": o.nbest_columns or None,
                             "-s/--score": o.score or None, "--marginals": o.marginals or None,
                             "-p/--post": o.post or None, "--constraints": o.constraints,
                             "--patterns": o.patterns_file, "--force": o.force or None,
                             "--bp-damping": o.bp_damping, "--bp-maxiter": o.bp_maxiter,
                             "--doc-sep": o.doc_sep, "--cost-factor": o.cost_factor})


def _documents_of(model, doc_sep: str | None = None) -> tuple[bool, str | None]:
    """Whether labelling must keep documents whole (a skip-chain model: never cut a file in
    two), and the document separator: ``doc_sep`` if given, else the model's training one."""
    structure = model.structure
    if not structure.documents:
        if doc_sep is not None:
            raise UsageError("--doc-sep separates the documents of skip-chain models; this "
                             f"is a {model.model_type} model")
        return False, None
    return True, doc_sep if doc_sep is not None else structure.doc_sep(model.info)


def _label_crfsuite(model_file: str, input_file: str, output_file: str, *, nthread: int,
                    labels_only: bool, check: bool, encoding: str, refused: dict) -> None:
    """label --format crfsuite: an attribute model over a CRFsuite data file."""
    from crfkit.attributes.data_file import label_file
    from crfkit.foreign.crfsuite_attributes import load_attribute_model
    from crfkit.io.atomic import atomic_output
    from crfkit.kernels.blocks import set_thread_count

    for option, value in refused.items():
        if value is not None:
            raise UsageError(f"{option} is not available with --format crfsuite")
    set_thread_count(nthread)
    model = load_attribute_model(model_file)
    with atomic_output(output_file, encoding=encoding) as out:
        tokens, correct = label_file(model, input_file, out, labels_only=labels_only,
                                     encoding=encoding)
    if check and tokens:
        click.echo(f"* {tokens} tokens, token accuracy {100.0 * correct / tokens:.2f}%",
                   err=True)


def _label_meter(quiet: bool, output_file: str) -> TokenMeter | None:
    """A progress line on stderr if it is a terminal (and the output does not go there too)."""
    from crfkit.labelling.label import TokenMeter

    if quiet or not sys.stderr.isatty() or (output_file == "-" and sys.stdout.isatty()):
        return None
    return TokenMeter(sys.stderr)


@contextmanager
def _erased_at_exit(meter: TokenMeter | None) -> Iterator[None]:
    """Erase the progress line however labelling ends (an error line may follow)."""
    try:
        yield
    finally:
        if meter is not None:
            meter.close()


@contextmanager
def _without_cycle_collection() -> Iterator[None]:
    """Labelling makes no reference cycles (batches are freed by reference counting;
    peak RSS stays flat over 5M tokens), so the cyclic collector would only walk the
    model and each batch's rows again and again. Restored afterwards, for callers that
    run the command in their own process (tests, scripts)."""
    was_enabled = gc.isenabled()
    gc.freeze()
    gc.disable()
    try:
        yield
    finally:
        gc.unfreeze()
        if was_enabled:
            gc.enable()


