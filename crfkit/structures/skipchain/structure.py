"""The SkipChain structure (the interface's side of crfkit.structures.skipchain)."""


from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, ClassVar

import numpy as np

from crfkit.errors import UsageError
from crfkit.kernels.decoded import Decoded, Weighted
from crfkit.space import Dataset
from crfkit.structures.base import (
    Choice,
    Corpus,
    DecodeRequest,
    Description,
    DumpParts,
    Kernels,
    MemoryPart,
    Setting,
)
from crfkit.structures.chain import Chain
from crfkit.structures.skipchain.documents import (
    attach_skip_edges,
    batch_starts,
    decode_documents,
    recorded_skip_options,
    skip_bytes,
    unmarked_input_warning,
)
from crfkit.structures.skipchain.graph import edge_patterns, skip_patterns
from crfkit.structures.skipchain.options import LABEL_OPTIONS, TRAIN_OPTIONS, skip_options
from crfkit.structures.skipchain.space import SkipSpace

# compile seconds of belief propagation's kernels (taken as the chain decoder's)
SKIP_TRAIN, SKIP_DECODE = 11, 11


class SkipChain(Chain):
    name: ClassVar[str] = "skipchain"
    title: ClassVar[str] = "skip chain"
    train_options = TRAIN_OPTIONS
    label_options = LABEL_OPTIONS
    record_after: ClassVar[str] = "max_memory"
    documents: ClassVar[bool] = True
    needs_rows: ClassVar[bool] = True

    # -- choosing and refusing -------------------------------------------------------------
    @classmethod
    def claims(cls, choice: Choice) -> bool:
        """A pattern file with ``s:`` lines trains a skip chain, no option needed; another
        explicit type with such lines is refused, and so are ``e:`` lines without ``s:``."""
        patterns = choice.patterns
        has_skip = bool(patterns) and bool(skip_patterns(patterns))
        if not has_skip and patterns and edge_patterns(patterns):
            raise UsageError("the pattern file has skip-edge observation (e:) patterns but no "
                             "skip-edge (s:) pattern whose edges they would condition")
        if has_skip and choice.model_type not in (None, cls.name):
            raise UsageError(f"the pattern file has skip-edge (s:) patterns, which only a "
                             f"{cls.name} model has: drop -T {choice.model_type} or the s: "
                             f"lines")
        return has_skip or super().claims(choice)

    @classmethod
    def recognises(cls, meta: Mapping[str, Any]) -> bool:
        return meta.get("type") == cls.name

    def refuse(self, setting: Setting) -> None:
        if setting.algo == "bcd":
            raise UsageError("-a bcd trains linear chains: train skip-chain models with -a l-bfgs")
        if setting.command == "tune":
            raise UsageError("crfkit tune does not train skip-chain models (s: patterns) yet: "
                             "train them with crfkit train -2 X")
        if setting.command == "dask":
            raise UsageError("skip-chain models (s: and e: patterns) are not available with "
                             "--dask")
        if setting.devel:
            raise UsageError(f"-d/--devel is not available for {self.name} models (score the "
                             f"development file with crfkit label -c | crfkit eval)")

    def refuse_labelling(self, asked: Mapping[str, bool]) -> None:
        refused = [flag for flag in ("-n/--nbest", "-s/--score", "--force", "--constraints")
                   if asked.get(flag)]
        if refused:
            raise UsageError(f"{refused[0]} is not available with a {self.name} model (its "
                             f"labels come from belief propagation; -p and --marginals are)")

    def doc_sep(self, info: Mapping[str, Any]) -> str | None:
        return recorded_skip_options(info).doc_sep

    def label_notes(self, sequences: int, markers: int, doc_sep: str | None) -> list[str]:
        warning = unmarked_input_warning(sequences, markers, doc_sep)
        return [warning] if warning else []

    # -- encoding and training -------------------------------------------------------------
    def attach(self, corpus, sequences, starts, values, init, progress) -> None:
        """The documents and skip edges of the corpus, their weight blocks and gold counts
        (warm start: the initial model's skip weights)."""
        options = skip_options(values)
        graph = attach_skip_edges(corpus, sequences, starts, corpus.featurizer.patterns,
                                  options, init)
        corpus.part = graph
        progress.message(f"* skip edges: {graph.n_edges} in {graph.n_docs} documents "
                         f"({options.mode}, at most {options.cap} a document)")

    def objective(self, corpus: Corpus, rho2: float, normalisation: int, values):
        """The Bethe objective; a corpus without a single edge is a linear chain, whose
        objective trains the same model (bit for bit), faster."""
        graph = corpus.part
        if graph is None or not graph.n_edges:
            return super().objective(corpus, rho2, normalisation, values)
        from crfkit.structures.skipchain.bethe import BeliefPropagation, SkipObjective

        o = skip_options(values)
        return SkipObjective(corpus.space, corpus.data, corpus.empirical, rho2, graph.arrays(),
                             corpus.space.skip_offset,
                             BeliefPropagation(o.bp_maxiter, o.bp_tol, o.bp_damping),
                             edge_blocks=graph.blocks())

    def notes(self, objective: object) -> list[str]:
        unconverged = getattr(objective, "unconverged", 0)
        if not unconverged:
            return []
        return [f"belief propagation did not converge in {unconverged} documents at the last "
                f"evaluation (try a larger --bp-damping or --bp-maxiter)"]

    def training_info(self, corpus: Corpus, values: Mapping[str, Any]) -> dict[str, Any]:
        graph = corpus.part
        skip = {**skip_options(values).as_dict(), "documents": graph.n_docs,
                "edges": graph.n_edges}
        if graph.conditions:  # e: patterns: the observations of the blocks' tail
            skip["conditions"] = graph.conditions
        return {"skip": skip}

    def recorded(self, values: Mapping[str, Any]) -> dict[str, Any]:
        return {"skip": skip_options(values).as_dict()}

    # -- decoding ------------------------------------------------------------------------------
    def decode(self, model: Weighted, data: Dataset, request: DecodeRequest) -> Decoded:
        """Whole documents by belief propagation. ``model`` must be a trained model (its
        patterns and info give the graph); ``request.starts`` the batch's document
        markers (none: every sequence is a document)."""
        r = request
        sequences = r.sequences or []
        return decode_documents(model, sequences, data, batch_starts(len(sequences), r.starts),
                                posterior=r.posterior, marginals=r.marginals,
                                damping=r.values.get("bp_damping"),
                                maxiter=r.values.get("bp_maxiter"))

    # -- the model file ------------------------------------------------------------------------
    def save(self, space, meta, arrays) -> None:
        if space.n_skip:  # the model type marks the file; n_skip only when there are blocks
            meta["n_skip"] = space.n_skip

    def load(self, check, space, patterns, model_type, info):
        return SkipSpace.over(space, skip_blocks(check, patterns, info))

    def compact(self, space, weights, keep_u, keep_b):
        """The chain's compaction; the skip blocks stay whole after the transitions."""
        new, weights, keep_obs = super().compact(space, weights, keep_u, keep_b)
        return SkipSpace.over(new, space.n_skip), weights, keep_obs

    # -- describing, sizing, compiling ----------------------------------------------------------
    def describe(self, model) -> Description:
        s = model.space
        return Description(feature_counts=[f"{s.n_skip * s.n_labels ** 2} skip-edge"]
                           if s.n_skip else [])

    def dump_rows(self, model, obs_text: np.ndarray, parts: DumpParts) -> None:
        """One row per label pair of every skip block: skip patterns, then observations."""
        L = model.space.n_labels
        blocks = [p.text for p in model.patterns if p.kind == "s"]
        if blocks:
            blocks += model.info.get("skip", {}).get("conditions", [])
        for text in blocks:
            parts.observation.append(np.full(L * L, text, dtype=object))
            parts.prev.append(np.repeat(np.arange(L, dtype=np.int64), L))
            parts.label.append(np.tile(np.arange(L, dtype=np.int64), L))
        return None

    def memory(self, corpus: Corpus, vectors: int, gradient_rows: int) -> MemoryPart:
        """The skip weights (a few) in every vector, and BP's messages and buffers."""
        s, graph = corpus.space, corpus.part
        if graph is None:
            return MemoryPart()
        weights = 8 * (vectors + gradient_rows + 1) * (s.n_weights - s.skip_offset)
        return MemoryPart(extra_bytes=weights + skip_bytes(graph, corpus.data.seq_ptr,
                                                           len(corpus.labels),
                                                           max(1, gradient_rows)))

    def kernels(self, algo: str, model_type: str, devel: bool) -> Iterable[tuple[int, Kernels]]:
        """Belief propagation's training kernels (l-bfgs only: train refuses the others)."""
        yield SKIP_TRAIN, _skip_train

    def label_kernels(self, numpy_will_do: bool) -> Iterable[tuple[int, Kernels]]:
        return ((SKIP_DECODE, _skip_decode),)  # always: belief propagation is Numba's


def skip_blocks(check, patterns, info: Mapping[str, Any]) -> int:
    """The number of skip weight blocks a model file must hold: one per skip pattern and
    one per skip-edge observation (``info.skip.conditions``); its settings checked."""
    from crfkit.structures.skipchain.options import SkipOptions

    n_skip = check.meta.get("n_skip", 0)
    found = info.get("skip") if isinstance(info, Mapping) else None
    conditions = found.get("conditions", []) if isinstance(found, dict) else []
    skip = len(skip_patterns(patterns)) + (len(conditions) if isinstance(conditions, list)
                                           else 0)
    if not isinstance(n_skip, int) or isinstance(n_skip, bool) or n_skip != skip:
        raise check.fail(f"model has {n_skip!r} skip weight blocks for {skip} skip patterns")
    try:
        SkipOptions.from_dict(found)
    except ValueError as err:
        raise check.fail(f"skip-chain model: {err}") from None
    return skip


def _skip_train() -> list[tuple[object, ...]]:
    from crfkit.structures.skipchain import belief

    return [(belief.skip_loss_block,)]


def _skip_decode() -> list[tuple[object, ...]]:
    from crfkit.structures.skipchain import belief

    return [(belief.skip_decode_block,)]
