"""crfkit train: the options, and the reading around the library's training call."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from types import SimpleNamespace
from typing import Any, TextIO

import click

from crfkit.cli.click_options import click_options
from crfkit.cli.common import (
    ALGORITHM_NAMES,
    MODEL_TYPE_NAMES,
    SEPARATORS,
    existing_file,
    refuse_dask_crfsuite,
    report_log,
    structure_values,
)
from crfkit.cli.helpgroups import TRAIN_GROUPS, GroupedCommand
from crfkit.cli.train_groups import (
    check_group_options,
    holdout_split,
    log_file_name,
    run_cross_validation,
    train_crfsuite_groups,
)
from crfkit.errors import CrfkitError, UsageError
from crfkit.io import shipped
from crfkit.optim.options import (
    BCD_OPTIONS,
    CALIBRATION_OPTIONS,
    L1_GTOL,
    LBFGS_OPTIONS,
    MIRA_OPTIONS,
    ONLINE_OPTIONS,
    RPROP_OPTIONS,
    SGD_OPTIONS,
    WAPITI_OPTIMISER_OPTIONS,
)
from crfkit.options import Option
from crfkit.progress import Progress
from crfkit.structures import STRUCTURE, declared_train_options
from crfkit.training.run_options import OBJECTIVE_OPTIONS, STOP_ON_ERROR_OPTIONS


@click.command("train", cls=GroupedCommand, option_groups=TRAIN_GROUPS,
               short_help="Train a model on a labelled column file.")
@click.option("-p", "--pattern", "pattern_file", default=None, metavar="FILE",
              help="Pattern (template) file, CRF++ or Wapiti syntax (optional with -m), or "
                   "the name of a shipped one ('crfkit patterns --list').")
@click.argument("input_file", metavar="[INPUT]", default="-", type=click.Path(allow_dash=True))
@click.argument("model_file", metavar="[MODEL]", default="crfkit.model", type=click.Path())
@click.option("-T", "--type", "model_type", default=None, metavar="|".join(MODEL_TYPE_NAMES),
              help="Model type; '-T list' describes them  [default: crf]")
@click.option("-a", "--algo", default=None, metavar="|".join(ALGORITHM_NAMES),
              help="Training algorithm; '-a list' describes them  [default: l-bfgs]")
@click.option("--likely-features", "likely", type=float, default=None, metavar="P",
              help="Train --likely-after iterations on the observed features, then add the "
                   "unseen observation x label (pair) features whose model probability "
                   "reaches P on some training token, and continue (first order).")
@click.option("--likely-after", type=int, default=None, metavar="N",
              help="With --likely-features: iterations before the features are added  "
                   "[default: 20]")
@click_options(OBJECTIVE_OPTIONS)
@click_options([L1_GTOL])
@click.option("-d", "--devel", "devel_file", default=None, metavar="FILE",
              help="Labelled development file, scored after every iteration. By itself it "
                   "changes nothing: training stops on the objective's rule and the model "
                   "is the one trained without -d.")
@click.option("--keep-best-devel", is_flag=True,
              help="With -d, keep the weights of the iteration with the best development "
                   "F1 instead of the last ones.")
@click_options(STOP_ON_ERROR_OPTIONS)
@click.option("--devel-patience", type=int, default=None, metavar="N",
              help="With -d, stop after N iterations without a better development F1 and "
                   "keep the best weights; 0 never stops on it  [default: 0]")
@click.option("-g", "--split", type=int, default=None, metavar="N",
              help="Deal the sequences into N groups as CRFsuite's -g does (its shuffle, "
                   "then round-robin), for --holdout or -x.")
@click.option("--holdout", type=int, default=None, metavar="K",
              help="With -g: train on every group but K and score group K after every "
                   "iteration (CRFsuite's -e K); the model is written.")
@click.option("-x", "--cross-validate", "cross_validate", is_flag=True,
              help="With -g N: N-fold cross-validation, each group held out in turn; prints "
                   "each fold's accuracy and F1 and their mean. No model is written.")
@click.option("-f", "--cutoff", "--freq", type=int, default=None,
              help="Ignore observations seen fewer than N times (CRF++'s --freq)  "
                   "[default: 1]")
@click.option("-c", "--compact", is_flag=True,
              help="Drop zero weights and the observations left without any (small L1 "
                   "models). Not CRF++'s -c: that is --cost.")
@click.option("-m", "--model", "init_file", default=None, metavar="FILE",
              help="Start from this model's weights: continue training, or fine-tune on new "
                   "data (new labels and observations are added).")
@click_options(SGD_OPTIONS)
@click.option("-t", "--nthread", type=int, default=None,
              help="Worker threads, 0 for all cores  [default: 0]")
@click_options(LBFGS_OPTIONS)
@click_options(WAPITI_OPTIMISER_OPTIONS)
@click_options(RPROP_OPTIONS)
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
@click_options(declared_train_options())
@click.option("--format", "data_format", type=click.Choice(["columns", "crfsuite"]),
              default="columns", show_default=True,
              help="INPUT is a column file read through patterns (-p), or a CRFsuite data "
                   "file (LABEL<TAB>ATTR[:VALUE]...; no pattern file).")
@click_options(ONLINE_OPTIONS + CALIBRATION_OPTIONS)
@click.option("-l", "--log-to-file", "log_to_file", is_flag=True,
              help="Write the training log to a file named after the run (CRFsuite's -l): "
                   "BASE_ALGORITHM_NAME=VALUE... of the options given.")
@click.option("-L", "--logbase", default="log.crfkit", show_default=True, metavar="BASE",
              help="With -l: the start of the log file's name.")
@click_options(MIRA_OPTIONS)
@click_options(BCD_OPTIONS)
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
def train_command(**params: Any) -> None:
    """Train a model on a labelled column file (the last column is the label).

    INPUT defaults to standard input (a pipe: a terminal is refused) and
    MODEL to ./crfkit.model. Ctrl-C stops training after the last finished
    iteration, writes the model trained so far and exits with status 130.
    """
    o = SimpleNamespace(**params)
    if "list" in (o.algo, o.model_type, o.structure):
        from crfkit.training.train import algorithm_list, structure_list, type_list

        click.echo(algorithm_list() if o.algo == "list" else type_list()
                   if o.model_type == "list" else structure_list())
        return
    o.algo = _algorithm_name(o.algo)
    if o.algo == "mira":
        o.mira_c = _mira_c_of(o.mira_c, o.cost)
    else:
        o.rho2 = _rho2_of(o.rho2, o.cost)
    o.pattern_file = shipped.pattern_file(o.pattern_file)
    _check_train_inputs(o.pattern_file, o.init_file, o.devel_file, o.input_file,
                        o.dask_address)
    given = _given(o)
    check_group_options(o)
    with _training_log(o, given) as stream:
        _run(given, o, Progress(stream, quiet=o.quiet))


@contextmanager
def _training_log(o: SimpleNamespace, given: dict[str, Any]) -> Iterator[TextIO | None]:
    """-l: the stream the training log goes to, a file named after the run (written as
    the training goes, to be followed while it runs, as CRFsuite's); else stderr (None)."""
    if not o.log_to_file:
        yield None
        return
    if o.dask_address is not None:
        raise UsageError("-l/--log-to-file is not available with --dask")
    name = log_file_name(o.logbase, given)
    try:
        stream = open(name, "w", encoding="utf-8", buffering=1)  # noqa: SIM115
    except OSError as err:
        raise CrfkitError(f"-l/--log-to-file: cannot write {name}: {err.strerror}") from None
    with stream:
        if not o.quiet:
            click.echo(f"* training log written to {name}", err=True)
        yield stream


def _run(given: dict[str, Any], o: SimpleNamespace, progress: Progress) -> None:
    from crfkit.cli.failures import save_trained
    from crfkit.io.atomic import check_writable
    from crfkit.training.memory import return_large_frees_to_the_os

    if o.data_format == "crfsuite":
        refuse_dask_crfsuite(o.dask_address)
        _train_crfsuite(given, o, progress,
                        refused={"-p/--pattern": o.pattern_file, "-m/--model": o.init_file,
                                 "-d/--devel": o.devel_file, "--report": o.report_dir,
                                 "-f/--cutoff": o.cutoff, "-c/--compact": o.compact or None})
        return
    _refuse_for_columns(o)
    if o.cross_validate:
        run_cross_validation(given, o, progress)
        return
    check_writable(o.model_file)  # before an hour of training, not after it
    check_writable(o.save_state)
    log = report_log(o.report_dir)
    return_large_frees_to_the_os()
    model, cluster_error = _train_here_or_on_dask(given, o, log, progress)
    save_trained(model, o.model_file)
    if cluster_error is not None:
        raise CrfkitError(f"{cluster_error}: the model of the last finished iteration "
                          f"({model.info['iterations']}) is written to {o.model_file}")
    if o.report_dir is not None:
        _write_training_report(o.report_dir, log, model, o.model_file)
    if model.info["stop_reason"] == "interrupted":
        click.echo(f"* model written to {o.model_file} (interrupted)", err=True)
        click.get_current_context().exit(130)
    if not o.quiet:
        click.echo(f"* model written to {o.model_file}", err=True)


def _given(o: SimpleNamespace) -> dict[str, Any]:
    """The options TrainOptions reads, None where not given (TrainOptions' default then)."""
    from crfkit.structures import train_options
    from crfkit.training.memory import parse_size

    given = {"algo": o.algo, "model_type": o.model_type, "likely": o.likely,
             "likely_after": o.likely_after, "rho1": o.rho1, "rho2": o.rho2,
             "maxiter": o.maxiter, "stopeps": o.stopeps, "stopwin": o.stopwin,
             "cutoff": o.cutoff, "nthread": o.nthread, "devel_patience": o.devel_patience,
             "keep_best_devel": o.keep_best_devel or None, "compact": o.compact or None,
             "all_features": o.all_features or None, "all_labels": o.all_labels or None,
             "max_memory": None if o.max_memory is None else parse_size(o.max_memory),
             "structure": structure_values(vars(o), train_options()),
             **_declared_values(o, ALGORITHM_OPTIONS)}
    return given


# the algorithms' declared options (crfkit.optim.options), read as TrainOptions' fields
ALGORITHM_OPTIONS = (L1_GTOL, *SGD_OPTIONS, *LBFGS_OPTIONS, *CALIBRATION_OPTIONS,
                     *ONLINE_OPTIONS, *MIRA_OPTIONS, *RPROP_OPTIONS, *WAPITI_OPTIMISER_OPTIONS,
                     *BCD_OPTIONS, *STOP_ON_ERROR_OPTIONS)


def _declared_values(o: SimpleNamespace, declared: tuple[Option, ...]) -> dict[str, Any]:
    """The values of declared options, None where not given (a flag left off: None too)."""
    return {d.name: getattr(o, d.name) if d.kind is not None else getattr(o, d.name) or None
            for d in declared}


def _rho2_of(rho2: float | None, cost: float | None) -> float | None:
    """CRF++'s --cost C is -2 1/C."""
    if cost is None:
        return rho2
    if rho2 is not None:
        raise UsageError("--cost C is CRF++'s spelling of -2 1/C: give one of them")
    if not cost > 0:
        raise UsageError(f"--cost must be > 0, got {cost}")
    return 1.0 / cost


def _algorithm_name(algo: str | None) -> str | None:
    """CRF++ spells its algorithm in capitals (-a MIRA) and reads it in any case."""
    return "mira" if algo is not None and algo.lower() == "mira" else algo


def _mira_c_of(mira_c: float | None, cost: float | None) -> float | None:
    """With -a mira, CRF++'s --cost C is MIRA's C."""
    if cost is None:
        return mira_c
    if mira_c is not None:
        raise UsageError("--cost C is CRF++'s spelling of --mira-c C with -a mira: give one "
                         "of them")
    return cost


def _refuse_for_columns(o: SimpleNamespace) -> None:
    """What a column-file training cannot take, refused before any work starts."""
    if o.all_transitions:
        raise UsageError("--all-transitions applies to --format crfsuite (a pattern file's "
                         "B patterns give the label-pair features)")
    if o.pattern_file is None and o.init_file is None:
        raise UsageError("give a pattern file with -p/--pattern (or an initial model with -m)")
    if o.dask_address is not None and o.regex != "crfkit":
        raise UsageError("--regex wapiti is not available with --dask")
    if o.dask_address is not None and o.save_state is not None:
        raise UsageError("--sstate cannot be combined with --dask (the corpus the state "
                         "is checked against stays on the workers)")
    if o.restore_state is not None:
        for given, option in ((o.init_file, "-m/--model"), (o.devel_file, "-d/--devel"),
                              (o.dask_address, "--dask")):
            if given is not None:
                raise UsageError(f"--rstate cannot be combined with {option}: the state "
                                 f"holds the weights and the run's history, not those")
        existing_file(o.restore_state, "--rstate", None)


def _train_here_or_on_dask(given: dict[str, Any], o: SimpleNamespace,
                           log: list[dict] | None,
                           progress: Progress) -> tuple[Any, str | None]:
    """The trained model, and the cluster's error if a Dask run ended early."""
    if o.dask_address is None:
        holdout = None if o.holdout is None else (o.split, o.holdout)
        return _train(given, o.pattern_file, o.input_file, o.devel_file, o.init_file,
                      sep=o.sep, encoding=o.encoding, progress=progress, log=log,
                      regex=o.regex, holdout=holdout), None
    from crfkit.dask.command import train_on_dask

    return train_on_dask(o.dask_address, given, o.pattern_file, o.input_file, o.devel_file,
                         o.init_file, sep=o.sep, encoding=o.encoding, quiet=o.quiet)


def _check_train_inputs(pattern_file: str | None, init_file: str | None,
                        devel_file: str | None, input_file: str,
                        dask_address: str | None) -> None:
    """Every input of ``train`` exists (with a hint for CRF++ habits) before work starts."""
    existing_file(pattern_file, "-p/--pattern",
                   "-p names the pattern file here; CRF++'s -p (threads) is -t")
    existing_file(init_file, "-m/--model",
                   "-m names a model to start from here; CRF++'s -m (iterations) is -i")
    existing_file(devel_file, "-d/--devel", None)
    if dask_address is not None:
        return  # the workers read INPUT (a file or a glob): crfkit.dask checks it
    if input_file != "-":
        existing_file(input_file, "INPUT", "CRF++'s '-c C' (cost) is '--cost C' here; "
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


def _train_crfsuite(given: dict, o: SimpleNamespace, progress: Progress, *,
                    refused: dict) -> None:
    """train --format crfsuite: a CRFsuite data file, no patterns (crfkit.attributes.data_file).
    Features as CRFsuite's defaults make them: the (attribute, label) and label pairs seen
    in training, unless --all-labels / --all-features (possible states) or
    --all-transitions (possible transitions) ask for every one."""
    from crfkit.attributes.attribute_model import AttributeTraining
    from crfkit.attributes.data_file import train_file
    from crfkit.cli.failures import save_trained
    from crfkit.io.atomic import check_writable
    from crfkit.training.train import TrainOptions

    for option, value in refused.items():
        if value is not None:
            raise UsageError(f"{option} does not apply to --format crfsuite (the data file "
                             f"holds the attributes)")
    # every attribute x label, with either option: the data file has no label-pair features
    all_states = bool(given.pop("all_features", None)) | bool(given.pop("all_labels", None))
    options = TrainOptions(**{k: v for k, v in given.items() if v is not None})
    options.validate()
    settings = AttributeTraining(all_states=all_states, all_transitions=o.all_transitions,
                                 epsilon=1e-5 if options.algo == "l-bfgs" else 0.0)
    if not o.cross_validate:
        check_writable(o.model_file)
    if o.split is None:
        model = train_file(o.input_file, options, settings, encoding=o.encoding,
                           progress=progress)
    else:
        model = train_crfsuite_groups(o, options, settings, progress)
        if model is None:  # -x: the scores are the output
            return
    save_trained(model, o.model_file)
    if not progress.quiet:
        click.echo(f"* model written to {o.model_file}", err=True)


def _train(given: dict, pattern_file: str | None, input_file: str, devel_file: str | None,
           init_file: str | None, *, sep: str, encoding: str, progress: Progress,
           log: list[dict] | None = None, regex: str = "crfkit",
           holdout: tuple[int, int] | None = None):
    """Read everything the train command names and train: the library call behind it."""
    from crfkit.features.patterns import read_patterns
    from crfkit.io.reader import canonical_encoding, read_items, read_sequences
    from crfkit.model.model import Model
    from crfkit.training.train import TrainOptions, train

    options = TrainOptions(**{k: v for k, v in given.items() if v is not None})
    options.validate()
    init = Model.load(init_file) if init_file else None
    patterns = (read_patterns(pattern_file, encoding=encoding, regex_mode=regex)
                if pattern_file else None)
    source = "<stdin>" if input_file == "-" else input_file
    # with the -DOCSTART- markers: a skip-chain model's documents
    sequences = read_items(input_file, encoding=encoding, sep=sep, min_columns=2,
                           doc_sep=options.structure.get("doc_sep"))
    devel = None
    if devel_file is not None:
        devel = read_sequences(devel_file, encoding=encoding, sep=sep, min_columns=2)
    sequences = progress.counted(sequences)
    if holdout is not None:  # -g N --holdout K: group K is the development set
        sequences, devel = holdout_split(sequences, *holdout, progress)
        devel_file = f"group {holdout[1]} of {source}"
    model = train(patterns, sequences, options, progress=progress,
                  source=source, devel=devel, devel_source=devel_file or "<devel>", init=init,
                  log=log)
    model.info["pattern_file"] = pattern_file or init_file
    model.info["train_file"] = source
    model.info["encoding"] = canonical_encoding(encoding)  # crfkit label's default
    if devel_file is not None:
        model.info["devel_file"] = devel_file
    return model


