"""One-line hints for the options of CRF++, Wapiti and CRFsuite that crfkit spells otherwise.

Users of those tools type their habits: ``crf_learn -c 4 -p 2 tpl train model``,
``crf_test -v2 -o out``, ``wapiti train --histsz 8``, ``crfsuite learn -p c2=1``. Where
crfkit's own parser would reject them with a generic message (or, worse, accept them with
another meaning), :func:`habit_hint` recognises them from the raw argument list, before
click parses it, and names crfkit's spelling in one line. Each row of :data:`HABITS` is
one habit; the value test keeps a row from firing on crfkit's own use of the same letter
(``-p FILE`` is crfkit's pattern file, ``-p 2`` is CRF++'s thread count).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import click

ValueTest = Callable[[str | None], bool]


def _always(value: str | None) -> bool:
    return True


def _number(value: str | None) -> bool:
    return value is not None and re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?",
                                              value) is not None


def _count_not_file(value: str | None) -> bool:
    """A whole number where crfkit expects a file (and no such file exists)."""
    return value is not None and value.isdigit() and not os.path.exists(value)


def _not_int(value: str | None) -> bool:
    return value is None or re.fullmatch(r"[+-]?\d+", value) is None


def _assignment(value: str | None) -> bool:
    return value is not None and "=" in value and not os.path.exists(value)


def _group_number(value: str | None) -> bool:
    """CRFsuite's ``-e N`` (a group number), never a stopping epsilon below 1."""
    return value is not None and value.isdigit() and int(value) >= 1


def _values(*names: str) -> ValueTest:
    wanted = {n.lower() for n in names}
    return lambda value: value is not None and value.lower() in wanted


def _missing_file(value: str | None) -> bool:
    return value is not None and not value.startswith("-") and not os.path.exists(value)


@dataclass(frozen=True)
class Habit:
    """One habit: an option spelling of another tool, where it appears, and the hint."""

    tool: str  # whose habit: "CRF++", "Wapiti", "CRFsuite" (also the test table's label)
    commands: tuple[str, ...]  # crfkit commands it may appear in
    names: tuple[str, ...]  # its spellings (a value may follow, or be joined: -v2, --x=1)
    hint: str
    test: ValueTest = _always  # of the option's value (joined, or the next argument)


CRFSUITE_PARAMETERS = {
    "c1": "-1", "c2": "-2", "max_iterations": "-i", "epsilon": "-e", "delta": "-e",
    "period": "-o", "num_memories": "--history", "feature.minfreq": "-f",
    "feature.possible_states": "--all-labels", "type": "--pa-type", "c": "--pa-c",
    "variance": "--variance", "gamma": "--gamma", "linesearch": "--linesearch",
    "max_linesearch": "--max-linesearch", "calibration.eta": "--calibration-eta",
    "calibration.rate": "--calibration-rate", "calibration.samples": "--calibration-samples",
    "calibration.candidates": "--calibration-candidates",
    "calibration.max_trials": "--calibration-max-trials",
}
"""CRFsuite's ``-p NAME=VALUE`` training parameters and crfkit's option of the same role."""

TRAIN, LABEL, DUMP, TUNE = ("train",), ("label",), ("dump",), ("tune",)
TRAINING = ("train", "tune")

HABITS: tuple[Habit, ...] = (
    # crf_learn
    Habit("CRF++", TRAINING, ("-c",), "CRF++'s '-c C' (cost) is '--cost C' here (or -2 1/C); "
          "crfkit's -c is --compact", _number),
    Habit("CRF++", TRAINING, ("-p",), "CRF++'s -p (threads) is -t here: -t N; crfkit's -p "
          "names the pattern file", _count_not_file),
    Habit("CRF++", ("train",), ("-m",), "CRF++'s -m (iterations) is -i here: -i N; crfkit's "
          "-m names a model to start from", _count_not_file),
    Habit("CRF++", TRAINING, ("--thread",), "CRF++'s --thread N is -t/--nthread N here"),
    Habit("CRF++", TRAINING, ("--eta",), "CRF++'s --eta X (stopping tolerance) is "
          "-e/--stopeps X here (--eta0 is sgd-l1's learning rate)"),
    Habit("CRF++", TRAINING, ("-a", "--algo", "--algorithm"), "CRF++'s -a CRF/CRF-L2 is "
          "crfkit's default (l-bfgs with -2 1/C); CRF-L1 is -1 1/C (OWL-QN); -a MIRA is "
          "taken as it is", _values("CRF", "CRF-L1", "CRF-L2")),
    Habit("CRF++", TRAINING, ("-C", "--convert"), "CRF++'s -C (text model to binary) is "
          "'crfkit convert IN OUT' here"),
    Habit("CRF++", TRAINING, ("--textmodel",), "CRF++'s -t/--textmodel: 'crfkit dump MODEL' "
          "writes any model as text (crfkit's -t is the thread count)"),
    Habit("CRF++", TRAINING, ("-t",), "crfkit's -t is the thread count: CRF++'s -t (text "
          "model) is 'crfkit dump MODEL'; CRFsuite's -t 1d (model type) is crfkit's default "
          "(-T crf)", _not_int),
    Habit("CRF++", TRAINING + LABEL, ("-v", "--version"), "the version is 'crfkit --version'",
          lambda v: v is None or not v.isdigit()),
    # crf_test
    Habit("CRF++", LABEL, ("-v", "--verbose"), "crf_test's -v1 is -s here (sequence and "
          "label probabilities); -v2 is --marginals -s (every label's probability)", _number),
    Habit("CRF++", LABEL, ("-o", "--output"), "OUTPUT is the second argument here: crfkit "
          "label -m MODEL INPUT OUTPUT (crf_test's -o FILE)"),
    Habit("CRF++", LABEL, ("-c",), "crf_test's -c X (cost factor) is --cost-factor X "
          "here; crfkit's -c is --check (INPUT has gold labels)", _number),
    # Wapiti train
    Habit("Wapiti", TRAINING + LABEL, ("--me",), "Wapiti's --me is -T maxent at training; "
          "labelling reads the type from the model"),
    Habit("Wapiti", ("tune",), ("-w",), "Wapiti's -w (stop when the token error is stable "
          "over N iterations) is crfkit train's -w; tune stops on the objective "
          "(-o/--stopwin), or choose on a devel set with --devel-patience N"),
    Habit("Wapiti", TRAINING, ("--histsz",), "Wapiti's --histsz N is --history N here"),
    Habit("Wapiti", TRAINING, ("--cutoff",), "Wapiti's rprop --cutoff is --rprop-cutoff "
          "here; crfkit's --cutoff N drops observations seen fewer than N times", _not_int),
    Habit("Wapiti", TRAINING, ("-j", "--jobsize"), "Wapiti's -j/--jobsize is not needed "
          "here: -t sets the threads, which take fixed blocks of sequences as they come free "
          "(smaller jobs only add work)"),
    # CRFsuite learn
    Habit("CRFsuite", TRAINING, ("-a", "--algo", "--algorithm"), "CRFsuite's lbfgs is "
          "-a l-bfgs here", _values("lbfgs")),
    Habit("CRFsuite", TRAINING, ("-p", "--set"), "CRFsuite's -p NAME=VALUE parameters are "
          "options here: " + ", ".join(f"{k} {v}" for k, v in CRFSUITE_PARAMETERS.items()),
          _assignment),
    Habit("CRFsuite", ("train",), ("-m",), "-m names a model to start from here; the model "
          "to write is the last argument (crfkit train -p PATTERNS INPUT MODEL)",
          _missing_file),
    Habit("CRFsuite", TRAINING, ("-e",), "CRFsuite's -e N (holdout group) is --holdout N "
          "here (with -g GROUPS); crfkit's -e is the stopping epsilon", _group_number),
    Habit("CRFsuite", ("tune",), ("-x", "--cross-validate", "-g", "--split"), "cross-"
          "validation is 'crfkit train -g N -x' (or 'crfkit tune --folds K' to choose the "
          "regularisation)"),
    Habit("CRFsuite", TRAINING, ("-H",), "CRFsuite's -H (parameters) "
          "is 'crfkit train --help' and '-a list' here; crfkit's -H N is CRF++'s shrinking "
          "size (-a mira)", _not_int),
    Habit("CRFsuite", TRAINING, ("--type",), "CRFsuite's --type 1d is crfkit's default "
          "model type (-T/--type crf)", _values("1d", "crf1d")),
    Habit("CRF++", TRAINING, ("--algorithm",), "--algorithm is -a/--algo here ('-a list' "
          "describes the algorithms)"),
    # CRFsuite tag
    Habit("CRFsuite", LABEL, ("-t", "--test"), "CRFsuite's tag -t (evaluate) is -c/--check "
          "here, piped into 'crfkit eval'; crfkit's -t is the thread count", _not_int),
    Habit("CRFsuite", LABEL, ("-r", "--reference"), "CRFsuite's tag -r (reference labels) is "
          "-c/--check here: the gold column is kept before the prediction"),
    Habit("CRFsuite", LABEL, ("-i", "--marginal"), "CRFsuite's tag -i (marginals) is -s "
          "here (LABEL/PROB), --marginals for every label's"),
    Habit("CRFsuite", LABEL, ("--probability",), "CRFsuite's tag -p/--probability is -s "
          "here (crfkit's -p is Wapiti's posterior decoding)"),
)

COMMAND_HABITS = {
    "learn": "CRFsuite's 'learn' is 'crfkit train' (--format crfsuite reads its data files)",
    "tag": "CRFsuite's 'tag' is 'crfkit label' (--format crfsuite reads its data files)",
}


def habit_hint(command: click.Command | None, name: str, args: Sequence[str]) -> str | None:
    """The one-line hint for the first habit of another tool in ``args`` (the arguments
    after the command ``name``), or None if there is none. ``command`` is crfkit's command
    of that name (None: no such command)."""
    if command is None:
        hint = COMMAND_HABITS.get(name)
        return f"{name}: {hint}" if hint else None
    takes_value = _value_options(command)
    positionals: list[str] = []
    flags: set[str] = set()
    i = 0
    while i < len(args):
        token = args[i]
        if token == "--":
            positionals.extend(args[i + 1:])
            break
        option, joined = _split(token, takes_value)
        if option is None:
            positionals.append(token)
            i += 1
            continue
        value = joined if joined is not None else _next_value(args, i + 1, takes_value)
        habit = _matching(name, option, value)
        if habit is not None:
            return _message(habit, token, joined, value)
        flags.add(option)
        i += 2 if joined is None and takes_value.get(option, False) else 1
    return _order_hint(name, flags, positionals)


def _matching(command: str, option: str, value: str | None) -> Habit | None:
    for habit in HABITS:
        if command in habit.commands and option in habit.names and habit.test(value):
            return habit
    return None


def _message(habit: Habit, token: str, joined: str | None, value: str | None) -> str:
    """The one line: the habit as typed (with the value that made it one), then the hint;
    a CRFsuite parameter gets the one option it maps to."""
    hint = habit.hint
    if habit.test is _assignment:
        name = (value or "").partition("=")[0]
        if name in CRFSUITE_PARAMETERS:
            hint = f"CRFsuite's -p {name}=VALUE is {CRFSUITE_PARAMETERS[name]} VALUE here"
    shown = token
    if habit.test is not _always and joined is None and value is not None:
        shown = f"{token} {value}"
    return f"{shown}: {hint}"


def _order_hint(command: str, flags: set[str], positionals: list[str]) -> str | None:
    """crf_learn's argument order (TEMPLATE TRAIN MODEL): three positionals, no -p."""
    if command == "train" and len(positionals) == 3 and not flags & {"-p", "--pattern"}:
        template, data, model = positionals
        return (f"crf_learn's order 'TEMPLATE TRAIN MODEL' is 'crfkit train -p {template} "
                f"{data} {model}' here")
    return None


def _next_value(args: Sequence[str], at: int, known: dict[str, bool]) -> str | None:
    """The argument after an option, unless there is none or it is an option of crfkit's."""
    if at >= len(args) or _split(args[at], known)[0] in known:
        return None
    return args[at]


def _split(token: str, known: dict[str, bool]) -> tuple[str | None, str | None]:
    """(option, joined value) of an option token; (None, None) for a positional (a
    negative number is one, unless it is an option of the command: -1, -2)."""
    if token.startswith("--") and len(token) > 2:
        option, eq, value = token.partition("=")
        return option, value if eq else None
    if token.startswith("-") and len(token) > 1 and (token[:2] in known or not _number(token)):
        return token[:2], token[2:] or None
    return None, None


def _value_options(command: click.Command) -> dict[str, bool]:
    """Each option spelling of ``command``: whether it takes a value."""
    spellings: dict[str, bool] = {}
    for param in command.params:
        if isinstance(param, click.Option):
            takes = not (param.is_flag or param.count)
            for spelling in (*param.opts, *param.secondary_opts):
                spellings[spelling] = takes
    return spellings
