"""A scikit-learn estimator that a sklearn-crfsuite user adopts by changing one import.

    from crfkit.sklearn import CRF          # was: from sklearn_crfsuite import CRF
    crf = CRF(algorithm="lbfgs", c1=0.1, c2=0.1, max_iterations=100,
              all_possible_transitions=True)
    crf.fit(X_train, y_train)               # X: lists of feature dicts per token
    y_pred = crf.predict(X_test)

The constructor takes sklearn-crfsuite's parameters, in its order and with
its meanings (CRFsuite's ``c1``/``c2`` scaling: the objective is
``-loglik + c1 |w|_1 + c2 |w|^2``), then crfkit's own ``n_jobs`` (threads;
None: every core) and ``model_type`` (``crf``, ``memm``, ``maxent``). Token
features come in every form python-crfsuite accepts plus numpy arrays
(:mod:`crfkit.attributes.attribute_model`); real values multiply their weights in the engine
(:mod:`crfkit.kernels.valued`). Training runs on crfkit's multi-core engine;
the model is crfkit's own container, so pickling, ``model_filename`` and
``crfkit label --format crfsuite`` all read the same bytes (never a pickle);
``model_filename`` also loads a model python-crfsuite or sklearn-crfsuite
wrote. Zero weights and the attributes left without any are dropped from
the fitted model, as CRFsuite does (:func:`crfkit.attributes.attribute_model.compacted`).

scikit-learn is an optional extra (``pip install crfkit[sklearn]``); neither
``import crfkit`` nor this module imports it (:mod:`crfkit.sklearn.base`), only
the metrics and the tools that use it do.
"""

from __future__ import annotations

import os

import numpy as np

from crfkit.attributes import attribute_model as attrs
from crfkit.sklearn.base import EstimatorParams
from crfkit.sklearn.checks import check_parameters
from crfkit.sklearn.labels import label_strings
from crfkit.sklearn.tagger import Tagger, threads
from crfkit.sklearn.trainlog import TrainingLog, add_schema, holdout_scores

__all__ = ["CRF", "Tagger", "TrainingLog"]

# sklearn-crfsuite's algorithm names -> crfkit's (``crfkit train -a``).
ALGORITHMS = {"lbfgs": "l-bfgs", "l2sgd": "l2sgd", "ap": "ap", "pa": "pa", "arow": "arow"}

# Which parameters each algorithm reads (CRFsuite's tables); others must stay None.
_APPLIES = {
    "c1": ("lbfgs",), "c2": ("lbfgs", "l2sgd"), "num_memories": ("lbfgs",),
    "epsilon": ("lbfgs", "ap", "pa", "arow"), "period": ("lbfgs", "l2sgd"),
    "delta": ("lbfgs", "l2sgd"), "linesearch": ("lbfgs",), "max_linesearch": ("lbfgs",),
    "calibration_eta": ("l2sgd",), "calibration_rate": ("l2sgd",),
    "calibration_samples": ("l2sgd",), "calibration_candidates": ("l2sgd",),
    "calibration_max_trials": ("l2sgd",), "pa_type": ("pa",), "c": ("pa",),
    "error_sensitive": ("pa",), "averaging": ("pa",), "variance": ("arow",),
    "gamma": ("arow",),
}
# CRFsuite's default number of iterations per algorithm (L-BFGS: until converged).
_MAX_ITERATIONS = {"lbfgs": 0, "l2sgd": 1000, "ap": 100, "pa": 100, "arow": 100}


class CRF(EstimatorParams):
    """Linear-chain CRF trained by crfkit, with sklearn-crfsuite's interface.

    Parameters are sklearn-crfsuite's (see its documentation; None means
    CRFsuite's default for the algorithm) plus ``n_jobs`` (training and
    labelling threads; None or -1: every core) and ``model_type``. crfkit's
    L-BFGS line search is its own backtracking one, so ``linesearch`` accepts
    only its default; ``l2sgd``'s ``calibration_*`` parameters are CRFsuite's;
    ``keep_tempfiles`` has no effect (no temporary files are made) and
    ``trainer_cls`` must stay None.

    Example::

        >>> crf = CRF(c1=0.1, c2=0.1, max_iterations=50)       # doctest: +SKIP
        >>> crf.fit([[{"w": "the"}, {"w": "dog"}]], [["DT", "NN"]]).predict(
        ...     [[{"w": "dog"}]])                                # doctest: +SKIP
    """

    def __init__(self, algorithm=None, min_freq=None, all_possible_states=None,
                 all_possible_transitions=None, c1=None, c2=None, max_iterations=None,
                 num_memories=None, epsilon=None, period=None, delta=None, linesearch=None,
                 max_linesearch=None, calibration_eta=None, calibration_rate=None,
                 calibration_samples=None, calibration_candidates=None,
                 calibration_max_trials=None, pa_type=None, c=None, error_sensitive=None,
                 averaging=None, variance=None, gamma=None, verbose=False,
                 model_filename=None, keep_tempfiles=False, trainer_cls=None, n_jobs=None,
                 model_type=None):
        self.algorithm = algorithm
        self.min_freq = min_freq
        self.all_possible_states = all_possible_states
        self.all_possible_transitions = all_possible_transitions
        self.c1 = c1
        self.c2 = c2
        self.max_iterations = max_iterations
        self.num_memories = num_memories
        self.epsilon = epsilon
        self.period = period
        self.delta = delta
        self.linesearch = linesearch
        self.max_linesearch = max_linesearch
        self.calibration_eta = calibration_eta
        self.calibration_rate = calibration_rate
        self.calibration_samples = calibration_samples
        self.calibration_candidates = calibration_candidates
        self.calibration_max_trials = calibration_max_trials
        self.pa_type = pa_type
        self.c = c
        self.error_sensitive = error_sensitive
        self.averaging = averaging
        self.variance = variance
        self.gamma = gamma
        self.verbose = verbose
        self.model_filename = model_filename
        self.keep_tempfiles = keep_tempfiles
        self.trainer_cls = trainer_cls
        self.n_jobs = n_jobs
        self.model_type = model_type

    # -- training ---------------------------------------------------------------------------
    def fit(self, X, y, X_dev=None, y_dev=None) -> CRF:
        """Train on ``X`` (sequences of token features) and ``y`` (sequences of labels).

        A label may be partial: ``None`` (any label) or a set of labels (one of them):
        :mod:`crfkit.sklearn.labels`. ``X_dev``/``y_dev``: a held-out set evaluated after
        every iteration as CRFsuite does (per-label scores, macro F1, item and instance
        accuracy: ``training_log_``); its partial labels are not scored.
        """
        if (X_dev is None) != (y_dev is None):
            raise ValueError("Pass both X_dev and y_dev to use the holdout data")
        y = label_strings(y)
        if y_dev is not None:
            y_dev = label_strings(y_dev)
        options, settings = self._options()
        vocab: dict[str, int] = {}
        data = attrs.encode(X, vocab, grow=True)
        labels: list[str] = []
        data.labels = attrs.label_ids(y, labels, data.lengths, grow=True)
        names = [""] * len(vocab)
        for name, i in vocab.items():
            names[i] = name
        del vocab
        log: list[dict] = []
        hook = _IterationScorer(log, None if X_dev is None else (X_dev, y_dev))
        with threads(self.n_jobs):
            model = attrs.train(data, labels, names, options, settings,
                                progress=_progress(self.verbose), log=log,
                                on_weights=hook, holdout=X_dev is not None)
        self._model = attrs.compacted(model)
        self._tagger = None
        self.training_log_ = TrainingLog(log, model.info.get("stop_reason", ""),
                                         featgen_num_features=int(model.space.n_weights),
                                         training_seconds=log[-1]["seconds"] if log else 0.0)
        if self.model_filename is not None:
            self._model.save(self.model_filename)
        return self

    def _options(self):
        """TrainOptions and AttributeTraining from the parameters, checked."""
        from crfkit.training.train import TrainOptions

        algorithm = self.algorithm or "lbfgs"
        if algorithm not in ALGORITHMS:
            raise ValueError(f"algorithm must be one of {', '.join(ALGORITHMS)}, got "
                             f"{algorithm!r}")
        for name, applies in _APPLIES.items():
            if getattr(self, name) is not None and algorithm not in applies:
                raise ValueError(f"{name} does not apply to algorithm {algorithm!r} (it "
                                 f"applies to {', '.join(applies)})")
        check_parameters(self)
        for name in ("trainer_cls",):
            if getattr(self, name) is not None:
                raise ValueError(f"{name} is not supported by crfkit.sklearn.CRF")
        options = TrainOptions(algo=ALGORITHMS[algorithm], model_type=self.model_type,
                               nthread=0 if self.n_jobs is None or self.n_jobs < 0
                               else int(self.n_jobs),
                               maxiter=_MAX_ITERATIONS[algorithm] if self.max_iterations
                               is None else int(self.max_iterations))
        if algorithm == "lbfgs":
            options.rho1 = float(self.c1 or 0.0)
            options.rho2 = 2.0 * float(1.0 if self.c2 is None else self.c2)
            options.history = int(self.num_memories or 6)
            options.max_linesearch = None if self.max_linesearch is None \
                else int(self.max_linesearch)
        _algorithm_options(self, algorithm, options)
        settings = attrs.AttributeTraining(
            min_freq=float(self.min_freq or 0.0),
            all_states=bool(self.all_possible_states),
            all_transitions=bool(self.all_possible_transitions),
            epsilon=1e-5 if self.epsilon is None else float(self.epsilon))
        if algorithm != "lbfgs":
            settings.epsilon = 0.0
        return options, settings

    # -- prediction -------------------------------------------------------------------------
    def predict(self, X) -> np.ndarray:
        """Predicted label sequences of ``X``, as sklearn-crfsuite returns them."""
        return np.array(self._tagger_or_fail().tag_many(X), dtype=object)

    def predict_single(self, xseq) -> list[str]:
        """Predicted labels of one sequence."""
        return self._tagger_or_fail().tag(xseq)

    def predict_marginals(self, X) -> np.ndarray:
        """Per sequence, per token, ``{label: probability}``."""
        return np.array(self._tagger_or_fail().marginals_many(X), dtype=object)

    def predict_marginals_single(self, xseq) -> list[dict[str, float]]:
        """Per token of one sequence, ``{label: probability}``."""
        return self._tagger_or_fail().marginals_many([xseq])[0]

    def score(self, X, y) -> float:
        """Token accuracy (see :mod:`crfkit.sklearn.metrics` for the others)."""
        from crfkit.sklearn.metrics import flat_accuracy_score

        return flat_accuracy_score(y, self.predict(X))

    # -- fitted state -----------------------------------------------------------------------
    def _fitted_model(self) -> attrs.AttributeModel | None:
        model = self.__dict__.get("_model")
        if model is None and self.model_filename is not None \
                and os.path.exists(self.model_filename):
            from crfkit.foreign.crfsuite_attributes import load_attribute_model

            model = self._model = load_attribute_model(self.model_filename)
        return model

    def __sklearn_is_fitted__(self) -> bool:
        return self._fitted_model() is not None

    @property
    def tagger_(self) -> Tagger | None:
        """A python-crfsuite-style tagger of the fitted model (None before fit)."""
        model = self._fitted_model()
        if model is None:
            return None
        if self.__dict__.get("_tagger") is None or self._tagger.model is not model:
            if self.verbose:
                _announce_decode_compile()
            self._tagger = Tagger(model, n_jobs=self.n_jobs)
        return self._tagger

    def _tagger_or_fail(self) -> Tagger:
        tagger = self.tagger_
        if tagger is None:
            raise not_fitted_error("This CRF instance is not fitted yet: call fit first")
        return tagger

    @property
    def classes_(self) -> list[str] | None:
        model = self._fitted_model()
        return None if model is None else list(model.labels)

    @property
    def size_(self) -> int | None:
        """Size of the model, in bytes (of crfkit's model file)."""
        model = self._fitted_model()
        return None if model is None else len(model.to_bytes())

    @property
    def attributes_(self) -> list[str] | None:
        """The attributes that have a non-zero state feature, in model order."""
        model = self._fitted_model()
        return None if model is None else self._tagger_or_fail().active_attributes()

    @property
    def num_attributes_(self) -> int | None:
        names = self.attributes_
        return None if names is None else len(names)

    @property
    def state_features_(self) -> dict[tuple[str, str], float] | None:
        """``{(attribute, label): weight}`` of the non-zero state features."""
        model = self._fitted_model()
        return None if model is None else self._tagger_or_fail().state_features()

    @property
    def transition_features_(self) -> dict[tuple[str, str], float] | None:
        """``{(label_from, label_to): weight}`` of the non-zero transition features."""
        model = self._fitted_model()
        return None if model is None else self._tagger_or_fail().transition_features()

    def __getattr__(self, name: str):
        # training_log_ is None before fit, as in sklearn-crfsuite
        if name == "training_log_":
            return None
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state.pop("_tagger", None)  # the model pickles as its own bytes
        return state


def _algorithm_options(crf: CRF, algorithm: str, options) -> None:
    """Copy the online trainers' parameters into ``options`` (CRFsuite's defaults)."""
    if algorithm in ("lbfgs", "l2sgd"):
        if crf.period is not None:
            options.stopwin = int(crf.period)
        if crf.delta is not None:
            options.stopeps = float(crf.delta)
    if algorithm == "l2sgd":
        options.rho2 = 2.0 * float(1.0 if crf.c2 is None else crf.c2)
        for name in ("calibration_eta", "calibration_rate"):
            if getattr(crf, name) is not None:
                setattr(options, name, float(getattr(crf, name)))
        for name in ("calibration_samples", "calibration_candidates", "calibration_max_trials"):
            if getattr(crf, name) is not None:
                setattr(options, name, int(getattr(crf, name)))
        if crf.delta is None:
            options.stopeps = 1e-6
    elif algorithm in ("ap", "pa", "arow"):
        options.stopeps = float(crf.epsilon or 0.0)
    if algorithm == "pa":
        options.pa_type = 1 if crf.pa_type is None else int(crf.pa_type)
        options.pa_c = 1.0 if crf.c is None else float(crf.c)
        options.error_sensitive = True if crf.error_sensitive is None else \
            bool(crf.error_sensitive)
        options.averaging = True if crf.averaging is None else bool(crf.averaging)
    elif algorithm == "arow":
        options.variance = 1.0 if crf.variance is None else float(crf.variance)
        options.gamma = 1.0 if crf.gamma is None else float(crf.gamma)


class _IterationScorer:
    """After each iteration: sklearn-crfsuite's log keys, and the held-out evaluation."""

    def __init__(self, log: list[dict], holdout) -> None:
        self.log = log
        self.X_dev, self.y_dev = (None, None) if holdout is None else \
            (list(holdout[0]), [list(s) for s in holdout[1]])

    def __call__(self, model: attrs.AttributeModel) -> None:
        if not self.log:
            return
        row = self.log[-1]
        add_schema(row, model.weights, self.log[-2]["seconds"] if len(self.log) > 1 else 0.0)
        if self.X_dev is not None:
            pred = Tagger(model).tag_many(self.X_dev)
            # the model's labels: label sets (? and A|B) in y are none of them
            row.update(holdout_scores(self.y_dev, pred, model.labels))


def not_fitted_error(message: str) -> Exception:
    """scikit-learn's NotFittedError when scikit-learn is installed, else its two bases."""
    try:
        from sklearn.exceptions import NotFittedError
    except ImportError:
        return AttributeError(message)
    return NotFittedError(message)


def _announce_decode_compile() -> None:
    """Before the first labelling of a process with a cold cache, say why it pauses."""
    from crfkit.training.jitcache import decode_compile_seconds

    seconds = decode_compile_seconds()
    if seconds:
        _progress(True).message(f"* compiling the labelling kernels (first run only, "
                                f"about {seconds} s)")


def _progress(verbose: bool):
    import sys

    from crfkit.progress import Progress

    return Progress(sys.stderr) if verbose else Progress(quiet=True)
