"""Command-line front end: a thin click layer over the library.

Each command validates nothing itself beyond what click does; library code
raises :class:`crfkit.errors.CrfkitError` and :func:`main` turns it into one
line on stderr and exit status 1. Heavy modules (numba kernels) are imported
inside the commands that need them, so ``crfkit --help`` and ``crfkit eval``
start fast.
"""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import click

from crfkit import __version__
from crfkit.cli.click_options import click_options
from crfkit.cli.helpgroups import LABEL_GROUPS, TRAIN_GROUPS, TUNE_GROUPS, GroupedCommand
from crfkit.errors import CrfkitError
from crfkit.io import shipped
from crfkit.model.types import MODEL_TYPES
from crfkit.structures import STRUCTURE

if TYPE_CHECKING:
    from crfkit.labelling.label import TokenMeter


class _Group(click.Group):
    """A click group that reports library errors as one line and exit status 1 (usage and
    write errors too: crfkit.cli.failures), and the option habits of CRF++, Wapiti and
    CRFsuite as one line naming crfkit's spelling."""

    def main(self, *args, standalone_mode: bool = True, **kwargs):
        if not standalone_mode:
            return super().main(*args, standalone_mode=False, **kwargs)
        from crfkit.cli.failures import run_standalone

        run_standalone(lambda: super(_Group, self).main(*args, standalone_mode=False, **kwargs))

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta["crfkit.argv"] = list(args)
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context):
        try:
            _refuse_habits(self, ctx)
            return super().invoke(ctx)
        except CrfkitError as err:
            click.echo(f"crfkit: error: {err}", err=True)
            ctx.exit(1)
        except KeyboardInterrupt:
            from crfkit.cli.failures import interrupted_line

            click.echo(interrupted_line(sys.stderr), err=True)
            ctx.exit(130)
        except BrokenPipeError:
            sys.stderr.close()
            ctx.exit(141)


def _refuse_habits(group: click.Group, ctx: click.Context) -> None:
    """Another tool's option spelling (crfkit.cli.habits) stops here, before click's parser
    rejects it generically or reads it with crfkit's meaning."""
    from crfkit.cli.habits import habit_hint
    from crfkit.errors import UsageError

    argv = ctx.meta.get("crfkit.argv") or []
    if not argv or argv[0].startswith("-"):
        return
    hint = habit_hint(group.get_command(ctx, argv[0]), argv[0], argv[1:])
    if hint is not None:
        raise UsageError(hint)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="crfkit")
def cli() -> None:
    """Fast linear-chain CRFs: train, label, evaluate.

    Reads the column files and pattern (template) files of Wapiti and CRF++
    unchanged. Every FILE argument may be '-' for stdin/stdout.
    """


SEPARATORS = click.Choice(["auto", "tab", "space"])


MODEL_TYPE_NAMES = tuple(MODEL_TYPES)
"""The names of ``modeltypes.MODEL_TYPES`` and ``train.ALGORITHMS``; the algorithms are
spelled out here so that ``--help`` lists them without importing the training code (a test
keeps them equal)."""
ALGORITHM_NAMES = ("l-bfgs", "sgd-l1", "ap", "l2sgd", "pa", "arow")


@cli.command("train", cls=GroupedCommand, option_groups=TRAIN_GROUPS,
             short_help="Train a model on a labelled column file.")
@click.option("-p", "--pattern", "pattern_file", default=None, metavar="FILE",
              help="Pattern (template) file, CRF++ or Wapiti syntax (optional with -m), or "
                   "the name of a shipped one ('crfkit patterns --list').")
@click.argument("input_file", metavar="[INPUT]", default="-", type=click.Path(allow_dash=True))
@click.argument("model_file", metavar="[MODEL]", default="crfkit.model.model", type=click.Path())
@click.option("-T", "--type", "model_type", default=None, metavar="|".join(MODEL_TYPE_NAMES),
              help="Model type; '-T list' describes them  [default: crf]")
@click.option("-a", "--algo", default=None, metavar="|".join(ALGORITHM_NAMES),
              help="Training algorithm; '-a list' describes them  [default: l-bfgs]")
@click.option("--order", type=int, default=None, metavar="1|2",
              help="Label order of a crf: 2 adds label-trigram states and the t patterns "
                   "(observation x three labels)  [default: 1]")
@click.option("--likely-features", "likely", type=float, default=None, metavar="P",
              help="Train --likely-after iterations on the observed features, then add the "
                   "unseen observation x label (pair) features whose model probability "
                   "reaches P on some training token, and continue (first order).")
@click.option("--likely-after", type=int, default=None, metavar="N",
              help="With --likely-features: iterations before the features are added  "
                   "[default: 20]")
@click.option("-1", "--rho1", type=float, default=None,
              help="L1 regularisation strength; > 0 makes l-bfgs OWL-QN  [default: 0; "
                   "sgd-l1: 0.3]")
@click.option("-2", "--rho2", type=float, default=None,
              help="L2 regularisation strength (l-bfgs only)  [default: 1.0]")
@click.option("--cost", type=float, default=None, metavar="C",
              help="CRF++'s -c/--cost: the same as -2 1/C.")
@click.option("-i", "--maxiter", type=int, default=None,
              help="Maximum number of iterations (epochs for the online algorithms), 0 for "
                   "no limit  [default: 0; ap, pa, arow: 100; l2sgd: 1000]")
@click.option("-e", "--stopeps", type=float, default=None,
              help="Stop when the objective improves by less than this (relative) over the "
                   "window; sgd-l1: by less than this share of its fall since the first "
                   "epoch; ap, pa, arow: CRFsuite's epsilon (the epoch's loss per sequence "
                   "below it; arow: at most it)  [default: 1e-5; sgd-l1: 0.02; ap, pa, "
                   "arow: 0]")
@click.option("-o", "--stopwin", "--objwin", "stopwin", type=int, default=None,
              help="Window (iterations) of the stopping rule (Wapiti's -o/--objwin)  "
                   "[default: 10; sgd-l1: 3]")
@click.option("--l1-gtol", type=float, default=None, metavar="X",
              help="With -1 (OWL-QN): also stop once the pseudo-gradient's norm has stayed "
                   "below X times its start for the window; 0: the objective rule alone  "
                   "[default: 1e-4]")
@click.option("-d", "--devel", "devel_file", default=None, metavar="FILE",
              help="Labelled development file, scored after every iteration. By itself it "
                   "changes nothing: training stops on the objective's rule and the model "
                   "is the one trained without -d.")
@click.option("--keep-best-devel", is_flag=True,
              help="With -d, keep the weights of the iteration with the best development "
                   "F1 instead of the last ones.")
@click.option("--devel-patience", type=int, default=None, metavar="N",
              help="With -d, stop after N iterations without a better development F1 and "
                   "keep the best weights; 0 never stops on it  [default: 0]")
@click.option("-f", "--cutoff", "--freq", type=int, default=None,
              help="Ignore observations seen fewer than N times (CRF++'s --freq)  "
                   "[default: 1]")
@click.option("-c", "--compact", is_flag=True,
              help="Drop zero weights and the observations left without any (small L1 "
                   "models). Not CRF++'s -c: that is --cost.")
@click.option("-m", "--model", "init_file", default=None, metavar="FILE",
              help="Start from this model's weights: continue training, or fine-tune on new "
                   "data (new labels and observations are added).")
@click.option("--eta0", type=float, default=None,
              help="sgd-l1: initial learning rate  [default: calibrated on a sample of "
                   "1000 sequences]")
@click.option("--alpha", type=float, default=None,
              help="sgd-l1: learning-rate decay per epoch, in (0, 1]  [default: 0.8]")
@click.option("--seed", type=int, default=None,
              help="sgd-l1, l2sgd: seed of the sequence order; ap, pa, arow: srand()'s seed "
                   "of CRFsuite's shuffle (0 and 1: CRFsuite's own order)  [default: 0]")
@click.option("-t", "--nthread", type=int, default=None,
              help="Worker threads, 0 for all cores  [default: 0]")
@click.option("--history", type=int, default=None,
              help="L-BFGS history size  [default: 6]")
@click.option("--all-features", is_flag=True,
              help="Weights for every observation x label (pair), as Wapiti and CRF++, "
                   "not only the combinations seen in training.")
@click.option("--all-labels", is_flag=True,
              help="Weights for every observation x label, the label pairs those seen in "
                   "training (CRFsuite's possible states): most of --all-features' "
                   "accuracy at a fraction of its cost with bigram patterns.")
@click.option("--all-transitions", is_flag=True,
              help="--format crfsuite: weights for every label pair (CRFsuite's "
                   "feature.possible_transitions=1), not only the pairs seen in training.")
@click.option("--max-memory", default=None, metavar="SIZE",
              help="Refuse to train if the estimated memory exceeds SIZE (512M, 8G)  "
                   "[default: the memory available]")
@click.option("--sep", type=SEPARATORS, default="auto", show_default=True,
              help="Column separator: tabs or runs of spaces (auto), tabs only, spaces only.")
@click.option("--encoding", default="utf-8", show_default=True,
              help="Text encoding of INPUT, the -d file and the pattern file (recorded in "
                   "the model: 'crfkit label' reads with it by default).")
@click.option("--report", "report_dir", default=None, metavar="DIR",
              help="Write the per-iteration log (CSV, JSON), plots (PNG) and an HTML page "
                   "to DIR; plots need matplotlib (pip install 'crfkit[plot]').")
@click.option("--skip-mode", type=click.Choice(["next", "all", "first"]), default="next",
              show_default=True,
              help="skipchain: join each occurrence of a key to the next one, all pairs, or "
                   "each later one to the first.")
@click.option("--skip-cap", type=int, default=1000, show_default=True,
              help="skipchain: at most this many skip edges a document (the shortest kept).")
@click.option("--bp-maxiter", type=int, default=50, show_default=True,
              help="skipchain: rounds of belief propagation at most.")
@click.option("--bp-tol", type=float, default=1e-6, show_default=True,
              help="skipchain: BP stops when no message moves more than this (log space).")
@click.option("--bp-damping", type=float, default=0.5, show_default=True,
              help="skipchain: share of the old message kept at each update, in [0, 1).")
@click.option("--bp-label-damping", type=float, default=0.5, show_default=True,
              help="skipchain: damping of belief propagation when labelling (recorded in "
                   "the model; undamped max-product can oscillate).")
@click.option("--doc-sep", default=None, metavar="REGEX",
              help="skipchain: lines matching REGEX separate documents, as -DOCSTART- "
                   "lines do (recorded in the model for crfkit label).")
@click.option("--format", "data_format", type=click.Choice(["columns", "crfsuite"]),
              default="columns", show_default=True,
              help="INPUT is a column file read through patterns (-p), or a CRFsuite data "
                   "file (LABEL<TAB>ATTR[:VALUE]...; no pattern file).")
@click.option("--pa-type", type=click.IntRange(0, 2), default=None,
              help="-a pa: 0 PA, 1 PA-I, 2 PA-II  [default: 1]")
@click.option("--pa-c", type=float, default=None,
              help="-a pa: aggressiveness C of PA-I and PA-II  [default: 1]")
@click.option("--variance", type=float, default=None,
              help="-a arow: initial variance of every weight  [default: 1]")
@click.option("--gamma", type=float, default=None,
              help="-a arow: trade-off between loss and change  [default: 1]")
@click.option("-q", "--quiet", is_flag=True,
              help="No progress or summary lines; warnings and errors are still shown.")
@click.option("--regex", type=click.Choice(["crfkit", "wapiti"]), default="crfkit",
              show_default=True, help="How %t/%m regexes match: crfkit's greedy matcher, or "
              "Wapiti's own, bug for bug (recorded in the model).")
@click.option("--dask", "dask_address", default=None, metavar="ADDRESS",
              help="Train on a Dask cluster: a scheduler's address (tcp://host:8786) or "
                   "local:N (N worker processes here). INPUT: files the workers can read "
                   "(a quoted glob for several). l-bfgs gives the model of -t 1, bit for "
                   "bit; sgd-l1 and ap run one epoch per block in parallel and average the "
                   "weights between epochs: not the sequential algorithm. "
                   "Needs pip install 'crfkit[dask]'.")
@click_options([STRUCTURE])
def train_command(pattern_file, input_file, model_file, model_type, algo, order, likely,
                  likely_after, rho1, rho2, cost,
                  maxiter, stopeps, stopwin, l1_gtol, devel_file, keep_best_devel, devel_patience,
                  cutoff, compact,
                  init_file, eta0, alpha, seed, nthread, history, all_features, all_labels,
                  all_transitions, max_memory, sep,
                  encoding, report_dir, skip_mode, skip_cap, bp_maxiter, bp_tol, bp_damping,
                  bp_label_damping, doc_sep, data_format, pa_type, pa_c, variance, gamma, quiet,
                  regex, dask_address, structure) -> None:
    """Train a model on a labelled column file (the last column is the label).

    INPUT defaults to standard input (a pipe: a terminal is refused) and
    MODEL to ./crfkit.model.model. Ctrl-C stops training after the last finished
    iteration, writes the model trained so far and exits with status 130.
    """
    from crfkit.cli.failures import save_trained
    from crfkit.errors import UsageError
    from crfkit.io.atomic import check_writable
    from crfkit.training.memory import parse_size, return_large_frees_to_the_os
    from crfkit.training.train import algorithm_list, type_list

    if algo == "list" or model_type == "list":
        click.echo(algorithm_list() if algo == "list" else type_list())
        return
    if cost is not None:
        if rho2 is not None:
            raise UsageError("--cost C is CRF++'s spelling of -2 1/C: give one of them")
        if not cost > 0:
            raise UsageError(f"--cost must be > 0, got {cost}")
        rho2 = 1.0 / cost
    pattern_file = shipped.pattern_file(pattern_file)
    _check_train_inputs(pattern_file, init_file, devel_file, input_file, dask_address)
    given = {"algo": algo, "model_type": model_type, "likely": likely,
             "likely_after": likely_after, "rho1": rho1, "rho2": rho2,
             "maxiter": maxiter, "stopeps": stopeps, "stopwin": stopwin, "l1_gtol": l1_gtol,
             "cutoff": cutoff,
             "nthread": nthread, "history": history, "eta0": eta0, "alpha": alpha,
             "seed": seed, "devel_patience": devel_patience,
             "keep_best_devel": keep_best_devel or None, "compact": compact or None,
             "all_features": all_features or None, "all_labels": all_labels or None,
             "max_memory": None if max_memory is None else parse_size(max_memory),
             "structure": {"structure": structure, "order": order, "skip_mode": skip_mode,
                           "skip_cap": skip_cap, "bp_maxiter": bp_maxiter, "bp_tol": bp_tol,
                           "bp_damping": bp_damping, "bp_label_damping": bp_label_damping,
                           "doc_sep": doc_sep},
             "pa_type": pa_type, "pa_c": pa_c, "variance": variance, "gamma": gamma}
    if data_format == "crfsuite":
        _refuse_dask_crfsuite(dask_address)
        _train_crfsuite(given, input_file, model_file, encoding=encoding, quiet=quiet,
                        all_transitions=all_transitions,
                        refused={"-p/--pattern": pattern_file, "-m/--model": init_file,
                                 "-d/--devel": devel_file, "--report": report_dir,
                                 "-f/--cutoff": cutoff, "-c/--compact": compact or None})
        return
    if all_transitions:
        raise UsageError("--all-transitions applies to --format crfsuite (a pattern file's "
                         "B patterns give the label-pair features)")
    if pattern_file is None and init_file is None:
        raise UsageError("give a pattern file with -p/--pattern (or an initial model with -m)")
    check_writable(model_file)  # before an hour of training, not after it
    log = _report_log(report_dir)
    return_large_frees_to_the_os()
    if dask_address is not None:
        if regex != "crfkit":
            raise UsageError("--regex wapiti is not available with --dask")
        from crfkit.dask.command import train_on_dask

        model, cluster_error = train_on_dask(dask_address, given, pattern_file, input_file,
                                             devel_file, init_file, sep=sep,
                                             encoding=encoding, quiet=quiet)
    else:
        cluster_error = None
        model = _train(given, pattern_file, input_file, devel_file, init_file, sep=sep,
                       encoding=encoding, quiet=quiet, log=log, regex=regex)
    save_trained(model, model_file)
    if cluster_error is not None:
        raise CrfkitError(f"{cluster_error}: the model of the last finished iteration "
                          f"({model.info['iterations']}) is written to {model_file}")
    if report_dir is not None:
        _write_training_report(report_dir, log, model, model_file)
    if model.info["stop_reason"] == "interrupted":
        click.echo(f"* model written to {model_file} (interrupted)", err=True)
        click.get_current_context().exit(130)
    if not quiet:
        click.echo(f"* model written to {model_file}", err=True)


def _refuse_dask_crfsuite(dask_address: str | None) -> None:
    """CRFsuite data files are read and trained in this process only: say so rather than
    run the work here unasked."""
    from crfkit.errors import UsageError

    if dask_address is not None:
        raise UsageError("--dask is not available with --format crfsuite (columns only)")


def _check_train_inputs(pattern_file: str | None, init_file: str | None,
                        devel_file: str | None, input_file: str,
                        dask_address: str | None) -> None:
    """Every input of ``train`` exists (with a hint for CRF++ habits) before work starts."""
    from crfkit.errors import UsageError

    _existing_file(pattern_file, "-p/--pattern",
                   "-p names the pattern file here; CRF++'s -p (threads) is -t")
    _existing_file(init_file, "-m/--model",
                   "-m names a model to start from here; CRF++'s -m (iterations) is -i")
    _existing_file(devel_file, "-d/--devel", None)
    if dask_address is not None:
        return  # the workers read INPUT (a file or a glob): crfkit.dask checks it
    if input_file != "-":
        _existing_file(input_file, "INPUT", "CRF++'s '-c C' (cost) is '--cost C' here; "
                       "crfkit's -c is --compact")
    elif sys.stdin.isatty():
        raise UsageError("no INPUT given and standard input is a terminal: name the training "
                         "file (crfkit train -p PATTERNS train.txt MODEL) or pipe it in")


def _write_training_report(report_dir: str, log: list, model, model_file: str) -> None:
    """``--report DIR``: the per-iteration log, plots and page, with the run's settings."""
    from crfkit.evaluation.report import training_report

    settings = {"command": "crfkit train", "model": model_file,
                **{k: v for k, v in model.info.items() if k != "initial_model"}}
    for line in training_report(report_dir, log, settings):
        click.echo(line, err=True)


def _train_crfsuite(given: dict, input_file: str, model_file: str, *, encoding: str,
                    quiet: bool, all_transitions: bool, refused: dict) -> None:
    """train --format crfsuite: a CRFsuite data file, no patterns (crfkit.attributes.data_file).
    Features as CRFsuite's defaults make them: the (attribute, label) and label pairs seen
    in training, unless --all-labels / --all-features (possible states) or
    --all-transitions (possible transitions) ask for every one."""
    from crfkit.attributes.attribute_model import AttributeTraining
    from crfkit.attributes.data_file import train_file
    from crfkit.cli.failures import save_trained
    from crfkit.errors import UsageError
    from crfkit.io.atomic import check_writable
    from crfkit.progress import Progress
    from crfkit.training.train import TrainOptions

    for option, value in refused.items():
        if value is not None:
            raise UsageError(f"{option} does not apply to --format crfsuite (the data file "
                             f"holds the attributes)")
    # every attribute x label, with either option: the data file has no label-pair features
    all_states = bool(given.pop("all_features", None)) | bool(given.pop("all_labels", None))
    options = TrainOptions(**{k: v for k, v in given.items() if v is not None})
    options.validate()
    settings = AttributeTraining(all_states=all_states, all_transitions=all_transitions,
                                 epsilon=1e-5 if options.algo == "l-bfgs" else 0.0)
    check_writable(model_file)
    model = train_file(input_file, options, settings, encoding=encoding,
                       progress=Progress(quiet=quiet))
    save_trained(model, model_file)
    if not quiet:
        click.echo(f"* model written to {model_file}", err=True)


def _report_log(report_dir: str | None) -> list[dict] | None:
    """With --report, check the directory now and return the list the log goes to."""
    if report_dir is None:
        return None
    from crfkit.evaluation.report import prepare_directory

    prepare_directory(report_dir)
    return []


def _train(given: dict, pattern_file: str | None, input_file: str, devel_file: str | None,
           init_file: str | None, *, sep: str, encoding: str, quiet: bool,
           log: list[dict] | None = None, regex: str = "crfkit"):
    """Read everything the train command names and train: the library call behind it."""
    from crfkit.features.patterns import read_patterns
    from crfkit.io.reader import canonical_encoding, read_items, read_sequences
    from crfkit.model.model import Model
    from crfkit.progress import Progress
    from crfkit.training.train import TrainOptions, train

    options = TrainOptions(**{k: v for k, v in given.items() if v is not None})
    options.validate()
    init = Model.load(init_file) if init_file else None
    patterns = (read_patterns(pattern_file, encoding=encoding, regex_mode=regex)
                if pattern_file else None)
    progress = Progress(quiet=quiet)
    source = "<stdin>" if input_file == "-" else input_file
    # with the -DOCSTART- markers: a skip-chain model's documents
    sequences = read_items(input_file, encoding=encoding, sep=sep, min_columns=2,
                           doc_sep=options.structure.get("doc_sep"))
    devel = None
    if devel_file is not None:
        devel = read_sequences(devel_file, encoding=encoding, sep=sep, min_columns=2)
    model = train(patterns, progress.counted(sequences), options, progress=progress,
                  source=source, devel=devel, devel_source=devel_file or "<devel>", init=init,
                  log=log)
    model.info["pattern_file"] = pattern_file or init_file
    model.info["train_file"] = source
    model.info["encoding"] = canonical_encoding(encoding)  # crfkit label's default
    if devel_file is not None:
        model.info["devel_file"] = devel_file
    return model


def _existing_file(path: str | None, option: str, numeric_hint: str | None) -> None:
    """Refuse a missing file in one line; a number where a file belongs is a CRF++ habit."""
    from crfkit.errors import UsageError

    if path is None or os.path.isfile(path):
        return
    problem = "is a directory" if os.path.isdir(path) else "does not exist"
    hint = ""
    if numeric_hint and path.replace(".", "", 1).isdigit():
        hint = f" ({numeric_hint})"
    raise UsageError(f"{option}: {path!r} {problem}{hint}")


@cli.command("tune", cls=GroupedCommand, option_groups=TUNE_GROUPS,
             short_help="Choose the regularisation strength (devel set or folds).")
@click.option("-p", "--pattern", "pattern_file", required=True, metavar="FILE",
              help="Pattern (template) file, CRF++ or Wapiti syntax, or the name of a "
                   "shipped one ('crfkit patterns --list').")
@click.argument("input_file", metavar="TRAIN", type=click.Path(allow_dash=True))
@click.argument("model_file", metavar="[MODEL]", default="crfkit.model.model", type=click.Path())
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
@click.option("--order", type=int, default=None, metavar="1|2",
              help="Label order of a crf, as train (2: no likely features)  [default: 1]")
@click.option("-i", "--maxiter", type=int, default=None,
              help="Maximum iterations of each training, 0 for no limit  [default: 0]")
@click.option("-e", "--stopeps", type=float, default=None,
              help="Stopping rule of the final model (as train)  [default: 1e-5]")
@click.option("--path-stopeps", type=float, default=5e-4, show_default=True, metavar="X",
              help="Stopping rule of the strengths scored (F1 settles long before the "
                   "objective: a looser rule makes the search cheaper).")
@click.option("-o", "--stopwin", "--objwin", "stopwin", type=int, default=None,
              help="Window of the stopping rule (Wapiti's -o)  [default: 10]")
@click.option("--history", type=int, default=None, help="L-BFGS history size  [default: 6]")
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
def tune_command(pattern_file, input_file, model_file, devel_file, folds, seed, rho1_list,
                 rho2_list, model_type, order, maxiter, stopeps, path_stopeps, stopwin, history,
                 cutoff, all_features, all_labels, likely_list, no_warm_start, jobs, nthread,
                 report_dir, as_json, sep, encoding, quiet, structure) -> None:
    """Train over a path of regularisation strengths and keep the best model.

    Each strength is scored by the chunk F1 (conlleval) of the -d file or,
    without -d, of K-fold cross-validation on TRAIN; strengths are visited
    strongest first, each starting from the previous one's weights. A table
    row per strength goes to stderr as it is scored. MODEL is the best
    strength's model: with -d the one scored, with folds one more training
    on all of TRAIN. Ctrl-C stops the search and keeps the best strength so far.
    """
    from crfkit.errors import UsageError
    from crfkit.io.atomic import check_writable
    from crfkit.training.tune import (
        DEFAULT_LIKELY,
        TuneOptions,
        parse_likely,
        parse_strengths,
        strength_path,
    )

    pattern_file = shipped.pattern_file(pattern_file)
    for path, option in ((pattern_file, "-p/--pattern"), (devel_file, "-d/--devel"),
                         (None if input_file == "-" else input_file, "TRAIN")):
        _existing_file(path, option, None)
    if order == 2 and likely_list not in (None, "none"):
        raise UsageError("--likely scores likely features of first-order models: "
                         "not with --order 2")
    given = {"model_type": model_type, "structure": {"structure": structure, "order": order},
             "maxiter": maxiter, "stopeps": stopeps,
             "stopwin": stopwin, "history": history, "cutoff": cutoff, "nthread": nthread,
             "all_features": all_features or None, "all_labels": all_labels or None}
    path = strength_path(None if rho1_list is None else parse_strengths(rho1_list, "--rho1"),
                         None if rho2_list is None else parse_strengths(rho2_list, "--rho2"))
    t = TuneOptions(folds=folds, seed=seed, jobs=jobs, warm_start=not no_warm_start,
                    path_stopeps=path_stopeps,
                    likely=DEFAULT_LIKELY if likely_list is None else parse_likely(likely_list))
    check_writable(model_file)
    _report_log(report_dir)
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


@cli.command("label", cls=GroupedCommand, option_groups=LABEL_GROUPS,
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
@click.option("--bp-damping", "bp_damping", type=float, default=None, metavar="X",
              help="Skip-chain models: damp belief propagation's messages by X in [0, 1) "
                   "[default: the --bp-label-damping the model was trained with].")
@click.option("--bp-maxiter", "bp_maxiter", type=int, default=None, metavar="N",
              help="Skip-chain models: at most N rounds of belief propagation a document "
                   "[default: the model's --bp-maxiter].")
@click.option("--doc-sep", "doc_sep", default=None, metavar="REGEX",
              help="Skip-chain models: lines matching REGEX separate documents, as "
                   "-DOCSTART- lines do  [default: the --doc-sep the model was trained with]")
def label_command(model_file, input_file, output_file, labels_only, check, nthread, sep,
                  encoding, nbest, nbest_columns, score, marginals, post, force,
                  constraints, quiet, patterns_file, data_format, dask_address,
                  bp_damping, bp_maxiter, doc_sep) -> None:
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
    from dataclasses import replace

    from crfkit.foreign import read_model
    from crfkit.io.atomic import atomic_output
    from crfkit.io.reader import canonical_encoding, is_live, read_items
    from crfkit.labelling.label import (
        LabelOptions,
        check_output_encoding,
        kernel_decoding_pays,
        label_stream,
    )

    if nthread < 0:
        raise click.BadParameter("must be >= 0", param_hint="-t/--nthread")
    if data_format == "crfsuite":
        _refuse_dask_crfsuite(dask_address)
        _label_crfsuite(model_file, input_file, output_file, nthread=nthread,
                        labels_only=labels_only, check=check and not quiet,
                        encoding=encoding or "utf-8",
                        refused={"-n/--nbest": nbest, "--nbest-columns": nbest_columns or None,
                                 "-s/--score": score or None, "--marginals": marginals or None,
                                 "-p/--post": post or None, "--constraints": constraints,
                                 "--patterns": patterns_file, "--force": force or None,
                                 "--bp-damping": bp_damping, "--bp-maxiter": bp_maxiter,
                                 "--doc-sep": doc_sep})
        return
    options = LabelOptions(nbest=nbest, marginals=marginals, posterior=post, force=force,
                           constraints=constraints, scores=score, nbest_columns=nbest_columns,
                           check=check, labels_only=labels_only,
                           separator="\t" if sep == "tab" else " ",
                           structure={"bp_damping": bp_damping, "bp_maxiter": bp_maxiter})
    options.validate()
    model = read_model(model_file, patterns=patterns_file, encoding=encoding or "utf-8")
    if dask_address is not None and _documents_of(model)[0]:  # shards would cut documents
        from crfkit.errors import UsageError

        raise UsageError("--dask cannot label with a skip-chain model (its documents must "
                         "stay whole)")
    if not options.uses_kernels and kernel_decoding_pays(model, input_file):
        options = replace(options, prefer_kernels=True)
    if options.uses_kernels:  # the plain best path is numpy only: no Numba to load
        from crfkit.kernels.blocks import set_thread_count

        set_thread_count(nthread)
    if (options.uses_kernels or model.model_type == "skipchain") and not quiet:
        from crfkit.structures import named
        from crfkit.training.jitcache import announce_label_compile

        announce_label_compile(lambda line: click.echo(line, err=True),
                               getattr(model, "structure", None) or named("chain"))
    if encoding is None:
        encoding = model.encoding
    canonical_encoding(encoding)  # one error line for an unknown one, before any output
    check_output_encoding(model, encoding)
    source = "<stdin>" if input_file == "-" else input_file
    threads = nthread or _cores()
    meter = _label_meter(quiet, output_file)
    whole_documents, doc_sep = _documents_of(model, doc_sep)
    with atomic_output(output_file, encoding=encoding) as out, _without_cycle_collection(), \
            _erased_at_exit(meter):
        stats = None
        if dask_address is not None:
            from crfkit.dask.command import label_on_dask

            stats = label_on_dask(dask_address, model, input_file, out, options,
                                  encoding=encoding, sep=sep)
        elif threads > 1 and input_file != "-" and os.path.isfile(input_file) \
                and not whole_documents:
            from crfkit.labelling.forklabel import label_file_in_two

            stats = label_file_in_two(model, input_file, out, options, encoding=encoding,
                                      sep=sep, meter=meter)
        if stats is None:
            if meter is not None:
                meter.restart()
            items = read_items(input_file, encoding=encoding, sep=sep,
                               pauses=is_live(input_file), doc_sep=doc_sep)
            stats = label_stream(model, items, out, options, source=source, threads=threads,
                                 progress=meter.add if meter is not None else None)
    if check and stats.tokens and not quiet:
        click.echo(f"* {stats.sequences} sequences, {stats.tokens} tokens, token accuracy "
                   f"{100.0 * stats.correct / stats.tokens:.2f}%", err=True)
    if whole_documents and dask_address is None:
        from crfkit.structures.skipchain.documents import unmarked_input_warning

        warning = unmarked_input_warning(stats.sequences, stats.markers, doc_sep)
        if warning:
            click.echo(warning, err=True)
    if stats.unsettled:
        n = stats.unsettled
        click.echo(f"* belief propagation did not settle in {n} document{'s' * (n != 1)}: "
                   f"labels there are those of its last round (label with a larger "
                   f"--bp-damping or --bp-maxiter)", err=True)


def _documents_of(model, doc_sep: str | None = None) -> tuple[bool, str | None]:
    """Whether labelling must keep documents whole (a skip-chain model: never cut a file in
    two), and the document separator: ``doc_sep`` if given, else the model's training one."""
    if model.model_type != "skipchain":
        if doc_sep is not None:
            from crfkit.errors import UsageError

            raise UsageError("--doc-sep separates the documents of skip-chain models; this "
                             f"is a {model.model_type} model")
        return False, None
    from crfkit.structures.skipchain.documents import model_skip_options

    return True, doc_sep if doc_sep is not None else model_skip_options(model).doc_sep


def _label_crfsuite(model_file: str, input_file: str, output_file: str, *, nthread: int,
                    labels_only: bool, check: bool, encoding: str, refused: dict) -> None:
    """label --format crfsuite: an attribute model over a CRFsuite data file."""
    from crfkit.attributes.data_file import label_file
    from crfkit.errors import UsageError
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


def _cores() -> int:
    """Cores this process may run on (what Numba's default thread count also follows)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


@cli.command("convert", short_help="Convert a CRF++, Wapiti or CRFsuite model to crfkit's.")
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


@cli.command("dump", short_help="Write a model's weights as text.")
@click.argument("model_file", metavar="MODEL", type=click.Path(exists=True, dir_okay=False))
@click.argument("output_file", metavar="[OUTPUT]", default="-", type=click.Path(allow_dash=True))
@click.option("--top", type=int, default=None,
              help="Only the K strongest features (largest |weight|) of each label.")
@click.option("--threshold", type=float, default=0.0, show_default=True,
              help="Hide features with |weight| below this.")
@click.option("--encoding", default=None,
              help="Text encoding of OUTPUT  [default: the model's training encoding]")
def dump_command(model_file, output_file, top, threshold, encoding) -> None:
    """Write a model as text: patterns, labels, then one line per non-zero weight
    (observation TAB label-or-prev->label TAB weight). OUTPUT defaults to stdout."""
    from crfkit.io.atomic import atomic_output
    from crfkit.model.describe import dump
    from crfkit.model.model import Model

    model = Model.load(model_file)
    with atomic_output(output_file, encoding=encoding or model.encoding) as out:
        dump(model, out, top=top, threshold=threshold)


@cli.command("info", short_help="Describe a model and how it was trained.")
@click.argument("model_file", metavar="MODEL", type=click.Path(exists=True, dir_okay=False))
def info_command(model_file) -> None:
    """Describe a model: labels, sizes, patterns, training options and corpus."""
    from crfkit.model.describe import write_info
    from crfkit.model.model import Model

    write_info(Model.load(model_file), sys.stdout)


@cli.command("eval", short_help="Score tagged output exactly like conlleval.")
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
def eval_command(input_file, delimiter, outside, raw, latex, fmt, tokens, scheme, encoding,
                 confusion, report_dir) -> None:
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
    )


@cli.command("patterns", short_help="Show how a pattern file compiles and what it generates.")
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


@cli.command("help", short_help="Show the manual page of crfkit or of a command.")
@click.argument("command_name", metavar="[COMMAND]", required=False)
@click.option("--troff", is_flag=True, help="Print the page's troff source instead.")
@click.option("--markdown", is_flag=True,
              help="Print the page as Markdown (the documentation's command reference).")
@click.option("--write-man", "man_dir", default=None, metavar="DIR",
              help="Write crfkit.1 and crfkit-COMMAND.1 for every command into DIR (for "
                   "example ~/.local/share/man/man1), so that 'man crfkit-train' works.")
def help_command(command_name, troff, markdown, man_dir) -> None:
    """Show the manual page of crfkit, or of COMMAND, built from the options themselves.

    On a terminal the page opens in man; elsewhere (a pipe, a file) it is the
    text of 'crfkit COMMAND --help', with the same option groups.
    """
    from crfkit.cli.manpage import render_page, show_help, write_pages

    if man_dir is not None:
        for path in write_pages(cli, man_dir):
            click.echo(path)
    elif troff:
        click.echo(render_page(cli, command_name), nl=False)
    elif markdown:
        from crfkit.cli.helpmarkdown import render_markdown

        click.echo(render_markdown(cli, command_name), nl=False)
    else:
        show_help(cli, command_name)


def main() -> None:
    """Console entry point."""
    # Numba's first call imports scipy (~1 s) only to look for BLAS, which
    # crfkit's kernels never use. In the CLI process (not in library use, where
    # the caller may want scipy) we tell it there is none.
    sys.modules.setdefault("scipy.linalg.cython_blas", None)
    cli(prog_name="crfkit")


if __name__ == "__main__":
    main()
