"""The settings of a training (:class:`TrainOptions`) and what a model records of them.

Defaults live here and nowhere else. A structure's own options (``--order``, the skip
chain's) are not fields: they arrive as ``TrainOptions.structure``, a dict of the values of
every structure-declared option by name (:func:`crfkit.structures.train_options`), and the
chosen structure reads and records its own.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from crfkit.errors import UsageError
from crfkit.model.types import MODEL_TYPES
from crfkit.model.types import model_type as model_type_row
from crfkit.optim import sgd
from crfkit.optim.bcd import DEFAULT_KAPPA
from crfkit.optim.optimality import L1_GTOL
from crfkit.optim.options import CALIBRATION_NAMES
from crfkit.structures import named
from crfkit.structures import train_options as structure_options
from crfkit.structures.base import Corpus, Structure

DEFAULT_RHO2 = 1.0

# Defaults that depend on the algorithm: sgd-l1's own (crfkit.optim.sgd: an L1 term,
# and a stopping rule suited to its epochs); CRFsuite's epsilon 0 for its ap, pa and
# arow (run every epoch asked for); every other one has these.
GENERAL_DEFAULTS = {"rho1": 0.0, "stopeps": 1e-5, "stopwin": 10}
ALGORITHM_DEFAULTS = {"sgd-l1": {"rho1": sgd.DEFAULT_RHO1, "stopeps": sgd.DEFAULT_STOP_EPS,
                                 "stopwin": sgd.DEFAULT_STOP_WINDOW},
                      **{name: {"stopeps": 0.0} for name in ("ap", "pa", "arow")},
                      "l2sgd": {"stopeps": 1e-6}}  # CRFsuite's delta


@dataclass(frozen=True)
class Terms:
    """What an algorithm can be combined with: the model types it trains, its penalties."""

    types: tuple[str, ...]
    l1: bool
    l2: bool


_ONLINE_TYPES = tuple(name for name, t in MODEL_TYPES.items() if t.online)
# the runners are crfkit.training.algorithms.ALGORITHMS, in this order
ALGORITHM_TERMS = {"l-bfgs": Terms(tuple(MODEL_TYPES), True, True),
                   **{name: Terms(tuple(MODEL_TYPES), True, True)
                      for name in ("rprop", "rprop+", "rprop-")},
                   "sgd-l1": Terms(_ONLINE_TYPES, True, False),
                   "ap": Terms(_ONLINE_TYPES, False, False),
                   "l2sgd": Terms(_ONLINE_TYPES, False, True),
                   "pa": Terms(_ONLINE_TYPES, False, False),
                   "arow": Terms(_ONLINE_TYPES, False, False),
                   "mira": Terms(_ONLINE_TYPES, False, False),
                   "bcd": Terms(("crf",), True, True)}


@dataclass
class TrainOptions:
    """Training settings; defaults live here and nowhere else.

    ``rho2=None`` means the default L2 strength for algorithms that use one
    (:data:`DEFAULT_RHO2`); ``model_type=None`` means the type the structure implies, that
    of the initial model, or ``crf``. ``structure``: the structure-declared options by name
    (``{"structure": "order2"}``, ``{"order": 2}``...).
    """

    algo: str = "l-bfgs"
    model_type: str | None = None
    likely: float | None = None  # --likely-features threshold; None: off
    likely_after: int = 20  # iterations before the likely features are added
    # rho1, stopeps, stopwin: None means the algorithm's default (ALGORITHM_DEFAULTS),
    # filled in when the options are made
    rho1: float | None = None  # type: ignore[assignment]
    rho2: float | None = None
    maxiter: int = 0
    stopeps: float | None = None  # type: ignore[assignment]
    stopwin: int | None = None  # type: ignore[assignment]
    l1_gtol: float = L1_GTOL  # with -1: also stop on the pseudo-gradient (optim/optimality.py)
    history: int = 6
    max_linesearch: int | None = None  # l-bfgs: trial steps per line search; None: its own
    linesearch: str | None = None  # l-bfgs: CRFsuite's line search; None: crfkit's own
    calibration_eta: float | None = None  # l2sgd's calibration.*; None: CRFsuite's default
    calibration_rate: float | None = None
    calibration_samples: int | None = None
    calibration_candidates: int | None = None
    calibration_max_trials: int | None = None
    # rand() values CRFsuite's front end drew before training (its -g deal): where the
    # online trainers' shuffles start; not a setting of the model (never recorded)
    rand_drawn: int = 0
    clip: bool = False  # l-bfgs, rprop: the gradient is 0 where the weight is (Wapiti's --clip)
    stpmin: float = 1e-8  # rprop: the per-weight step's bounds and factors (Wapiti's)
    stpmax: float = 50.0
    stpinc: float = 1.2
    stpdec: float = 0.5
    rprop_cutoff: bool = False  # rprop with L1: Wapiti's --cutoff instead of the orthant
    save_state: str | None = None  # l-bfgs, rprop: write the optimiser's state there at the end
    restore_state: str | None = None  # l-bfgs, rprop: continue from this saved state
    cutoff: int = 1
    nthread: int = 0
    eta0: float | None = None  # sgd-l1; None: calibrated on a sample (optim.sgd.calibrate)
    alpha: float = 0.8  # sgd-l1's rate decay per epoch
    seed: int = 0
    devel_patience: int = 0  # iterations without a better devel F1 before stopping; 0: never
    error_window: int = 0  # stop when the token error is stable over this many iterations
    error_eps: float = 0.02  # ... moving less than this many percentage points (Wapiti's)
    keep_best_devel: bool = False  # the weights of the best devel F1, not the last ones
    compact: bool = False
    all_features: bool = False
    all_labels: bool = False  # every observation x label; label pairs as seen
    max_memory: int | None = None  # bytes; None: what the machine has available
    structure: dict[str, Any] = field(default_factory=dict)  # structure-declared values
    pa_type: int = 1  # pa: 0 PA, 1 PA-I, 2 PA-II
    pa_c: float = 1.0  # pa: aggressiveness C (PA-I, PA-II)
    error_sensitive: bool = True  # pa: margin sqrt(errors) instead of 1
    averaging: bool = True  # pa: average the weights
    variance: float = 1.0  # arow: initial variance of every weight
    gamma: float = 1.0  # arow: loss / change trade-off
    mira_c: float = 1.0  # mira: cap on each sequence's sum of steps (CRF++'s -c)
    shrinking_size: int = 20  # mira: epochs decoded right before a sequence is skipped
    kappa: float = DEFAULT_KAPPA  # bcd: scale of each block's curvature bound
    sparse: bool = False  # Wapiti's --sparse: accepted, changes nothing (not recorded)

    def __post_init__(self) -> None:
        defaults = {**GENERAL_DEFAULTS, **ALGORITHM_DEFAULTS.get(self.algo, {})}
        for key, value in defaults.items():
            if getattr(self, key) is None:
                setattr(self, key, value)

    def validate(self) -> None:
        if self.algo not in ALGORITHM_TERMS:
            raise UsageError(f"unknown algorithm {self.algo!r} (expected one of "
                             f"{', '.join(ALGORITHM_TERMS)}; '-a list' describes them)")
        if self.model_type is not None:
            model_type_row(self.model_type)  # one error line for an unknown type
        for refusal in _RULES:
            message = refusal(self)
            if message:
                raise UsageError(message)
        for message in (_likely_refusal(self), _algorithm_refusal(self)):
            if message:
                raise UsageError(message)
        for option in structure_options():  # the values a structure declared, as given
            value = self.structure.get(option.name)
            message = None if value is None or option.check is None else option.check(value)
            if message:
                raise UsageError(message)


def _positive(name: str, value: float) -> str | None:
    return None if value > 0 and np.isfinite(value) else f"{name} must be > 0, got {value}"


_RESUMABLE = ("l-bfgs", "rprop", "rprop+", "rprop-")

# One rule per option: the refusal of a bad value (None: fine).
_RULES: tuple[Callable[[TrainOptions], str | None], ...] = (
    lambda o: None if o.rho1 >= 0 else f"-1/--rho1 must be >= 0, got {o.rho1}",
    lambda o: None if o.rho2 is None or o.rho2 >= 0 else f"-2/--rho2 must be >= 0, got {o.rho2}",
    lambda o: None if o.maxiter >= 0 else f"-i/--maxiter must be >= 0, got {o.maxiter}",
    lambda o: None if o.stopeps >= 0 else f"-e/--stopeps must be >= 0, got {o.stopeps}",
    lambda o: None if o.stopwin >= 1 else f"-o/--stopwin must be >= 1, got {o.stopwin}",
    lambda o: None if o.l1_gtol >= 0 else f"--l1-gtol must be >= 0, got {o.l1_gtol}",
    lambda o: None if o.devel_patience >= 0 else
    f"--devel-patience must be >= 0, got {o.devel_patience}",
    lambda o: None if o.error_window >= 0 else
    f"-w/--error-window must be >= 0, got {o.error_window}",
    lambda o: None if o.error_eps >= 0 else f"--error-eps must be >= 0, got {o.error_eps}",
    lambda o: None if o.cutoff >= 1 else f"-f/--cutoff must be >= 1, got {o.cutoff}",
    lambda o: None if o.nthread >= 0 else f"-t/--nthread must be >= 0, got {o.nthread}",
    lambda o: None if o.max_memory is None or o.max_memory > 0 else
    f"--max-memory must be > 0, got {o.max_memory}",
    lambda o: None if o.history >= 1 else f"--history must be >= 1, got {o.history}",
    lambda o: None if o.max_linesearch is None or o.max_linesearch >= 1 else
    f"max_linesearch must be >= 1, got {o.max_linesearch}",
    lambda o: None if o.linesearch is None or (o.algo == "l-bfgs" and o.rho1 == 0) else
    "--linesearch applies to -a l-bfgs without -1 (OWL-QN backtracks, as CRFsuite's)",
    lambda o: _calibration_refusal(o),
    lambda o: None if o.eta0 is None else _positive("--eta0", o.eta0),
    lambda o: None if 0 < o.stpmin <= o.stpmax else
    f"--stpmin and --stpmax must satisfy 0 < stpmin <= stpmax, got {o.stpmin}, {o.stpmax}",
    lambda o: None if o.stpinc > 1 else f"--stpinc must be > 1, got {o.stpinc}",
    lambda o: None if 0 < o.stpdec < 1 else f"--stpdec must be in (0, 1), got {o.stpdec}",
    lambda o: None if o.algo in _RESUMABLE or (o.save_state is None and o.restore_state is None)
    else f"--sstate/--rstate save and restore the state of {', '.join(_RESUMABLE)}, "
         f"not of -a {o.algo}",
    lambda o: None if o.restore_state is None or o.likely is None else
    "--rstate cannot be combined with --likely-features (two runs on two feature sets)",
    lambda o: None if 0 < o.alpha <= 1 else f"--alpha must be in (0, 1], got {o.alpha}",
    lambda o: None if o.pa_type in (0, 1, 2) else
    f"--pa-type must be 0, 1 or 2, got {o.pa_type}",
    lambda o: _positive("--pa-c", o.pa_c),
    lambda o: _positive("--variance", o.variance),
    lambda o: _positive("--gamma", o.gamma),
    lambda o: _positive("--mira-c/--cost", o.mira_c),
    lambda o: None if o.shrinking_size >= 1 else
    f"-H/--shrinking-size must be >= 1, got {o.shrinking_size}",
    lambda o: _positive("--kappa", o.kappa),
    lambda o: "-a l2sgd needs -2/--rho2 > 0"
    if o.algo == "l2sgd" and o.rho2 is not None and not o.rho2 > 0 else None,
)


def calibration(o: TrainOptions):
    """l2sgd's calibration settings: those given, CRFsuite's defaults for the others."""
    from crfkit.optim.l2sgd import Calibration

    given = {name[len("calibration_"):]: getattr(o, name) for name in CALIBRATION_NAMES}
    return Calibration(**{k: v for k, v in given.items() if v is not None})


def _calibration_refusal(o: TrainOptions) -> str | None:
    given = [name for name in CALIBRATION_NAMES if getattr(o, name) is not None]
    if not given:
        return None
    if o.algo != "l2sgd":
        return f"--{given[0].replace('_', '-')} applies to -a l2sgd only"
    return calibration(o).refusal()


def _likely_refusal(o: TrainOptions) -> str | None:
    """Likely features train a first-order crf with l-bfgs (the structure may refuse more)."""
    if o.likely is not None:
        if not 0 < o.likely <= 1:
            return f"--likely-features must be in (0, 1], got {o.likely}"
        if o.likely_after < 1:
            return f"--likely-after must be >= 1, got {o.likely_after}"
        if o.algo != "l-bfgs" or o.all_features or o.all_labels \
                or o.model_type not in (None, "crf"):
            return ("--likely-features trains a first-order crf with -a l-bfgs, "
                    "without --all-features, --all-labels or --order 2")
    if o.all_features and o.all_labels:
        return "--all-labels is part of --all-features: give one of them"
    return None


def _algorithm_refusal(o: TrainOptions) -> str | None:
    algo = ALGORITHM_TERMS[o.algo]
    if o.model_type is not None and o.model_type not in algo.types:
        return (f"-a {o.algo} cannot train a {o.model_type} model (it "
                f"trains {', '.join(algo.types)}); use -a l-bfgs")
    if o.rho1 > 0 and not algo.l1:
        return f"-a {o.algo} has no L1 term: drop -1/--rho1"
    if o.rho2 is not None and not algo.l2:
        return f"-a {o.algo} has no L2 term: drop -2/--rho2"
    return None


def train_options_from(given: Mapping[str, Any]) -> TrainOptions:
    """The options of a command's ``given`` values (None: not given, the default)."""
    return TrainOptions(**{k: v for k, v in given.items() if v is not None})


@dataclass
class Problem:
    """What an algorithm needs: the encoded corpus, its structure, model type and options."""

    model_type: str
    corpus: Corpus
    options: TrainOptions
    structure: Structure | None = None  # None: the linear chain
    notes: list[str] = field(default_factory=list)  # warnings for the progress output
    # The smooth objective to minimise instead of the corpus's own (crfkit.dask: a cluster's)
    objective: Callable[[np.ndarray, np.ndarray], float] | None = None

    def __post_init__(self) -> None:
        if self.structure is None:
            self.structure = named("chain")

    @property
    def rho2(self) -> float:
        return DEFAULT_RHO2 if self.options.rho2 is None else self.options.rho2


# Options that only some algorithms read: recorded only for those.
_RPROP = ("rprop", "rprop+", "rprop-")
_ALGORITHM_OPTIONS = {"rho1": ("l-bfgs", "sgd-l1", "bcd", *_RPROP),
                      "rho2": ("l-bfgs", "l2sgd", "bcd", *_RPROP),
                      "history": ("l-bfgs",), "eta0": ("sgd-l1",), "alpha": ("sgd-l1",),
                      **{key: _RPROP for key in
                         ("stpmin", "stpmax", "stpinc", "stpdec", "rprop_cutoff")},
                      "seed": ("sgd-l1", "ap", "l2sgd", "pa", "arow"),
                      "pa_type": ("pa",), "pa_c": ("pa",), "error_sensitive": ("pa",),
                      "averaging": ("pa",), "variance": ("arow",), "gamma": ("arow",),
                      "mira_c": ("mira",), "shrinking_size": ("mira",), "kappa": ("bcd",)}


def recorded_options(options: TrainOptions, model_type: str, *, devel: bool,
                     structure: Structure | None = None) -> dict:
    """The settings the model was trained with, defaults resolved, for ``crfkit info``.

    Nothing that depends on the machine (thread count, memory limit) is
    recorded, so the same command gives a byte-identical file with any -t. The
    structure's own options go after its ``record_after`` key (where files had them).
    """
    recorded = asdict(options)
    del recorded["structure"]
    recorded["model_type"] = model_type
    recorded["rho2"] = DEFAULT_RHO2 if options.rho2 is None else options.rho2
    unused = () if devel else ("devel_patience", "keep_best_devel")
    unused += ("error_window", "error_eps") if options.error_window == 0 else ()
    unused += ("likely", "likely_after") if options.likely is None else ()
    unused += ("all_labels",) if not options.all_labels else ()
    unused += ("max_linesearch",) if options.max_linesearch is None else ()
    unused += ("linesearch",) if options.linesearch is None else ()
    unused += tuple(name for name in CALIBRATION_NAMES if getattr(options, name) is None)
    # files, not settings: a resumed run makes the model of the uninterrupted one
    unused += ("clip",) if not options.clip else ()
    unused += ("save_state", "restore_state")
    # read by OWL-QN only (L2 and other algorithms' files stay what they were)
    unused += ("l1_gtol",) if options.rho1 == 0 or options.algo != "l-bfgs" else ()
    for key in ("nthread", "rand_drawn", "sparse", *unused):
        del recorded[key]
    for key, algorithms in _ALGORITHM_OPTIONS.items():
        if options.algo not in algorithms:
            del recorded[key]
    own = structure.recorded(options.structure) if structure is not None else {}
    return _inserted(recorded, own, structure.record_after if own else "", "max_memory")


def _inserted(recorded: dict, own: dict, after: str, dropped: str) -> dict:
    """``recorded`` with ``own`` after the key ``after`` (at the end if absent), without
    ``dropped`` (a key kept until now only as a place to insert after)."""
    out: dict = {}
    for key, value in recorded.items():
        if key != dropped:
            out[key] = value
        if key == after:
            out.update(own)
            own = {}
    out.update(own)
    return out
