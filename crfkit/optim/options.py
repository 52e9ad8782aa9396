"""The options of the training algorithms, each declared once: its flags, help and the
algorithms that read it. The command line is built from these (crfkit.cli.click_options).

They sit here rather than beside each algorithm because ``lbfgs`` and ``sgd`` load Numba
when imported, and ``crfkit train --help`` must not.
"""

from __future__ import annotations

import click

from crfkit.options import Option

L1_GTOL = Option("l1_gtol", ("--l1-gtol",), None,
                 "With -1 (OWL-QN): also stop once the pseudo-gradient's norm has stayed "
                 "below X times its start for the window; 0: the objective rule alone  "
                 "[default: 1e-4]", kind=float, metavar="X", reads=("l-bfgs",))
HISTORY = Option("history", ("--history",), None, "L-BFGS history size  [default: 6]",
                 kind=int, reads=("l-bfgs",))
ETA0 = Option("eta0", ("--eta0",), None,
              "sgd-l1: initial learning rate  [default: calibrated on a sample of "
              "1000 sequences]", kind=float, reads=("sgd-l1",))
ALPHA = Option("alpha", ("--alpha",), None,
               "sgd-l1: learning-rate decay per epoch, in (0, 1]  [default: 0.8]", kind=float,
               reads=("sgd-l1",))
SEED = Option("seed", ("--seed",), None,
              "sgd-l1: seed of the sequence order; ap, pa, arow, l2sgd: srand()'s seed "
              "of CRFsuite's shuffle (0 and 1: CRFsuite's own order)  [default: 0]", kind=int,
              reads=("sgd-l1", "ap", "l2sgd", "pa", "arow"))
PA_TYPE = Option("pa_type", ("--pa-type",), None, "-a pa: 0 PA, 1 PA-I, 2 PA-II  [default: 1]",
                 kind=click.IntRange(0, 2), reads=("pa",))
PA_C = Option("pa_c", ("--pa-c",), None,
              "-a pa: aggressiveness C of PA-I and PA-II  [default: 1]", kind=float,
              reads=("pa",))
VARIANCE = Option("variance", ("--variance",), None,
                  "-a arow: initial variance of every weight  [default: 1]", kind=float,
                  reads=("arow",))
GAMMA = Option("gamma", ("--gamma",), None,
               "-a arow: trade-off between loss and change  [default: 1]", kind=float,
               reads=("arow",))

LINESEARCH = Option("linesearch", ("--linesearch",), None,
                    "l-bfgs without -1: CRFsuite's line search, MoreThuente, Backtracking "
                    "(Wolfe conditions) or StrongBacktracking  [default: crfkit's own "
                    "backtracking]", kind=click.Choice(("MoreThuente", "Backtracking",
                                                        "StrongBacktracking"),
                                                       case_sensitive=False),
                    metavar="NAME", reads=("l-bfgs",))
MAX_LINESEARCH = Option("max_linesearch", ("--max-linesearch", "--maxls"), None,
                        "l-bfgs: trial steps of one line search before the run stops "
                        "(CRFsuite's max_linesearch, Wapiti's --maxls)  [default: 30; with "
                        "--linesearch: 20, as CRFsuite]", kind=int,
                        metavar="N", reads=("l-bfgs",))

# l2sgd's calibration of eta0: CRFsuite's calibration.* parameters (name, kind, its help)
_CALIBRATION = (
    ("eta", float, "first learning rate the calibration tries  [default: 0.1]"),
    ("rate", float, "factor between two rates the calibration tries  [default: 2]"),
    ("samples", int, "sequences the calibration trains on  [default: 1000]"),
    ("candidates", int, "rates that lower the loss tried each way  [default: 10]"),
    ("max_trials", int, "rates tried at most  [default: 20]"),
)
CALIBRATION_OPTIONS = tuple(
    Option(f"calibration_{name}", (f"--calibration-{name.replace('_', '-')}",), None,
           f"l2sgd: {text.replace('  [', f' (calibration.{name})  [')}", kind=kind,
           metavar="X" if kind is float else "N", reads=("l2sgd",))
    for name, kind, text in _CALIBRATION)
CALIBRATION_NAMES = tuple(o.name for o in CALIBRATION_OPTIONS)
MIRA_C = Option("mira_c", ("--mira-c",), None,
                "-a mira: the cap C on each sequence's sum of steps (CRF++'s -c; --cost C "
                "sets it too with -a mira)  [default: 1]", kind=float, metavar="C",
                reads=("mira",))
SHRINKING_SIZE = Option("shrinking_size", ("-H", "--shrinking-size"), None,
                        "-a mira: skip a sequence decoded right N epochs running, until an "
                        "epoch without KKT violation (CRF++'s -H)  [default: 20]", kind=int,
                        metavar="N", reads=("mira",))

KAPPA = Option("kappa", ("--kappa",), None,
               "-a bcd: scales the curvature of each block's step bound; larger is slower "
               "and safer (Wapiti's)  [default: 1.5]", kind=float, reads=("bcd",))
SPARSE = Option("sparse", ("-s", "--sparse"), False,
                "Wapiti's sparse forward-backward: accepted, changes nothing (crfkit's "
                "kernels never exponentiate a zero block: see the algorithms guide)",
                reads=("l-bfgs", "sgd-l1", "bcd"))

SGD_OPTIONS = (ETA0, ALPHA, SEED)
BCD_OPTIONS = (KAPPA, SPARSE)
LBFGS_OPTIONS = (HISTORY, LINESEARCH, MAX_LINESEARCH)
ONLINE_OPTIONS = (PA_TYPE, PA_C, VARIANCE, GAMMA)
MIRA_OPTIONS = (MIRA_C, SHRINKING_SIZE)

_RPROP = ("rprop", "rprop+", "rprop-")
_RESUMABLE = ("l-bfgs", *_RPROP)
STPMIN = Option("stpmin", ("--stpmin",), None,
                "rprop: smallest step of a weight  [default: 1e-8]", kind=float, reads=_RPROP)
STPMAX = Option("stpmax", ("--stpmax",), None,
                "rprop: largest step of a weight  [default: 50]", kind=float, reads=_RPROP)
STPINC = Option("stpinc", ("--stpinc",), None,
                "rprop: step factor while the gradient keeps its sign  [default: 1.2]",
                kind=float, reads=_RPROP)
STPDEC = Option("stpdec", ("--stpdec",), None,
                "rprop: step factor when the gradient changes sign  [default: 0.5]",
                kind=float, reads=_RPROP)
RPROP_CUTOFF = Option("rprop_cutoff", ("--rprop-cutoff",), False,
                      "rprop with -1: set a weight to zero when its L1 subgradient contains 0 "
                      "(Wapiti's rprop --cutoff), instead of keeping steps in the "
                      "pseudo-gradient's orthant", reads=_RPROP)
CLIP = Option("clip", ("--clip",), False,
              "l-bfgs, rprop: the gradient is 0 where the weight is 0, so zero weights stay "
              "zero (Wapiti's --clip; with -m MODEL: train only the model's non-zero weights)",
              reads=_RESUMABLE)
SSTATE = Option("save_state", ("--sstate",), None,
                "l-bfgs, rprop: write the optimiser's state to FILE when training ends "
                "(Ctrl-C and -i included), for --rstate", kind=str, metavar="FILE",
                reads=_RESUMABLE)
RSTATE = Option("restore_state", ("--rstate",), None,
                "l-bfgs, rprop: continue the run whose --sstate FILE this is, as if it had "
                "not stopped (same data, patterns and options; -i counts all iterations)",
                kind=str, metavar="FILE", reads=_RESUMABLE)

RPROP_OPTIONS = (STPMIN, STPMAX, STPINC, STPDEC, RPROP_CUTOFF)
WAPITI_OPTIMISER_OPTIONS = (CLIP, SSTATE, RSTATE)
