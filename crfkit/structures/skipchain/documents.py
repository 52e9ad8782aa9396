"""The skip-chain model type in the workflows: encoding for training, decoding documents.

Training (:func:`attach_skip_edges`): the chain features are encoded as for a
linear chain (:func:`crfkit.training.corpus.encode_training`); this adds the documents
and skip edges (:mod:`crfkit.structures.skipchain.graph`), one ``L x L`` weight block per skip
pattern at the end of the weight vector, their gold counts, and (warm start)
the initial model's skip weights. Labelling (:func:`decode_documents`) builds
each batch's graph the same way and runs belief propagation
(:mod:`crfkit.structures.skipchain.bethe`, imported on first use: Numba).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from crfkit.errors import ModelFormatError, UsageError
from crfkit.features.patterns import Pattern
from crfkit.io.reader import Sequence
from crfkit.structures.skipchain.graph import (
    SkipGraph,
    build_graph,
    edge_patterns,
    skip_patterns,
)
from crfkit.structures.skipchain.options import SkipOptions
from crfkit.structures.skipchain.space import SkipSpace

if TYPE_CHECKING:
    from crfkit.kernels.decoded import Decoded
    from crfkit.space import Dataset
    from crfkit.structures.base import Corpus
    from crfkit.structures.base import ModelView as Model

SKIP_TYPE = "skipchain"


def resolve_skip_type(model_type: str | None, patterns: list[Pattern] | None) -> str | None:
    """A pattern file with ``s:`` lines trains a skip-chain model, no option needed;
    another explicit type with such lines is refused."""
    has_skip = bool(patterns) and bool(skip_patterns(patterns))
    if not has_skip and patterns and edge_patterns(patterns):
        raise UsageError("the pattern file has skip-edge observation (e:) patterns but no "
                         "skip-edge (s:) pattern whose edges they would condition")
    if not has_skip:
        return model_type
    if model_type not in (None, SKIP_TYPE):
        raise UsageError(f"the pattern file has skip-edge (s:) patterns, which only a "
                         f"{SKIP_TYPE} model has: drop -T {model_type} or the s: lines")
    return SKIP_TYPE


def attach_skip_edges(corpus: Corpus, sequences: list[Sequence], starts: list[int],
                      patterns: list[Pattern], options: SkipOptions,
                      init: Model | None) -> SkipGraph:
    """Give a training corpus its skip graph and skip weights (module docstring)."""
    old_conditions = model_conditions(init) if init is not None else None
    graph = build_graph(sequences, starts, patterns, options)
    if old_conditions:  # warm start: the initial model's observations keep their blocks
        known = set(old_conditions)
        graph = build_graph(sequences, starts, patterns, options,
                            old_conditions + [c for c in graph.conditions if c not in known])
    L = corpus.space.n_labels
    n_pat = len(skip_patterns(patterns))
    n_skip = n_pat + len(graph.conditions)
    space = corpus.space = SkipSpace.over(corpus.space, n_skip)
    block = n_skip * L * L
    counts = graph.pair_counts(corpus.data.labels, L, n_skip)
    corpus.empirical = np.concatenate([corpus.empirical[:space.skip_offset], counts])
    x0 = np.zeros(block)
    n_old = getattr(init.space, "n_skip", 0) if init is not None else 0
    if old_conditions is not None and n_old == n_pat + len(old_conditions) and n_skip:
        L_old = init.space.n_labels
        old = init.weights[init.space.skip_offset:].reshape(n_old, L_old, L_old)
        x0.reshape(n_skip, L, L)[:n_old, :L_old, :L_old] = old
    corpus.x0 = np.concatenate([corpus.x0[:space.skip_offset], x0])
    corpus.graph = graph
    return graph


def skip_bytes(graph: SkipGraph, seq_ptr: np.ndarray, n_labels: int, threads: int) -> int:
    """Memory BP adds to training: the messages, the graph, and per thread the scores and
    beliefs of the longest document (two rows of L floats per token)."""
    tokens = seq_ptr[graph.doc_ptr[1:]] - seq_ptr[graph.doc_ptr[:-1]]
    longest = int(tokens.max()) if len(tokens) else 0
    messages = 8 * (2 * n_labels + 2 * n_labels * n_labels) * graph.n_edges  # + scores, beliefs
    arrays = 8 * (3 * graph.n_edges + 2 * len(graph.inc_edge) + len(graph.inc_ptr)
                  + len(graph.blocks()[1]))
    return messages + arrays + threads * 16 * n_labels * longest


def model_skip_options(model: Model) -> SkipOptions:
    """The skip-edge and BP settings a skip-chain model was trained with."""
    return recorded_skip_options(model.info)


def recorded_skip_options(info: Mapping[str, Any]) -> SkipOptions:
    """The skip-edge and BP settings a skip-chain model's info records."""
    try:
        return SkipOptions.from_dict(info.get("skip"))
    except ValueError as err:
        raise ModelFormatError(f"skip-chain model: {err}") from None


def model_conditions(model: Model) -> list[str]:
    """The skip-edge observations (``e:`` patterns) a skip-chain model has weights for."""
    skip = model.info.get("skip")
    conditions = skip.get("conditions", []) if isinstance(skip, dict) else []
    if not isinstance(conditions, list) or not all(isinstance(c, str) for c in conditions):
        raise ModelFormatError("skip-chain model: bad skip-edge observation list")
    return conditions


def batch_starts(n_seqs: int, markers: list[int] | None) -> list[int]:
    """First sequence of each document of a batch: at every marker position, or every
    sequence when the batch has no marker."""
    if not markers:
        return list(range(n_seqs))
    starts = sorted({0, *(m for m in markers if m < n_seqs)})
    return [s for s in starts if s < n_seqs]


def decode_documents(model: Model, sequences: list[Sequence], data: Dataset,
                     starts: list[int], *, posterior: bool, marginals: bool,
                     damping: float | None = None, maxiter: int | None = None) -> Decoded:
    """Labels of a batch of whole documents (max-product, or sum-product beliefs for
    ``posterior`` / ``marginals``); the paths are max-product's unless ``posterior``.
    ``damping``/``maxiter``: belief propagation's, instead of those the model recorded
    (its labelling damping and its training rounds)."""
    from crfkit.structures.skipchain.bethe import BeliefPropagation, skip_decode

    options = model_skip_options(model)
    built = build_graph(sequences, starts, model.patterns, options, model_conditions(model))
    graph, blocks = built.arrays(), built.blocks()
    bp = BeliefPropagation(options.bp_maxiter if maxiter is None else maxiter, options.bp_tol,
                           options.label_damping if damping is None else damping)
    s = model.space
    decoded, _, unsettled = skip_decode(s, model.weights, data, graph, s.skip_offset, bp,
                                        posterior=posterior or marginals, marginals=marginals,
                                        edge_blocks=blocks)
    if marginals and not posterior:
        best, _, unsettled = skip_decode(s, model.weights, data, graph, s.skip_offset, bp,
                                         edge_blocks=blocks)
        decoded.paths = best.paths
    decoded.unsettled = unsettled  # of the decoding whose labels are written
    return decoded


def unmarked_input_warning(sequences: int, markers: int, doc_sep: str | None) -> str | None:
    """The line to print when a skip-chain model labelled input without document markers:
    each sentence was then its own document, with no skip edge between sentences (the
    model's accuracy drops to about a linear chain's, or below)."""
    if markers or sequences < 2:
        return None
    marks = "-DOCSTART- lines" + (f" or lines matching --doc-sep {doc_sep!r}" if doc_sep else "")
    return (f"* no document marker in INPUT ({marks}): each of its {sequences} sentences was "
            f"labelled as its own document, without skip edges between sentences; mark "
            f"documents with -DOCSTART- lines or name their separator with --doc-sep REGEX")
