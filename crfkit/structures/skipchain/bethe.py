"""The skip-chain CRF's training objective and decoder: documents in blocks, on threads.

    f(w) = sum_d log Z_B,d(w) - w . empirical + rho2/2 |w|^2
    g(w) = beliefs(w) - empirical + rho2 w

with ``log Z_B`` the Bethe approximation of each document's log partition
function, computed by loopy belief propagation (:mod:`crfkit.structures.skipchain.belief`);
at a BP fixed point its gradient is the beliefs. A document without skip
edges is exact: the objective of a corpus without any is the linear chain's
(:class:`crfkit.kernels.objective.Objective`), to rounding (the chain's kernel takes a
token's factors dense rows first, :func:`crfkit.kernels.runs.dense_first`).

As there, documents are cut into fixed blocks (by token count), blocks run in
waves of one per thread and their gradient rows are added in block order, so
the model does not depend on the thread count. The skip messages of the last
evaluation are kept and start the next one (``warm``): the optimiser's steps
are small, so BP then needs a round or two instead of several.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from crfkit import config
from crfkit.errors import CrfkitError
from crfkit.kernels import loss
from crfkit.kernels.blocks import partition_blocks, run_blocks, thread_count
from crfkit.kernels.decoded import Decoded
from crfkit.kernels.flavour import read_only, read_only_space
from crfkit.space import DataArrays, Dataset, FeatureSpace
from crfkit.structures.skipchain.belief import (
    edge_scores,
    init_messages,
    scatter_beliefs,
    skip_decode_block,
    skip_loss_block,
)
from crfkit.structures.skipchain.messages import edge_factors
from crfkit.vectors import dot

if TYPE_CHECKING:
    from crfkit.structures.skipchain.graph import GraphArrays


@dataclass(frozen=True)
class BeliefPropagation:
    """Loopy BP settings: at most ``maxiter`` rounds, stop when no message moves more than
    ``tol`` (log space); new messages are mixed with ``damping`` of the old ones."""

    maxiter: int = 50
    tol: float = 1e-6
    damping: float = 0.0

    def arrays(self) -> tuple:
        return (np.int64(self.maxiter), np.float64(self.tol), np.float64(self.damping))


def document_blocks(data: Dataset, doc_ptr: np.ndarray) -> np.ndarray:
    """Fixed blocks of documents of about equal token count (independent of threads)."""
    lengths = data.seq_ptr[doc_ptr[1:]] - data.seq_ptr[doc_ptr[:-1]]
    return partition_blocks(lengths, config.N_BLOCKS)


def edge_block_arrays(graph: GraphArrays, edge_blocks: tuple | None) -> tuple:
    """``(eb_ptr, eb_blk)``: the weight blocks of every edge; without ``edge_blocks`` each
    edge has the one block of its skip pattern (``e_pat``)."""
    if edge_blocks is not None:
        return edge_blocks
    e_pat = np.asarray(graph.e_pat, dtype=np.int64)
    return np.arange(len(e_pat) + 1, dtype=np.int64), e_pat


def _edge_scores(w: np.ndarray, skip_offset: int, L: int, blocks: tuple) -> tuple:
    """``(S, ES)``: the edges' scores and their factors (the kernels' ``skip``)."""
    S = np.empty((len(blocks[0]) - 1, L, L))
    # read-only, as the weights of a loaded model are: one compiled version for both
    edge_scores(read_only(w), skip_offset, L, blocks[0], blocks[1], S)
    ES = np.empty_like(S)
    edge_factors(S, ES)
    return S, ES


def _scores(space: FeatureSpace, w: np.ndarray) -> tuple:
    """The transition block, its shifted exponential and the shift (as the CRF objective)."""
    trans, exp_trans, trans_shift, expw, _ = loss.shared_scores(
        w, space.u_ptr, space.u_lab, space.n_u, space.n_b, space.trans_offset, space.has_trans,
        space.n_labels, 0)
    return trans, exp_trans, trans_shift, expw


class SkipObjective:
    """Callable ``f = objective(w, g)``: the Bethe objective over documents (module docstring).

    ``graph`` is :meth:`crfkit.structures.skipchain.graph.SkipGraph.arrays`; the skip weights start
    at
    ``skip_offset``; ``edge_blocks`` (:meth:`crfkit.structures.skipchain.graph.SkipGraph.blocks`)
    gives each
    edge its weight blocks (default: its skip pattern's alone). ``rounds`` /
    ``unconverged`` count the BP rounds and the documents that did not converge in the
    last evaluation.
    """

    def __init__(self, space: FeatureSpace, data: Dataset, empirical: np.ndarray, rho2: float,
                 graph: GraphArrays, skip_offset: int, bp: BeliefPropagation, *,
                 warm: bool = True, edge_blocks: tuple | None = None) -> None:
        if len(data.labels) != data.n_tokens:
            raise ValueError("training data must carry gold labels")
        self.space, self.data, self.empirical = space, data, empirical
        self.rho2 = float(rho2)
        self.graph, self.skip_offset, self.bp, self.warm = graph, skip_offset, bp, warm
        max_blocks = max(1, config.MAX_BLOCK_BUFFER_BYTES // max(1, 8 * space.n_weights))
        lengths = data.seq_ptr[graph.doc_ptr[1:]] - data.seq_ptr[graph.doc_ptr[:-1]]
        self.block_ptr = partition_blocks(lengths, min(config.N_BLOCKS, max_blocks))
        n_blocks = len(self.block_ptr) - 1
        self.wave = max(1, min(thread_count(), n_blocks))
        self.n_dense = config.dense_observations(space.n_obs, space.n_labels)
        self.G_blocks = np.empty((self.wave, space.n_weights))
        self.out = np.empty((n_blocks, 5))
        self.msg = np.empty((len(graph.e_i), 2, space.n_labels))
        self.edge_blocks = edge_block_arrays(graph, edge_blocks)
        self.Bel = np.zeros((len(graph.e_i), space.n_labels, space.n_labels))
        init_messages(self.msg)
        self.token_errors = self.sequence_errors = self.rounds = self.unconverged = 0
        self.evaluations = 0
        # read-only, as a loaded model's are: labelling shares the compiled BP kernels
        self.space_arrays = read_only_space(space.arrays())
        self.data_arrays = data.arrays()

    def __call__(self, w: np.ndarray, g: np.ndarray) -> float:
        s = self.space
        trans, exp_trans, trans_shift, expw, Wd = loss.shared_scores(
            w, s.u_ptr, s.u_lab, s.n_u, s.n_b, s.trans_offset, s.has_trans, s.n_labels,
            self.n_dense)
        if not self.warm:
            init_messages(self.msg)
        bp = self.bp.arrays()
        S = _edge_scores(w, self.skip_offset, s.n_labels, self.edge_blocks)
        ptr, n_blocks = self.block_ptr, len(self.out)
        per_token = s.n_b > 0
        fixed = read_only(w)  # as the decoder's weights: one compiled version of BP
        for first in range(0, n_blocks, self.wave):
            last = min(first + self.wave, n_blocks)

            def block(i: int, first: int = first) -> None:
                skip_loss_block(fixed, self.space_arrays, self.data_arrays, self.graph,
                                s.n_labels, per_token, S, int(ptr[first + i]),
                                int(ptr[first + i + 1]), trans, exp_trans, trans_shift, expw,
                                Wd, bp, self.msg, self.G_blocks[i], self.Bel,
                                self.out[first + i])

            run_blocks(block, last - first)
            loss.add_blocks(self.G_blocks[:last - first], first == 0, g)
        scatter_beliefs(self.Bel, *self.edge_blocks, self.skip_offset, s.n_labels, g)
        log_z = float(np.sum(self.out[:, 0]))
        if not np.isfinite(log_z):
            init_messages(self.msg)  # do not warm-start from NaN
            raise CrfkitError("numerical overflow in belief propagation: the weights "
                              "diverged (try a larger -2/--rho2)")
        loss.finish_gradient(self.empirical, w, self.rho2, g)
        self.token_errors = int(self.out[:, 1].sum())
        self.sequence_errors = int(self.out[:, 2].sum())
        self.rounds = int(self.out[:, 3].sum())
        self.unconverged = int(self.out[:, 4].sum())
        self.evaluations += 1
        return log_z - dot(w, self.empirical) + 0.5 * self.rho2 * dot(w, w)


def skip_decode(space: FeatureSpace, weights: np.ndarray, data: Dataset, graph: GraphArrays,
                skip_offset: int, bp: BeliefPropagation, *, posterior: bool = False,
                marginals: bool = False,
                edge_blocks: tuple | None = None) -> tuple[Decoded, int, int]:
    """Label a batch of whole documents: max-product BP and Viterbi per chain, or with
    ``posterior`` sum-product BP and the label of highest belief; ``marginals`` keeps
    the beliefs (sum-product; the paths are then the posterior ones too).

    Returns the decoding (``log_z``: each chain's log Z given the skip messages,
    when sum-product ran), the BP rounds run and the documents not converged.
    """
    L = space.n_labels
    n_tok, n_seq = data.n_tokens, data.n_seqs
    paths = np.zeros(n_tok, dtype=np.int32)
    keep = bool(marginals)
    marg = np.zeros((n_tok if keep else 0, L))
    log_z = np.full(n_seq, np.nan)
    max_product = not (posterior or marginals)  # beliefs need sum-product
    blocks = document_blocks(data, graph.doc_ptr) if n_seq else np.zeros(1, dtype=np.int64)
    out = np.zeros((len(blocks) - 1, 2))
    msg = np.empty((len(graph.e_i), 2, L))
    init_messages(msg)
    if n_seq:
        trans, exp_trans, trans_shift, expw = _scores(space, weights)
        bp_arrays = bp.arrays()
        S = _edge_scores(weights, skip_offset, L, edge_block_arrays(graph, edge_blocks))
        labels = np.zeros(0, dtype=np.int32)
        data_arrays = DataArrays(data.seq_ptr, data.tok_ptr, data.tok_obs, labels)
        # read-only, whether the model was loaded or just trained: one compiled version
        fixed, arrays = read_only(weights), read_only_space(space.arrays())

        def block(b: int) -> None:
            skip_decode_block(fixed, arrays, data_arrays, graph, L, space.n_b > 0,
                              S, int(blocks[b]), int(blocks[b + 1]), trans,
                              exp_trans, trans_shift, expw, bp_arrays, max_product, msg, paths,
                              marg, keep, log_z, out[b])

        run_blocks(block, len(blocks) - 1)
    scores = np.zeros((n_seq, 1))
    decoded = Decoded(paths=paths[:, None], scores=scores, log_z=log_z,
                      marginals=marg if keep else None)
    return decoded, int(out[:, 0].sum()), int(out[:, 1].sum())
