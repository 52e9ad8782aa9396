"""The Order2 structure (the interface's side of crfkit.structures.order2)."""


from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from crfkit.errors import UsageError
from crfkit.kernels.decoded import Decoded, Weighted
from crfkit.options import Option
from crfkit.space import Dataset, FeatureSpace, merge_spaces
from crfkit.structures.base import (
    Choice,
    Corpus,
    DecodeRequest,
    Description,
    DumpParts,
    Encoding,
    Kernels,
    MemoryPart,
    ModelView,
    PatternCost,
    Setting,
)
from crfkit.structures.chain import DEVEL, SGD, Chain
from crfkit.structures.order2.options import TRAIN_OPTIONS

if TYPE_CHECKING:
    from crfkit.features.patterns import Pattern
    from crfkit.io.model_checker import ModelChecker
    from crfkit.progress import Progress

# compile seconds (README's 2-core machine; first run, empty cache): the l-bfgs kernels
# (lanes / pair lattice) and labelling's decoder
ORDER2, DECODE2 = 12, 11


class Order2(Chain):
    """A crf over label pairs: transitions score label trigrams (``--order 2``)."""

    name: ClassVar[str] = "order2"
    title: ClassVar[str] = "second-order chain"
    train_options: ClassVar[tuple[Option, ...]] = TRAIN_OPTIONS
    record_after: ClassVar[str] = "model_type"

    # -- choosing and refusing ---------------------------------------------------------------
    @classmethod
    def claims(cls, choice: Choice) -> bool:
        return choice.values.get("order") == 2 or super().claims(choice)

    @classmethod
    def recognises(cls, meta: Mapping[str, Any]) -> bool:
        return meta.get("order", 1) != 1  # load() refuses an order it does not know

    def continue_from(self, values: Mapping[str, Any]) -> None:
        order = values.get("order")
        if order not in (None, 2):
            raise UsageError(f"the initial model has order 2: it cannot continue with "
                             f"--order {order}")

    def refuse(self, setting: Setting) -> None:
        order = setting.values.get("order")
        if order not in (None, 2):
            raise UsageError(f"--order {order} contradicts --structure {self.name}")
        if setting.command == "dask":
            raise UsageError("--order 2 is not available with --dask")
        if setting.model_type != "crf":
            raise UsageError(f"a {setting.model_type} model has no second order: --order 2 "
                             f"trains a crf (drop -T/--type)")
        if setting.algo not in ("l-bfgs", "sgd-l1"):
            raise UsageError(f"-a {setting.algo} cannot train a second-order model; "
                             f"use -a l-bfgs (with -1 for L1) or -a sgd-l1")
        if setting.likely and setting.command == "tune":
            raise UsageError("--likely scores likely features of first-order models: "
                             "not with --order 2")
        if setting.likely:
            raise UsageError("--likely-features trains a first-order crf with -a l-bfgs, "
                             "without --all-features, --all-labels or --order 2")

    # -- encoding ----------------------------------------------------------------------------
    def patterns(self, patterns: list[Pattern], progress: Progress | None) -> list[Pattern]:
        return list(patterns)  # the t lines are its own; u, b and * as the chain's

    def encode_space(self, space: FeatureSpace, empirical: np.ndarray,
                     enc: Encoding) -> tuple[FeatureSpace, np.ndarray]:
        """The second-order space over the first-order one, and its gold counts."""
        from crfkit.structures.order2.pair_space import order2_space

        featurizer = enc.featurizer
        patterns = featurizer.patterns
        trigram = trigram_flags([patterns[p] for p in featurizer.listed])
        flags = None
        if enc.all_features:  # every trigram for each observation of a t pattern
            flags = np.zeros(len(patterns), dtype=bool)
            flags[featurizer.listed] = trigram
            flags = flags[featurizer.vocab.pattern]
        return order2_space(space, empirical, enc.obs, trigram, enc.index, enc.labels,
                            _has_tri(patterns), all_features=flags)

    def merge_init(self, space, empirical, init_space, init_weights):
        """The chain's merge for the first-order parts; label-pair and trigram states are
        the union of both (the old codes re-keyed for the larger label set), and so are the
        observation trigrams."""
        from crfkit.structures.order2.pair_space import first_order_parts, merged_trigrams

        base, emp, x0 = merge_spaces(FeatureSpace(**first_order_parts(space)),
                                     empirical[:space.g_offset],
                                     FeatureSpace(**first_order_parts(init_space)),
                                     init_weights[:init_space.g_offset])
        return merged_trigrams(base, emp, x0, space, empirical, init_space, init_weights)

    def dense_costs(self, listed: list[Pattern], n_labels: int) -> MemoryPart:
        """Every label trigram for each observation of a ``t`` pattern, and the
        label-trigram block with every trigram a state."""
        L3 = n_labels ** 3
        return MemoryPart(per_pattern=L3 * trigram_flags(listed).astype(np.int64),
                          costs=[PatternCost(listed[-1], 1, L3)])

    # -- optimising ----------------------------------------------------------------------------
    def objective(self, corpus: Corpus, rho2: float, normalisation: int, values):
        from crfkit.structures.order2.pair_objective import Objective2

        return Objective2(corpus.space, corpus.data, corpus.empirical, rho2, normalisation)

    def epochs(self, kind: str, corpus: Corpus) -> object:
        if kind != "sgd":  # refuse() lets only l-bfgs and sgd-l1 through
            raise ValueError(f"a second-order model has no {kind} epochs")
        from crfkit.structures.order2.pair_epochs import SgdEpochs2

        return SgdEpochs2(corpus.space, corpus.data)

    def recorded(self, values: Mapping[str, Any]) -> dict[str, Any]:
        return {"order": 2}

    # -- decoding ------------------------------------------------------------------------------
    def decode(self, model: Weighted, data: Dataset, request: DecodeRequest) -> Decoded:
        """Every mode through the pair decoder (no numpy twin: ``request.kernels`` is moot)."""
        from crfkit.structures.order2.pair_decoder import decode2

        r = request
        return decode2(model, data, nbest=r.nbest, log_z=r.log_z, marginals=r.marginals,
                       posterior=r.posterior, token_ok=r.token_ok, trans_ok=r.trans_ok)

    # -- the model file ------------------------------------------------------------------------
    def save(self, space, meta: dict, arrays: dict) -> None:
        """``order: 2``, ``has_tri`` and four arrays after the chain's (files as before)."""
        arrays.update(pairs=space.pairs, tri=space.tri, g_ptr=space.g_ptr, g_tri=space.g_tri)
        meta.update(order=2, has_tri=bool(space.has_tri))

    def load(self, check: ModelChecker, space: FeatureSpace, patterns: list[Pattern],
             model_type: str, info: Mapping[str, Any]) -> FeatureSpace:
        from crfkit.structures.order2.pair_space import Order2Space, first_order_parts

        order = check.meta.get("order")
        if order != 2 or model_type != "crf":
            raise check.fail(f"unsupported label order {order!r} for a {model_type} model")
        has_tri = check.value("has_tri", bool)
        if has_tri and not _has_tri(patterns):
            raise check.fail("model has a label-trigram block but no constant pattern to own it")
        space2 = Order2Space(**first_order_parts(space),
                             pairs=check.array("pairs", np.int64, 1),
                             tri=check.array("tri", np.int64, 1),
                             g_ptr=check.array("g_ptr", np.int64, 1),
                             g_tri=check.array("g_tri", np.int32, 1), has_tri=has_tri)
        try:
            space2.check()
        except ValueError as err:
            raise check.fail(f"bad second-order space: {err}") from None
        return space2

    def compact(self, space, weights, keep_u, keep_b):
        """Observation trigrams are dropped too; states and the dense blocks stay whole."""
        from crfkit.structures.order2.pair_space import subset2

        s, W = space, weights
        keep_g = W[s.g_offset:s.tri_offset] != 0.0
        new, keep_obs = subset2(s, keep_u, keep_b, keep_g)
        return new, np.concatenate([W[:s.n_u][keep_u], W[s.n_u:s.trans_offset][keep_b],
                                    W[s.trans_offset:s.g_offset],
                                    W[s.g_offset:s.tri_offset][keep_g],
                                    W[s.tri_offset:]]), keep_obs

    # -- describing, sizing, compiling ----------------------------------------------------------
    def describe(self, model: ModelView) -> Description:
        s = model.space
        L = s.n_labels
        return Description(lines=[
            ("order", f"2: {len(s.pairs)} label pairs (of {L ** 2}) and {len(s.tri)} label "
                      f"trigrams (of {L ** 3}) have states"),
            ("trigram features", f"{s.n_g} observation trigram, "
                                 f"{len(s.tri) if s.has_tri else 0} label trigram")])

    def dump_rows(self, model: ModelView, obs_text: np.ndarray,
                  parts: DumpParts) -> np.ndarray | None:
        """The observation trigrams and the label-trigram block; prev2 of every row."""
        s = model.space
        L = s.n_labels
        n_first = sum(len(p) for p in parts.label)
        codes = s.tri[s.g_tri]
        parts.observation.append(obs_text[np.repeat(np.arange(s.n_obs), np.diff(s.g_ptr))])
        if s.has_tri:
            parts.observation.append(np.full(len(s.tri), _tri_owner(model.patterns).text,
                                             dtype=object))
            codes = np.concatenate([codes, s.tri])
        parts.prev.append((codes // L) % L)
        parts.label.append(codes % L)
        return np.concatenate([np.full(n_first, -1, dtype=np.int64), codes // (L * L)])

    def memory(self, corpus: Corpus, vectors: int, gradient_rows: int) -> MemoryPart:
        """Observation trigrams per observation, and the label-trigram block."""
        s = corpus.space
        costs = []
        if s.has_tri:
            costs.append(PatternCost(_tri_owner(corpus.featurizer.patterns), 1, len(s.tri)))
        return MemoryPart(per_observation=np.diff(s.g_ptr), costs=costs)

    def kernels(self, algo: str, model_type: str, devel: bool) -> Iterable[tuple[int, Kernels]]:
        """l-bfgs or sgd-l1 (refuse() lets no other through)."""
        yield (SGD, _sgd2) if algo == "sgd-l1" else (ORDER2, _order2)
        if devel:
            yield DEVEL, _devel2

    def label_kernels(self, numpy_will_do: bool) -> Iterable[tuple[int, Kernels]]:
        return ((DECODE2, _devel2),)  # no numpy decoder: every mode compiles

    def heading(self, model_type: str) -> str:
        """The training's progress header: a crf of order 2 (the chain's says order 1)."""
        return f"{model_type} order 2"


def trigram_flags(listed: list[Pattern]) -> np.ndarray:
    """Which listed patterns add observation trigrams (constant ones own the block)."""
    return np.array([p.has_trigram and not p.is_constant for p in listed], dtype=bool)


def _has_tri(patterns: list[Pattern]) -> bool:
    """Whether a constant pattern asks for the label-trigram block."""
    return any(p.is_constant and (p.has_trigram or p.has_bigram) for p in patterns)


def _tri_owner(patterns: list[Pattern]) -> Pattern:
    """The pattern the label-trigram block is listed under (info, dump, memory)."""
    return next(p for p in patterns if p.is_constant and (p.has_trigram or p.has_bigram))


def _order2() -> list[tuple[object, ...]]:
    from crfkit.kernels import lattice, loss
    from crfkit.structures.order2 import lanes, pair_lattice

    # lanes without observation trigrams, one sequence at a time with them
    return [(lanes.loss_block_lanes, pair_lattice.loss_block2), (lattice.dense_rows,),
            (loss.add_blocks,)]


def _sgd2() -> list[tuple[object, ...]]:
    from crfkit.structures.order2 import pair_epochs

    return [(pair_epochs.sgd_epoch2,)]


def _devel2() -> list[tuple[object, ...]]:
    from crfkit.structures.order2 import pair_decoder

    return [(pair_decoder.decode_block2,)]
