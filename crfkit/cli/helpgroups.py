"""Options shown in named groups, in ``--help`` and in the manual pages alike.

A command with many options lists them by concern (model, stopping, devel set, ...)
instead of one long alphabet soup. The group of each option is data, kept here apart
from the option declarations: ``GroupedCommand`` takes a tuple of
``(title, (option name, ...))`` and writes one help section per title, and
:mod:`crfkit.cli.manpage` reads the same tuple, so the two never disagree. Only click is
imported: ``crfkit --help`` pays nothing for it.
"""

from __future__ import annotations

from collections.abc import Sequence

import click

OptionGroups = Sequence[tuple[str, Sequence[str]]]
"""(group title, names of the options in it, in display order), in display order."""

MODEL = "Model and structure"
REGULARISATION = "Regularisation"
STOPPING = "Stopping"
DEVEL = "Devel set"
FEATURES = "Features"
ALGORITHM = "Algorithm-specific"
SKIP_CHAIN = "Skip chain"
LATENT = "Hidden states"
PERFORMANCE = "Performance and memory"
INPUT_OUTPUT = "Input/output"
DASK = "Dask"
SEARCH = "Search"
DECODING = "Decoding"
HELP = "Help"

TRAIN_GROUPS: OptionGroups = (
    (MODEL, ("pattern_file", "model_type", "algo", "order", "structure", "init_file",
               "compact")),
    (REGULARISATION, ("rho1", "rho2", "cost")),
    (STOPPING, ("maxiter", "stopeps", "stopwin", "l1_gtol", "error_window", "error_eps")),
    (DEVEL, ("devel_file", "keep_best_devel", "devel_patience", "split", "holdout",
             "cross_validate")),
    (FEATURES, ("cutoff", "all_features", "all_labels", "all_transitions", "likely",
                "likely_after", "regex")),
    (ALGORITHM, ("history", "max_linesearch", "linesearch", "clip", "stpmin", "stpmax",
                 "stpinc", "stpdec", "rprop_cutoff", "eta0", "alpha", "seed", "pa_type", "pa_c",
                 "variance", "gamma", "calibration_eta", "calibration_rate",
                 "calibration_samples", "calibration_candidates", "calibration_max_trials",
                 "mira_c", "shrinking_size", "kappa", "save_state", "restore_state")),
    (SKIP_CHAIN, ("skip_mode", "skip_cap", "bp_maxiter", "bp_tol", "bp_damping",
                  "bp_label_damping", "doc_sep")),
    (LATENT, ("latent", "latent_start", "latent_seed")),
    (PERFORMANCE, ("nthread", "max_memory", "sparse")),
    (INPUT_OUTPUT, ("data_format", "sep", "encoding", "report_dir", "log_to_file", "logbase",
                    "quiet")),
    (DASK, ("dask_address",)),
    (HELP, ("help",)),
)

TUNE_GROUPS: OptionGroups = (
    (MODEL, ("pattern_file", "model_type", "order", "structure", "latent",
            "latent_start", "latent_seed")),
    (SEARCH, ("rho1_list", "rho2_list", "likely_list", "no_warm_start")),
    (DEVEL, ("devel_file", "folds", "seed")),
    (STOPPING, ("maxiter", "stopeps", "path_stopeps", "stopwin")),
    (FEATURES, ("cutoff", "all_features", "all_labels")),
    (ALGORITHM, ("history",)),
    (PERFORMANCE, ("jobs", "nthread")),
    (INPUT_OUTPUT, ("sep", "encoding", "report_dir", "as_json", "quiet")),
    (HELP, ("help",)),
)

LABEL_GROUPS: OptionGroups = (
    (MODEL, ("model_file", "patterns_file")),
    (DECODING, ("post", "nbest", "constraints", "force", "cost_factor")),
    (INPUT_OUTPUT, ("data_format", "sep", "encoding", "labels_only", "check", "nbest_columns",
                    "score", "marginals", "quiet")),
    (SKIP_CHAIN, ("bp_damping", "bp_maxiter", "doc_sep")),
    (LATENT, ("latent_decode",)),
    (PERFORMANCE, ("nthread",)),
    (DASK, ("dask_address",)),
    (HELP, ("help",)),
)


class GroupedCommand(click.Command):
    """A click command whose ``--help`` writes one options section per group."""

    def __init__(self, *args, option_groups: OptionGroups = (), **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.option_groups = option_groups

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        for title, params in grouped_options(self, ctx):
            rows = [row for row in (p.get_help_record(ctx) for p in params) if row]
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)


def grouped_options(command: click.Command,
                    ctx: click.Context) -> list[tuple[str, list[click.Option]]]:
    """The command's options as (title, options) sections: its groups in order, then any
    option no group names under "Other options" (so none is ever hidden from help).
    A command without groups gives one "Options" section, as click does."""
    options = named_options(command, ctx)
    groups = getattr(command, "option_groups", ())
    if not groups:
        return [("Options", list(options.values()))]
    sections = []
    for title, names in groups:
        sections.append((title, [options.pop(name) for name in names if name in options]))
    if options:
        sections.append(("Other options", list(options.values())))
    return sections


def named_options(command: click.Command, ctx: click.Context) -> dict[str, click.Option]:
    """The command's options by the names the groups use: the help option is "help"
    whatever click calls its parameter (newer click names it privately)."""
    help_option = command.get_help_option(ctx)
    help_name = help_option.name if help_option is not None else None
    return {("help" if p.name == help_name else p.name): p
            for p in command.get_params(ctx) if isinstance(p, click.Option)}
