"""The options every training algorithm reads: the objective's strengths and the stopping
rules (TrainOptions' fields of the same names), declared once for the command line. Light
on purpose: ``crfkit train --help`` reads them without numpy."""

from __future__ import annotations

from crfkit.options import Option

# the objective and the stopping rule every algorithm reads (its own defaults in brackets)
RHO1 = Option("rho1", ("-1", "--rho1"), None,
              "L1 regularisation strength; > 0 makes l-bfgs OWL-QN  [default: 0; sgd-l1: 0.3]",
              kind=float)
RHO2 = Option("rho2", ("-2", "--rho2"), None,
              "L2 regularisation strength (l-bfgs only)  [default: 1.0]", kind=float)
COST = Option("cost", ("--cost",), None,
              "CRF++'s -c/--cost: the same as -2 1/C; with -a mira, MIRA's C (--mira-c).",
              kind=float, metavar="C")
MAXITER = Option("maxiter", ("-i", "--maxiter"), None,
                 "Maximum number of iterations (epochs for the online algorithms), 0 for no "
                 "limit  [default: 0; ap, pa, arow: 100; l2sgd: 1000]", kind=int)
STOPEPS = Option("stopeps", ("-e", "--stopeps"), None,
                 "Stop when the objective improves by less than this (relative) over the "
                 "window; sgd-l1: by less than this share of its fall since the first epoch; "
                 "ap, pa, arow: CRFsuite's epsilon (the epoch's loss per sequence below it; "
                 "arow: at most it)  [default: 1e-5; sgd-l1: 0.02; l2sgd: 1e-6; ap, pa, "
                 "arow: 0]", kind=float)
STOPWIN = Option("stopwin", ("-o", "--stopwin", "--objwin"), None,
                 "Window (iterations) of the stopping rule (Wapiti's -o/--objwin)  "
                 "[default: 10; sgd-l1: 3]", kind=int)
OBJECTIVE_OPTIONS = (RHO1, RHO2, COST, MAXITER, STOPEPS, STOPWIN)

# Wapiti's stop on a stable token error (-w), whatever the algorithm (training.monitor reads it)
ERROR_WINDOW = Option("error_window", ("-w", "--error-window"), None,
                      "Stop once the token error (of -d's file, else of the training data) has "
                      "moved less than --error-eps points over the last N iterations (Wapiti's "
                      "-w/--stopwin); 0: never  [default: 0]", kind=int, metavar="N")
ERROR_EPS = Option("error_eps", ("--error-eps",), None,
                   "With -w: the largest move of the token error, in percentage points, that "
                   "counts as stable (Wapiti's -e for -w)  [default: 0.02]", kind=float,
                   metavar="X")
STOP_ON_ERROR_OPTIONS = (ERROR_WINDOW, ERROR_EPS)
