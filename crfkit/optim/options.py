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
              "sgd-l1, l2sgd: seed of the sequence order; ap, pa, arow: srand()'s seed "
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

SGD_OPTIONS = (ETA0, ALPHA, SEED)
ONLINE_OPTIONS = (PA_TYPE, PA_C, VARIANCE, GAMMA)

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
MAXLS = Option("max_linesearch", ("--maxls",), None,
               "l-bfgs: objective evaluations per line search before training stops "
               "(Wapiti's --maxls)  [default: 30]", kind=int, metavar="N", reads=("l-bfgs",))
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
WAPITI_OPTIMISER_OPTIONS = (MAXLS, CLIP, SSTATE, RSTATE)
