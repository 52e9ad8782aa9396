"""crfkit train's CRFsuite habits around a training: ``-g N`` groups with ``--holdout K`` or
``-x`` (cross-validation), and ``-l`` (the training log to a file named after the run)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import click

from crfkit.errors import UsageError
from crfkit.progress import Progress


def wants_groups(o: SimpleNamespace) -> bool:
    return bool(o.cross_validate) or o.holdout is not None or o.split is not None


def check_group_options(o: SimpleNamespace) -> None:
    """-g, --holdout and -x as CRFsuite pairs them, refused in one line otherwise."""
    if not wants_groups(o):
        return
    if o.split is None:
        raise UsageError("-x/--cross-validate and --holdout K need -g/--split N (the number "
                         "of groups to deal the sequences into)")
    if not o.cross_validate and o.holdout is None:
        raise UsageError("-g/--split N deals the sequences into groups for --holdout K or "
                         "-x/--cross-validate: give one of them")
    if o.cross_validate and o.holdout is not None:
        raise UsageError("-x/--cross-validate holds out every group in turn: drop --holdout")
    if o.holdout is not None:
        from crfkit.training.crossval import check_holdout

        check_holdout(o.holdout, o.split)
    refused = {"-d/--devel": o.devel_file, "--dask": o.dask_address,
               "-m/--model": o.init_file if o.cross_validate else None,
               "--report": o.report_dir if o.cross_validate else None}
    for option, value in refused.items():
        if value is not None:
            raise UsageError(f"{option} cannot be combined with -g/--split (the held-out "
                             f"group is the development set)")


def sentences(items: Iterable, progress: Progress) -> list:
    """The sequences of a reader's items; document markers are dropped (groups deal
    sentences), with a warning if there were any."""
    from crfkit.io.reader import Sequence

    kept, markers = [], 0
    for item in items:
        if isinstance(item, Sequence):
            kept.append(item)
        else:
            markers += 1
    if markers:
        progress.warning(f"-g/--split deals sentences into groups: {markers} document "
                         f"marker(s) ignored")
    return kept


def holdout_split(items: Iterable, n_groups: int, holdout: int,
                  progress: Progress) -> tuple[list, list]:
    """(training sequences, the sequences of group ``holdout``): CRFsuite's -g N -e K."""
    from crfkit.training.crossval import crfsuite_groups, split_group

    seqs = sentences(items, progress)
    rest, held = split_group(seqs, crfsuite_groups(len(seqs), n_groups), holdout - 1)
    progress.message(f"* group {holdout} of {n_groups} held out for evaluation: "
                     f"{len(held)} sequences; training on the other {len(rest)}")
    return rest, held


def run_cross_validation(given: dict[str, Any], o: SimpleNamespace, progress: Progress) -> None:
    """-x: train on all groups but one and score it, for each group; the per-fold and mean
    scores go to standard output, no model is written (as CRFsuite)."""
    from crfkit.features.patterns import read_patterns
    from crfkit.io.reader import read_items
    from crfkit.training.crossval import column_fold, cross_validate
    from crfkit.training.train import train_options_from

    options = train_options_from(given)
    options.validate()
    patterns = read_patterns(o.pattern_file, encoding=o.encoding, regex_mode=o.regex)
    items = read_items(o.input_file, encoding=o.encoding, sep=o.sep, min_columns=2)
    seqs = sentences(progress.counted(items), progress)
    source = "<stdin>" if o.input_file == "-" else o.input_file
    fold = column_fold(patterns, options, progress, source)
    show_scores(cross_validate(fold, seqs, o.split, progress=progress), o.split)


def show_scores(scores: list, n_groups: int) -> None:
    """The per-fold and mean lines on standard output; Ctrl-C's folds left unscored said."""
    from crfkit.training.crossval import summary_lines

    for line in summary_lines(scores):
        click.echo(line)
    if len(scores) < n_groups:
        click.echo(f"crfkit: interrupted after {len(scores)} of {n_groups} folds", err=True)
        click.get_current_context().exit(130)


def log_file_name(base: str, given: dict[str, Any]) -> str:
    """CRFsuite's -l file name: the base, the algorithm, then each option given as
    NAME=VALUE, joined by '_' (CRFsuite joins its -p parameters so)."""
    algo = given.get("algo") or "l-bfgs"
    parts = [base, algo]
    for name, value in given.items():
        if name != "algo" and value is not None and not isinstance(value, dict):
            parts.append(f"{name}={value}")
    return "_".join(parts)


def train_crfsuite_groups(o: SimpleNamespace, options: Any, settings: Any,
                          progress: Progress) -> Any:
    """--format crfsuite with -g: the -x scores (None returned), or the model trained on
    every group but --holdout's, that group scored after the training."""
    from crfkit.attributes.data_file import (
        labels_in_order,
        predicted_labels,
        read_sequences,
        train_sequences,
    )
    from crfkit.training.crossval import (
        crfsuite_deal,
        cross_validate,
        score,
        split_group,
    )

    seqs = list(read_sequences(o.input_file, encoding=o.encoding))
    labels = labels_in_order(seqs)  # CRFsuite's label set: from every group
    # as CRFsuite's front end: the groups in its shuffled order, the online trainers'
    # shuffles continuing rand() after the deal's draws
    order, groups = crfsuite_deal(len(seqs), o.split)
    seqs, groups = [seqs[i] for i in order], groups[order]
    options = replace(options, rand_drawn=len(seqs))

    def fold(rest: list, held: list) -> tuple[list, list, int, bool]:
        model = train_sequences(rest, options, settings, progress=progress, path=o.input_file,
                                labels=labels)
        return ([s.labels for s in held], predicted_labels(model, held),
                int(model.info.get("iterations", 0)),
                model.info.get("stop_reason") == "interrupted")

    if o.cross_validate:
        show_scores(cross_validate(fold, seqs, o.split, progress=progress, groups=groups),
                    o.split)
        return None
    rest, held = split_group(seqs, groups, o.holdout - 1)
    progress.message(f"* group {o.holdout} of {o.split} held out for evaluation: "
                     f"{len(held)} sequences; training on the other {len(rest)}")
    gold = [s.labels for s in held]

    def scored(model: Any) -> str:
        got = score(gold, predicted_labels(model, held), o.holdout, 0, 0.0)
        return f"group {o.holdout}: accuracy {got.accuracy:6.2f}%  F1 {got.f1:6.2f}"

    def each_iteration(model: Any) -> None:  # CRFsuite's holdout evaluation
        progress.message(f"    held-out {scored(model)}")

    model = train_sequences(rest, options, settings, progress=progress, path=o.input_file,
                            labels=labels, on_weights=each_iteration)
    model.info["train_file"] = "<stdin>" if o.input_file == "-" else o.input_file
    progress.message(f"* held-out {scored(model)}")
    return model
