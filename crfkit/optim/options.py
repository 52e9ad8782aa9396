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

KAPPA = Option("kappa", ("--kappa",), None,
               "-a bcd: scales the curvature of each block's step bound; larger is slower "
               "and safer (Wapiti's)  [default: 1.5]", kind=float, reads=("bcd",))
SPARSE = Option("sparse", ("-s", "--sparse"), False,
                "Wapiti's sparse forward-backward: accepted, changes nothing (crfkit's "
                "kernels never exponentiate a zero block: see the algorithms guide)",
                reads=("l-bfgs", "sgd-l1", "bcd"))

SGD_OPTIONS = (ETA0, ALPHA, SEED)
BCD_OPTIONS = (KAPPA, SPARSE)
ONLINE_OPTIONS = (PA_TYPE, PA_C, VARIANCE, GAMMA)
