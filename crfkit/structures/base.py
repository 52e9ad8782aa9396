"""The one interface of the model structures (linear chain, second order, skip chain...).

Training, labelling, the model file, info/dump, the memory guard and the compile notice see a
structure only through :class:`Structure` and the dataclasses here, as CRFsuite's trainers
see only its graphical-model interface (encoder_t). The registry (crfkit.structures) picks
one. Model types (crf, memm, maxent: how a structure is normalised) stay rows of
crfkit.model.types. Methods have the chain's neutral behaviour where one exists.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from crfkit.options import Option

if TYPE_CHECKING:  # annotations only: the registry is read by `crfkit --help`, without numpy
    import numpy as np

    from crfkit.features.extract import Featurizer
    from crfkit.features.patterns import Pattern
    from crfkit.io.model_checker import ModelChecker
    from crfkit.io.reader import Sequence
    from crfkit.kernels.decoded import Decoded, Weighted
    from crfkit.progress import Progress
    from crfkit.space import Dataset, FeatureSpace

Kernels = Callable[[], list[tuple[object, ...]]]  # per kernel: dispatchers, any one will do


@dataclass
class Corpus:
    """A labelled training corpus encoded for the kernels (was crfkit.corpus.Corpus).

    ``x0``: the starting weights; ``frozen``: weights L-BFGS keeps at their start;
    ``part``: what the structure adds to the chain's encoding (a skip chain's graph);
    ``allowed``: the labels each token allows (n_tokens, L) where the annotation has label
    sets (``?``, ``A|B``), None when every token has its one gold label; ``first_lines``:
    each sequence's first line in the source (what errors name once the rows are gone)."""

    featurizer: Featurizer
    space: FeatureSpace
    data: Dataset
    empirical: np.ndarray
    labels: list[str]
    n_token_columns: int
    x0: np.ndarray
    part: object = None
    frozen: np.ndarray | None = None
    allowed: np.ndarray | None = None
    first_lines: np.ndarray | None = None


@dataclass(frozen=True)
class PatternCost:
    """One pattern's observations and features (was crfkit.memory.PatternCost)."""

    pattern: Pattern
    observations: int
    features: int


class ModelView(Protocol):
    """What a structure reads of a trained model (crfkit.model.model.Model is one)."""

    labels: list[str]
    patterns: list[Pattern]
    featurizer: Featurizer
    space: FeatureSpace
    weights: np.ndarray
    info: dict
    model_type: str
    normalisation: int


@dataclass(frozen=True)
class Choice:
    """What picks the structure of a training."""

    model_type: str | None          # -T as given (None: not given)
    patterns: list[Pattern] | None  # None: the initial model's
    values: Mapping[str, Any]       # every structure-declared option, by name
    init: str | None = None         # the initial model's structure (train -m)


@dataclass(frozen=True)
class Setting:
    """What a structure may refuse: the algorithm, type and the command's other choices."""

    command: str                    # "train", "tune", "dask"
    algo: str
    model_type: str
    values: Mapping[str, Any]
    devel: bool = False
    likely: bool = False
    all_features: bool = False
    all_labels: bool = False
    label_sets: tuple[str, int | None] | None = None  # (file, line) of the first label set
    init: ModelView | None = None  # the initial model (train -m)


@dataclass(frozen=True)
class Encoding:
    """What the corpus encoder hands :meth:`Structure.encode_space`."""

    featurizer: Featurizer
    obs: np.ndarray           # int32 (n_tokens, n_listed): observation ids, -1 none
    index: np.ndarray         # each token's position in its sequence
    labels: np.ndarray        # gold label ids (-1: a label set, Corpus.allowed)
    all_features: bool


@dataclass
class DecodeRequest:
    """Every labelling mode, for every structure."""

    nbest: int = 1
    log_z: bool = False
    marginals: bool = False
    posterior: bool = False
    token_ok: np.ndarray | None = None   # (n_tokens, L) allowed labels
    trans_ok: np.ndarray | None = None   # (L, L) allowed transitions
    kernels: bool = True                 # False: a numpy decoder may serve a plain best path
    fused: bool = False                  # a large input: the fused compiled best path pays
    sequences: list[Sequence] | None = None  # the batch's rows (structures with documents)
    starts: list[int] | None = None          # first sequence of each document
    values: Mapping[str, Any] = field(default_factory=dict)  # the structure's label options


@dataclass
class MemoryPart:
    """What a structure adds to the memory estimate of the chain's features."""

    per_observation: np.ndarray | None = None  # features per observation (seen space)
    per_pattern: np.ndarray | None = None      # features per listed pattern (dense space)
    costs: list[PatternCost] = field(default_factory=list)
    extra_bytes: int = 0


@dataclass
class Description:
    """What ``info`` prints of a structure."""

    feature_counts: list[str] = field(default_factory=list)  # inside "features (...)"
    lines: list[tuple[str, str]] = field(default_factory=list)  # before "features"


@dataclass
class DumpParts:
    """The rows ``dump`` writes, one entry per block of features; a structure appends."""

    observation: list[np.ndarray]
    prev: list[np.ndarray]
    label: list[np.ndarray]


class Structure(ABC):
    """A model structure: its graph, its encoding, objective, decoders and model-file part."""

    name: ClassVar[str]
    title: ClassVar[str]
    train_options: ClassVar[tuple[Option, ...]] = ()
    label_options: ClassVar[tuple[Option, ...]] = ()
    record_after: ClassVar[str] = ""   # recorded options: its entries after this key
    documents: ClassVar[bool] = False  # labels whole documents (one thread, never cut)
    label_sets: ClassVar[bool] = False  # trains from partial labels (? and A|B)
    label_sets_for: ClassVar[str] = ""  # the structure it trains in place of on label sets
    needs_rows: ClassVar[bool] = False  # training keeps the rows and -DOCSTART- marks

    # -- choosing and refusing (one UsageError line each) --------------------------------
    @classmethod
    def claims(cls, choice: Choice) -> bool:
        """Whether the choice asks for this structure (``--structure NAME`` by default)."""
        return choice.values.get("structure") == cls.name

    @classmethod
    def recognises(cls, meta: Mapping[str, Any]) -> bool:
        """Whether a model file header holds this structure."""
        return meta.get("structure") == cls.name

    def continues(self, init: str, values: Mapping[str, Any]) -> bool:
        """Whether, chosen by the options ``values``, it trains on from a model of the
        structure named ``init`` (its own; one whose model is the same kind may say yes)."""
        return init == self.name

    def continue_from(self, values: Mapping[str, Any]) -> None:
        """Refuse options that contradict an initial model of this structure."""
        return None  # nothing to refuse / add: the chain's behaviour

    def refuse(self, setting: Setting) -> None:
        """Refuse what this structure cannot train."""
        return None  # nothing to refuse / add: the chain's behaviour

    def refuse_labelling(self, asked: Mapping[str, bool]) -> None:
        """Refuse labelling modes it lacks (``asked``: option flag -> given)."""
        return None  # nothing to refuse / add: the chain's behaviour

    def doc_sep(self, info: Mapping[str, Any]) -> str | None:
        """The document separator a model was trained with (None: -DOCSTART- only)."""
        return None

    # -- encoding ----------------------------------------------------------------------------
    @abstractmethod
    def patterns(self, patterns: list[Pattern], progress: Progress | None) -> list[Pattern]:
        """The patterns it uses; refuse those it cannot (a chain: ``t`` lines only)."""

    def encode_space(self, space: FeatureSpace, empirical: np.ndarray,
                     enc: Encoding) -> tuple[FeatureSpace, np.ndarray]:
        """The structure's space over the chain's first-order one, and its gold counts."""
        return space, empirical

    @abstractmethod
    def merge_init(self, space: FeatureSpace, empirical: np.ndarray, init_space: FeatureSpace,
                   init_weights: np.ndarray) -> tuple[FeatureSpace, np.ndarray, np.ndarray]:
        """Warm start: the union with an initial model's space, gold counts, start weights."""

    def dense_costs(self, listed: list[Pattern], n_labels: int) -> MemoryPart:
        """Before --all-features builds it: features per listed pattern and extra blocks."""
        return MemoryPart()

    def attach(self, corpus: Corpus, sequences: list[Sequence], starts: list[int],
               values: Mapping[str, Any], init: ModelView | None,
               progress: Progress) -> None:
        """Add the structure's own part to an encoded corpus (``corpus.part``, weights).
        ``sequences`` and ``starts`` (documents) are empty unless it ``needs_rows``."""
        return None  # nothing to refuse / add: the chain's behaviour

    # -- optimising ----------------------------------------------------------------------------
    @abstractmethod
    def objective(self, corpus: Corpus, rho2: float, normalisation: int,
                  values: Mapping[str, Any]) -> Callable[[np.ndarray, np.ndarray], float]:
        """The smooth objective for L-BFGS (token_errors and sequence_errors attributes)."""

    @abstractmethod
    def epochs(self, kind: str, corpus: Corpus) -> object:
        """The epochs of an online algorithm: kind "sgd", "perceptron", "online" or
        "mira"."""

    def coordinate_blocks(self, corpus: Corpus) -> object | None:
        """The blockwise coordinate descent of ``-a bcd`` over the corpus's observation
        blocks (an object with ``sweep(W, rho1, rho2, kappa)``); None: not this structure."""
        return None

    def optimise(self, problem: Any, hook: Callable, run: Callable,
                 progress: Progress | None) -> Any:
        """Train: ``run(problem, hook)`` (the algorithm's runner on a
        :class:`~crfkit.training.train_options.Problem`), once; a structure may run it in
        phases (the latent structure's structured start)."""
        return run(problem, hook)

    def notes(self, objective: object) -> list[str]:
        """Warnings after L-BFGS (a skip chain: BP that did not converge)."""
        return []

    def training_info(self, corpus: Corpus, values: Mapping[str, Any]) -> dict[str, Any]:
        """Entries of the model's info after ``initial_model``."""
        return {}

    def recorded(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """Its options as the model records them (after ``record_after``)."""
        return {}

    # -- decoding ------------------------------------------------------------------------------
    @abstractmethod
    def decode(self, model: Weighted, data: Dataset, request: DecodeRequest) -> Decoded:
        """Every labelling mode of a batch, into one Decoded."""

    def fused_best_path(self, model: Weighted) -> bool:
        """Whether :meth:`decode` serves the plain best path of ``model`` with the fused
        compiled kernel (:mod:`crfkit.kernels.fusedpath`) when ``request.fused`` asks."""
        return False

    # -- the model file ------------------------------------------------------------------------
    def save(self, space: FeatureSpace, meta: dict, arrays: dict) -> None:
        """Append its header fields and arrays (after the chain's: files stay as they were)."""
        meta["structure"] = self.name

    def load(self, check: ModelChecker, space: FeatureSpace, patterns: list[Pattern],
             model_type: str, info: Mapping[str, Any]) -> FeatureSpace:
        """Its space over the checked first-order one; raise check.fail(...) on a bad file."""
        return space

    @abstractmethod
    def compact(self, space: FeatureSpace, weights: np.ndarray, keep_u: np.ndarray,
                keep_b: np.ndarray) -> tuple[FeatureSpace, np.ndarray, np.ndarray]:
        """The space and weights without the dropped features; which observations stay."""

    # -- describing, sizing, compiling ----------------------------------------------------------
    def describe(self, model: ModelView) -> Description:
        return Description()

    def dump_rows(self, model: ModelView, obs_text: np.ndarray,
                  parts: DumpParts) -> np.ndarray | None:
        """Append its feature rows to ``parts``; return prev2 per row if it has one."""
        return None

    def state_names(self, model: ModelView) -> list[str]:
        """The names ``dump`` gives the space's label ids (a structure with several states
        per label names each state)."""
        return list(model.labels)

    def memory(self, corpus: Corpus, vectors: int, gradient_rows: int) -> MemoryPart:
        return MemoryPart()

    @abstractmethod
    def kernels(self, algo: str, model_type: str, devel: bool) -> Iterable[tuple[int, Kernels]]:
        """(compile seconds, kernels) groups a training runs (crfkit.training.jitcache)."""

    def label_kernels(self, numpy_will_do: bool) -> Iterable[tuple[int, Kernels]]:
        """The groups ``crfkit label`` compiles (``numpy_will_do``: the options ask only for
        the plain best path, which a structure may serve without Numba)."""
        return ()

    def label_notes(self, sequences: int, markers: int, doc_sep: str | None) -> list[str]:
        """Lines ``crfkit label`` prints after labelling ``sequences`` with ``markers``
        document markers (a skip chain: input without markers lost its skip edges)."""
        return []

    def heading(self, model_type: str) -> str:
        """What the training's progress header calls a model of this type and structure."""
        return model_type
