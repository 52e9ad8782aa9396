"""crfkit tune: the options, and the reading and writing around the library's search."""

from __future__ import annotations

import click

from crfkit.cli.click_options import click_options
from crfkit.cli.common import MODEL_TYPE_NAMES, SEPARATORS, existing_file, report_log
from crfkit.cli.helpgroups import TUNE_GROUPS, GroupedCommand
from crfkit.io import shipped
from crfkit.optim.options import HISTORY
from crfkit.structures import STRUCTURE, declared_train_options


@click.command("tune", cls=GroupedCommand, option_groups=TUNE_GROUPS,
               short_help="Choose the regularisation strength (devel set or folds).")
@click.option("-p", "--pattern", "pattern_file", required=True, metavar="FILE",
              help="Pattern (template) file, CRF++ or Wapiti syntax, or the name of a "
                   "shipped one ('crfkit patterns --list').")
@click.argument("input_file", metavar="TRAIN", type=click.Path(allow_dash=True))
@click.argument("model_file", metavar="[MODEL]", default="crfkit.model", type=click.Path())
@click.option("-d", "--devel", "devel_file", default=None, metavar="FILE",
              help="Score each strength by the chunk F1 of this labelled file (else folds).")
@click.option("--folds", type=int, default=5, show_default=True, metavar="K",
              help="Without -d: K-fold cross-validation on TRAIN (folds of whole sequences).")
@click.option("--seed", type=int, default=0, show_default=True,
              help="Seed of the fold assignment.")
@click.option("-1", "--rho1", "rho1_list", default=None, metavar="LIST",
              help="L1 strengths: '1,0.5,0.1' or FROM:TO:COUNT (log-spaced)  [default: 0]")
@click.option("-2", "--rho2", "rho2_list", default=None, metavar="LIST",
              help="L2 strengths, as --rho1  [default: 0.5,0.25,0.125; 1 with --rho1]")
@click.option("-T", "--type", "model_type", default=None, metavar="|".join(MODEL_TYPE_NAMES),
              help="Model type  [default: crf]")
@click_options(declared_train_options(("order",)))
@click.option("-i", "--maxiter", type=int, default=None,
              help="Maximum iterations of each training, 0 for no limit  [default: 0]")
@click.option("-e", "--stopeps", type=float, default=None,
              help="Stopping rule of the final model (as train)  [default: 1e-5]")
@click.option("--path-stopeps", type=float, default=5e-4, show_default=True, metavar="X",
              help="Stopping rule of the strengths scored (F1 settles long before the "
                   "objective: a looser rule makes the search cheaper).")
@click.option("-o", "--stopwin", "--objwin", "stopwin", type=int, default=None,
              help="Window of the stopping rule (Wapiti's -o)  [default: 10]")
@click_options([HISTORY])
@click.option("-f", "--cutoff", "--freq", type=int, default=None,
              help="Ignore observations seen fewer than N times  [default: 1]")
@click.option("--all-features", is_flag=True,
              help="Weights for every observation x label (pair), as train.")
@click.option("--all-labels", is_flag=True,
              help="Weights for every observation x label, the pairs seen, as train.")
@click.option("--likely", "likely_list", default=None, metavar="LIST",
              help="Likely-feature thresholds scored at the best strength (as train "
                   "--likely-features), 'none' for the observed features only  "
                   "[default: 0.01]")
@click.option("--no-warm-start", is_flag=True,
              help="Start every strength from zero weights (to measure what warm starts save).")
@click.option("-j", "--jobs", type=int, default=0, show_default=True,
              help="Folds trained at once, 0 for one per thread (-t).")
@click.option("-t", "--nthread", type=int, default=None,
              help="Worker threads in all, 0 for all cores  [default: 0]")
@click.option("--report", "report_dir", default=None, metavar="DIR",
              help="Write the table, F1 against strength and the final training's log and "
                   "plots to DIR (plots need matplotlib: pip install 'crfkit[plot]').")
@click.option("--json", "as_json", is_flag=True,
              help="Print a JSON summary on stdout (the table still goes to stderr).")
@click.option("--sep", type=SEPARATORS, default="auto", show_default=True,
              help="Column separator of TRAIN and the -d file.")
@click.option("--encoding", default="utf-8", show_default=True,
              help="Text encoding of TRAIN, the -d file and the pattern file.")
@click.option("-q", "--quiet", is_flag=True,
              help="No table, progress or summary lines; warnings and errors are still shown.")
@click_options([STRUCTURE])
@click_options(declared_train_options(("latent", "latent_start", "latent_seed")))
def tune_command(pattern_file, input_file, model_file, devel_file, folds, seed, rho1_list,
                 rho2_list, model_type, order, maxiter, stopeps, path_stopeps, stopwin, history,
                 cutoff, all_features, all_labels, likely_list, no_warm_start, jobs, nthread,
                 report_dir, as_json, sep, encoding, quiet, structure,
                 **declared: object) -> None:
    """Train over a path of regularisation strengths and keep the best model.

    Each strength is scored by the chunk F1 (conlleval) of the -d file or,
    without -d, of K-fold cross-validation on TRAIN; strengths are visited
    strongest first, each starting from the previous one's weights. A table
    row per strength goes to stderr as it is scored. MODEL is the best
    strength's model: with -d the one scored, with folds one more training
    on all of TRAIN. Ctrl-C stops the search and keeps the best strength so far.
    (``declared``: the structures' own options, read through the click context.)
    """
    from crfkit.cli.common import structure_values
    from crfkit.io.atomic import check_writable
    from crfkit.structures import train_options
    from crfkit.training.train import train_options_from
    from crfkit.training.tune import (
        TuneOptions,
        parse_likely,
        parse_strengths,
        refuse_likely,
        strength_path,
    )

    pattern_file = shipped.pattern_file(pattern_file)
    for path, option in ((pattern_file, "-p/--pattern"), (devel_file, "-d/--devel"),
                         (None if input_file == "-" else input_file, "TRAIN")):
        existing_file(path, option, None)
    given = {"model_type": model_type,
             "structure": structure_values(click.get_current_context().params, train_options()),
             "maxiter": maxiter, "stopeps": stopeps,
             "stopwin": stopwin, "history": history, "cutoff": cutoff, "nthread": nthread,
             "all_features": all_features or None, "all_labels": all_labels or None}
    if likely_list not in (None, "none"):  # a structure without likely features: one line
        refuse_likely(train_options_from(given), None)
    path = strength_path(None if rho1_list is None else parse_strengths(rho1_list, "--rho1"),
                         None if rho2_list is None else parse_strengths(rho2_list, "--rho2"))
    t = TuneOptions(folds=folds, seed=seed, jobs=jobs, warm_start=not no_warm_start,
                    path_stopeps=path_stopeps,
                    likely=None if likely_list is None else parse_likely(likely_list))
    check_writable(model_file)
    report_log(report_dir)
    _run_tune(given, t, path, pattern_file, input_file, devel_file, model_file, report_dir,
              sep=sep, encoding=encoding, quiet=quiet, as_json=as_json)


def _run_tune(given: dict, t, path: list, pattern_file: str, input_file: str,
              devel_file: str | None, model_file: str, report_dir: str | None, *, sep: str,
              encoding: str, quiet: bool, as_json: bool) -> None:
    """Read, tune, write the model, the JSON summary and the report."""
    import json

    from crfkit.cli.failures import save_trained
    from crfkit.features.patterns import read_patterns
    from crfkit.io.reader import canonical_encoding, read_sequences
    from crfkit.progress import Progress
    from crfkit.training.train import TrainOptions
    from crfkit.training.tune import tune, tune_summary

    options = TrainOptions(**{k: v for k, v in given.items() if v is not None})
    progress = Progress(quiet=quiet)
    patterns = read_patterns(pattern_file, encoding=encoding)
    source = "<stdin>" if input_file == "-" else input_file
    sequences = list(progress.counted(read_sequences(input_file, encoding=encoding, sep=sep,
                                                     min_columns=2)))
    devel = None
    if devel_file is not None:
        devel = list(read_sequences(devel_file, encoding=encoding, sep=sep, min_columns=2))
    result = tune(patterns, sequences, options, path, t, devel=devel, progress=progress,
                  source=source, devel_source=devel_file or "<devel>")
    if result.model is not None:
        result.model.info.update(pattern_file=pattern_file, train_file=source,
                                 encoding=canonical_encoding(encoding))
        if devel_file is not None:
            result.model.info["devel_file"] = devel_file
        save_trained(result.model, model_file)
    summary = tune_summary(result, t, model_file if result.model is not None else None)
    if as_json:
        click.echo(json.dumps(summary, indent=1))
    if report_dir is not None:
        from crfkit.evaluation.report import tune_report

        for line in tune_report(report_dir, result, summary):
            click.echo(line, err=True)
    if result.model is None:
        click.echo("crfkit: interrupted before any strength was scored: no model written",
                   err=True)
        click.get_current_context().exit(130)
    if not quiet:
        click.echo(f"* model written to {model_file} ({result.seconds:.1f}s in all)", err=True)
    if result.interrupted:
        click.get_current_context().exit(130)


