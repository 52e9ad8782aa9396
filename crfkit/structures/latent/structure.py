"""Latent-dynamic CRFs: K hidden states per label (Morency et al. 2007; Sun et al. 2008).

The chain runs over states (:mod:`.states`); a state path determines the label path.
Training maximises the probability of the gold labels summed over their states
(:mod:`.objective`: the chain's free pass over every state minus a clamped pass over the
states the annotation allows, :mod:`.clamped`). Labelling takes the best state path by
default, or the best label path summing over states (:mod:`.label_search`). A model file is
a chain's with ``structure: latent``, ``latent: K`` and each feature's state index.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from crfkit.errors import InputError, UsageError
from crfkit.kernels.decoded import Decoded, Weighted
from crfkit.space import Dataset, merge_spaces
from crfkit.structures.base import (
    Choice,
    Corpus,
    DecodeRequest,
    Description,
    Kernels,
    ModelView,
    Setting,
)
from crfkit.structures.chain import Chain
from crfkit.structures.latent.options import LABEL_OPTIONS, TRAIN_OPTIONS
from crfkit.structures.latent.states import (
    LatentSpace,
    label_marginals,
    label_space,
    perturbation,
    start_mask,
    state_names,
    state_space,
    state_tokens,
    state_transitions,
    successor_states,
)

if TYPE_CHECKING:
    from crfkit.io.model_checker import ModelChecker

CLAMPED = 5  # compile seconds of the clamped pass
# the algorithms that sum over states and label sets: those that minimise the structure's
# objective (l-bfgs, OWL-QN and rprop call it) and sgd-l1 (its epochs); the others need a
# gold path (the online ones) or the gold counts of a chain (bcd)
SUMMING = ("l-bfgs", "sgd-l1", "rprop", "rprop+", "rprop-")
USE = "use -a l-bfgs (with -1 for L1), -a rprop or -a sgd-l1"


def start_of(values: Mapping[str, Any]) -> str:
    """The run's --latent-start (successors unless given)."""
    return values.get("latent_start") or "successors"


class Latent(Chain):
    name: ClassVar[str] = "latent"
    title: ClassVar[str] = "latent-dynamic chain"
    train_options, label_options = TRAIN_OPTIONS, LABEL_OPTIONS
    label_sets: ClassVar[bool] = True
    # a chain's training on label sets is this one's at K = 1 (the same model file)
    label_sets_for: ClassVar[str] = "chain"
    record_after: ClassVar[str] = "model_type"

    def __init__(self) -> None:
        self.K = 1
        self.K_given = False

    # -- choosing and refusing -------------------------------------------------------------
    @classmethod
    def claims(cls, choice: Choice) -> bool:
        """``--latent K``, 1 too: a plain crf that may train from label sets (with none, it
        is the chain's training, model and file, bit for bit)."""
        return choice.values.get("latent") is not None or super().claims(choice)

    def continues(self, init: str, values: Mapping[str, Any]) -> bool:
        """A chain's model too at --latent 1 (a plain crf, the same model); not at K > 1."""
        if init != self.label_sets_for:
            return super().continues(init, values)
        self._take(values)
        if self.K > 1:
            raise UsageError(f"the initial model is a linear chain (one state per label): it "
                             f"cannot continue with --latent {self.K} (--latent 1 can)")
        return True

    def continue_from(self, values: Mapping[str, Any]) -> None:
        self._take(values)

    def _take(self, values: Mapping[str, Any]) -> None:
        if values.get("latent") is not None:
            self.K, self.K_given = int(values["latent"]), True

    def refuse(self, setting: Setting) -> None:
        self._take(setting.values)
        if setting.command == "dask":
            raise UsageError("--latent is not available with --dask")
        if setting.label_sets is not None:
            self._refuse_for_label_sets(setting, *setting.label_sets)
        if setting.model_type != "crf":
            raise UsageError(f"a {setting.model_type} model has no hidden states: --latent "
                             f"trains a crf (drop -T/--type)")
        K = self.K if self.K_given or setting.init is None else getattr(
            setting.init.space, "K", 1)  # -m without --latent: the initial model's
        if setting.algo not in SUMMING and K > 1:
            raise UsageError(f"-a {setting.algo} cannot train a latent-dynamic model; {USE}")
        if setting.likely:
            raise UsageError("--likely-features trains a first-order crf: not with --latent")

    @staticmethod
    def _refuse_for_label_sets(setting: Setting, path: str, line: int | None) -> None:
        """What cannot train from the data's label sets (with --latent K or in the chain's
        place), refused at the first one."""
        if setting.algo not in SUMMING:
            raise InputError(f"a label set (? or A|B): -a {setting.algo} cannot train from "
                             f"label sets; {USE}", path=path, line=line)
        if setting.model_type != "crf":
            raise InputError(f"a label set (? or A|B): a {setting.model_type} model cannot "
                             f"train from label sets; train a crf (drop -T/--type)",
                             path=path, line=line)
        if setting.likely:
            raise InputError("a label set (? or A|B): --likely-features cannot train from "
                             "label sets", path=path, line=line)

    # -- encoding ----------------------------------------------------------------------------
    def patterns(self, patterns, progress):
        observed = [p for p in patterns if p.has_bigram and not p.is_constant]
        if observed:
            p = observed[0]
            model = "a latent-dynamic model" if self.K_given else "training on label sets"
            raise UsageError(f"pattern {p.text!r} (line {p.line}) has observation bigrams: "
                             f"{model} takes u patterns and a bare B")
        return super().patterns(patterns, progress)

    def encode_space(self, space, empirical, enc):
        """Every (observation, label) feature as K (observation, state) features; the gold
        counts come from the clamped pass at each evaluation, not from here. K = 1 without
        label sets: the chain's space and counts."""
        if self.K == 1 and enc.labels.min(initial=0) >= 0:
            return space, empirical
        states = state_space(space, self.K)
        return states, np.zeros(states.n_weights)

    def merge_init(self, space, empirical, init_space, init_weights):
        K = getattr(init_space, "K", 1)
        if self.K_given and K != self.K:
            raise UsageError(f"the initial model has {K} states per label: it cannot "
                             f"continue with --latent {self.K}")
        if K == 1 and not isinstance(space, LatentSpace):  # full labels: the chain's
            return super().merge_init(space, empirical, init_space, init_weights)
        if K != self.K:  # --latent not given: the initial model's
            space, self.K = state_space(label_space(space, self.K), K), K
        merged, _, x0 = merge_spaces(space, np.zeros(space.n_weights), init_space,
                                     init_weights)
        merged = LatentSpace.of(merged, K)
        return merged, np.zeros(merged.n_weights), x0

    def attach(self, corpus: Corpus, sequences, starts, values, init, progress) -> None:
        """The labels each token allows, the sequences' lines, the seeded start."""
        from crfkit.structures.latent.objective import LatentPart

        if not isinstance(corpus.space, LatentSpace):
            return  # K = 1 without label sets: the chain's training
        allowed = corpus.allowed
        if allowed is None:
            allowed = np.zeros((corpus.data.n_tokens, len(corpus.labels)), dtype=bool)
            allowed[np.arange(corpus.data.n_tokens), corpus.data.labels] = True
        lines = (corpus.first_lines if corpus.first_lines is not None
                 else [seq.lines[0] for seq in sequences])
        corpus.part = LatentPart(allowed, self.K, lines)
        if init is not None or self.K == 1:
            return
        if start_of(values) == "random":
            corpus.x0 = corpus.x0 + perturbation(len(corpus.x0), int(values.get(
                "latent_seed") or 0))
            return
        labels = corpus.data.labels
        states = successor_states(labels, corpus.data.seq_ptr, len(corpus.labels), self.K)
        corpus.part.start = start_mask(allowed, labels, states, self.K)

    # -- optimising ----------------------------------------------------------------------------
    def objective(self, corpus: Corpus, rho2: float, normalisation: int, values):
        from crfkit.structures.latent.objective import LatentObjective

        if corpus.part is None:
            return super().objective(corpus, rho2, normalisation, values)
        return LatentObjective(corpus.space, corpus.data, corpus.part, rho2, corpus.frozen)

    def optimise(self, problem, hook, run, progress):
        """The structured start (``--latent-start successors``): the algorithm runs first
        with each token's state clamped to the one its successor gives it (one state path
        per sequence: the convex training of a chain over the states), then on from there
        with the states free, the two runs counted as one (:mod:`crfkit.optim.phases`)."""
        from crfkit.optim.phases import Phases

        part, o = problem.corpus.part, problem.options
        if getattr(part, "start", None) is None or o.restore_state is not None:
            return run(problem, hook)  # (a restored run goes on from where it was)
        phases = Phases(hook)
        clamped = replace(part, allowed=part.start, K=1)  # one state a column: the start's
        first = run(replace(problem, corpus=replace(problem.corpus, part=clamped)),
                    phases.first)
        if phases.ends(first, o.maxiter):
            return first
        if progress is not None:
            progress.message(f"* hidden states set free after {first.iterations} iterations "
                             f"with each token's state set by its successor")
        second = run(replace(problem, options=replace(o, maxiter=phases.left(o.maxiter)),
                             corpus=replace(problem.corpus, x0=first.x)), phases.second)
        return phases.joined(second)

    def epochs(self, kind: str, corpus: Corpus) -> object:
        part = corpus.part
        if part is None:
            return super().epochs(kind, corpus)
        if kind != "sgd":  # refused before encoding (refuse): a guard
            raise UsageError(f"label sets (? and A|B) and hidden states: {USE}")
        from crfkit.structures.latent.epochs import LatentSgdEpochs

        return LatentSgdEpochs(corpus.space, corpus.data, part.allowed, part.K, part.lines)

    def coordinate_blocks(self, corpus: Corpus) -> object | None:
        """The chain's bcd needs its gold counts: none over states or label sets."""
        return super().coordinate_blocks(corpus) if corpus.part is None else None

    def recorded(self, values: Mapping[str, Any]) -> dict[str, Any]:
        if self.K == 1:
            return {}  # a plain crf: its model is a chain's
        recorded = {"latent": self.K, "latent_start": start_of(values)}
        if recorded["latent_start"] == "random":
            recorded["latent_seed"] = int(values.get("latent_seed") or 0)
        return recorded

    # -- decoding ------------------------------------------------------------------------------
    def decode(self, model: Weighted, data: Dataset, request: DecodeRequest) -> Decoded:
        """The chain's decoder over the states, label masks made state masks; paths and
        marginals mapped back to labels (``--latent-decode labels``: the label search)."""
        from crfkit.kernels.decoder import decode

        if not isinstance(model.space, LatentSpace) or model.space.K == 1:
            return super().decode(model, data, request)
        K, r = model.space.K, request
        if r.values.get("latent_decode") == "labels":
            from crfkit.structures.latent.label_search import decode_labels

            return decode_labels(model, data, request)
        dec = decode(model, data, nbest=r.nbest, log_z=r.log_z or r.posterior,
                     marginals=r.marginals or r.posterior, posterior=False,
                     token_ok=None if r.token_ok is None else state_tokens(r.token_ok, K),
                     trans_ok=None if r.trans_ok is None else state_transitions(r.trans_ok, K))
        paths = np.where(dec.paths >= 0, dec.paths // K, -1).astype(np.int32)
        marg = None if dec.marginals is None else label_marginals(dec.marginals, K)
        if r.posterior:
            from crfkit.structures.latent.label_search import posterior_paths

            paths = posterior_paths(marg, data, r.trans_ok)
        return Decoded(paths=paths, scores=dec.scores, log_z=dec.log_z,
                       marginals=marg if r.marginals else None)

    # -- the model file ------------------------------------------------------------------------
    def save(self, space, meta: dict, arrays: dict) -> None:
        """Label ids in ``u_lab`` (as a chain's file) and each feature's state in ``u_state``;
        the transitions are the state pairs'. K = 1: a chain's file (it is a plain crf)."""
        if getattr(space, "K", 1) == 1:
            return
        super().save(space, meta, arrays)
        arrays.update(u_lab=(space.u_lab // space.K).astype(np.int32),
                      u_state=(space.u_lab % space.K).astype(np.int32))
        meta["latent"] = int(space.K)

    def load(self, check: ModelChecker, space, patterns, model_type, info):
        K = check.value("latent", int)
        if K < 1 or model_type != "crf":
            raise check.fail(f"bad latent-dynamic model: {K} states per label, "
                             f"type {model_type}")
        u_state = check.array("u_state", np.int32, 1, length=space.n_u)
        if len(u_state) and (u_state.min() < 0 or u_state.max() >= K):
            raise check.fail("u_state: state index out of range")
        states = LatentSpace.of(space, K)
        states.n_labels = space.n_labels * K
        states.u_lab = (space.u_lab * K + u_state).astype(np.int32)
        return states

    def compact(self, space, weights, keep_u, keep_b):
        new, W, keep_obs = super().compact(space, weights, keep_u, keep_b)
        return LatentSpace.of(new, space.K), W, keep_obs

    # -- describing, sizing, compiling ----------------------------------------------------------
    def describe(self, model: ModelView) -> Description:
        K = model.space.K
        return Description(lines=[("states", f"{K} per label, {model.space.n_labels} in all "
                                             f"(LABEL#k in dump)")])

    def state_names(self, model: ModelView) -> list[str]:
        return state_names(model.labels, model.space.K)

    def kernels(self, algo: str, model_type: str, devel: bool) -> Iterable[tuple[int, Kernels]]:
        """The chain's (its free pass and decoder) and the clamped pass."""
        yield from super().kernels(algo, model_type, devel)
        yield CLAMPED, _sgd if algo == "sgd-l1" else _clamped

    def label_kernels(self, numpy_will_do: bool) -> Iterable[tuple[int, Kernels]]:
        return super().label_kernels(False)  # no numpy decoder over states

    def heading(self, model_type: str) -> str:
        if self.K == 1:
            return super().heading(model_type)
        return f"{model_type} order 1, {self.K} states per label"


def _sgd() -> list[tuple[object, ...]]:
    from crfkit.structures.latent import epochs

    return [(epochs.latent_sgd_epoch,)]


def _clamped() -> list[tuple[object, ...]]:
    from crfkit.structures.latent import clamped

    return [(clamped.clamped_block,)]
