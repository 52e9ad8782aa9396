"""The training objective: L2-regularised negative log-likelihood and its gradient.

    f(w) = sum_s log Z_s(w) - w . empirical + rho2/2 |w|^2
    g(w) = E_model[features] - empirical + rho2 w

(the gold path score of every sequence is ``w . empirical`` since features
are indicators). ``log Z_s`` is the sequence's partition function for a CRF,
the sum of its tokens' local normalisers for a MEMM or MaxEnt (the model
type's ``normalisation``, :mod:`crfkit.model.types`). The kernels of
:mod:`crfkit.kernels.loss` fill one gradient buffer per block of sequences;
:meth:`Objective.__call__` sums them in block order.
"""

from __future__ import annotations

import threading
from functools import cached_property

import numpy as np

from crfkit import config
from crfkit.errors import CrfkitError
from crfkit.kernels import loss
from crfkit.kernels.aside import (
    Aside,
    compile_aside,
    compile_meanwhile,
    compile_now,
    drop_queued,
)
from crfkit.kernels.blocks import partition_blocks, run_blocks, thread_count
from crfkit.kernels.lattice import (
    FACTOR_RANGE,
    dense_factors,
    exp_range,
    factor_bound,
    max_abs,
)
from crfkit.kernels.runs import dense_first, fill_sparse_runs, runs_size, standin_runs
from crfkit.space import DataArrays, Dataset, FeatureSpace
from crfkit.vectors import dot


class Objective:
    """Callable ``f = objective(w, g)`` over one dataset; owns all work buffers.

    The sequences are split into fixed blocks (:func:`partition_blocks`), each
    filling a gradient row of ``G_blocks`` and its ``out`` row (log-sum,
    token errors, sequence errors). Blocks run in waves of one per thread,
    each wave's rows added to the gradient in block order: the sum order (and
    the model) does not depend on the thread count, and only one gradient row
    per thread is held (16 rows were 58 MB on CoNLL-2000). ``normalisation``
    (``config.NORM_*``) picks the loss kernel.
    """

    def __init__(self, space: FeatureSpace, data: Dataset, empirical: np.ndarray,
                 rho2: float, normalisation: int = config.NORM_GLOBAL,
                 frozen: np.ndarray | None = None, *,
                 block_ptr: np.ndarray | None = None) -> None:
        """``frozen``: weight indices held at their start value (zero gradient);
        ``block_ptr``: the block partition to use instead of :func:`objective_blocks`
        of the data (a part of a larger corpus computing that corpus's blocks,
        :mod:`crfkit.dask`)."""
        if normalisation == config.NORM_MAXENT and (space.has_trans or space.n_b):
            raise ValueError("a maxent feature space must have no label-pair features")
        if len(data.labels) != data.n_tokens:
            raise ValueError("training data must carry gold labels")
        self.normalisation = normalisation
        self.overflow = overflow_message(normalisation)
        self.space = space
        self.data = data
        self.empirical = empirical
        self.rho2 = float(rho2)
        self.frozen = frozen
        self.block_ptr = (objective_blocks(data.lengths, space.n_weights) if block_ptr is None
                          else block_ptr)
        n_blocks = len(self.block_ptr) - 1
        self.wave = max(1, min(thread_count(), n_blocks))
        # The most frequent observations get dense rows (kernels.lattice.dense_rows).
        self.n_dense = config.dense_observations(space.n_obs, space.n_labels)
        self.G_blocks = np.empty((self.wave, space.n_weights))
        self.out = np.empty((n_blocks, 3))
        self.token_errors = 0
        self.sequence_errors = 0
        self.evaluations = 0
        self.space_arrays = space.arrays()
        # The most features a token has per label (bounds unigram_factors' products);
        # valued scores are always summed and exponentiated whole.
        self.max_obs = (np.inf if data.tok_val is not None
                        else float(np.diff(data.tok_ptr).max()) if data.n_tokens else 0.0)
        self.factor_tables: tuple[np.ndarray, np.ndarray] | None = None
        # each thread's share of the weights to exponentiate
        self.factor_cuts = np.linspace(0, space.n_u, self.wave + 1).astype(np.int64)
        self.dense_scratch: dict[int, np.ndarray] = {}  # per thread (dense_expectations)
        self.longest = int(np.diff(data.seq_ptr).max(initial=0))  # tokens
        self.work_scratch: dict[int, tuple] = {}  # per thread (work_buffers)

    def shared(self, w: np.ndarray) -> tuple:
        """What every block reads at ``w`` (computed once per evaluation)."""
        s = self.space
        if self.normalisation != config.NORM_GLOBAL:
            return ()
        factors = self.factors(w)
        # the dense rows of weights are read only when the scores are summed
        summed = self.data.tok_val is not None or len(factors[0]) == 0
        scores = loss.shared_scores(w, s.u_ptr, s.u_lab, s.n_u, s.n_b, s.trans_offset,
                                    s.has_trans, s.n_labels, self.n_dense if summed else 0)
        _ = self.runs  # built here, before the blocks' threads read them
        return (*scores, *factors)

    @cached_property
    def data_arrays(self) -> DataArrays:
        """The corpus as the kernels read it (:meth:`kernel_arrays`), made when first asked."""
        return self.kernel_arrays()

    def kernel_arrays(self) -> DataArrays:
        """The corpus as the kernels read it: where :meth:`reads_dense_first`, with a copy
        of the occurrences that has each token's dense rows first
        (:func:`crfkit.kernels.runs.dense_first`); the corpus keeps its order."""
        d = self.data
        if not self.reads_dense_first():
            return d.arrays()
        ordered = np.empty_like(d.tok_obs)
        dense_first(d.tok_ptr, d.tok_obs, self.n_dense, ordered)
        return d.arrays()._replace(tok_obs=ordered)

    def reads_dense_first(self) -> bool:
        """Whether the loss kernel can read runs (:mod:`crfkit.kernels.runs`: a binary
        corpus, one transition matrix, fewer labels than the grouped kernel's), and so
        reads each token's dense rows first; decided before the runs are counted, so
        that the kernel reading none gives the same bits. A subclass with kernels of its
        own that read the corpus's order says no."""
        s, d = self.space, self.data
        return (self.normalisation == config.NORM_GLOBAL and d.tok_val is None
                and s.n_b == 0 and 0 < self.n_dense and s.n_labels < loss.GROUPED_LABELS)

    @cached_property
    def runs(self) -> tuple | None:
        """The CRF kernel's sparse features in reading order (:mod:`crfkit.kernels.runs`),
        built when first asked (a subclass whose kernels read none never asks); None for a
        valued corpus, one whose tokens' transitions vary, or one whose kernel does not
        read dense rows first (:meth:`reads_dense_first`: the kernels that read no runs)."""
        d, s = self.data_arrays, self.space
        if self._runs_size is None:
            return None
        return fill_sparse_runs(d.seq_ptr, d.tok_ptr, d.tok_obs, s.u_ptr, s.u_lab, self.n_dense,
                                self._runs_size)

    @cached_property
    def _runs_size(self) -> int | None:
        """How many pairs the runs hold, None without runs (:func:`runs_size`); none either
        over occurrences whose dense rows do not come first, which the runs kernel needs."""
        d, s = self.data, self.space
        if d.tok_val is not None or s.n_b > 0:
            return None
        if self.n_dense > 0 and not self.reads_dense_first():
            return None
        return runs_size(d.tok_obs, s.u_ptr, s.u_lab, self.n_dense)

    def _runs_or_standin(self) -> tuple | None:
        """The runs if built, else, if there will be runs, empty runs of their types: a
        first run compiles the kernel aside while this process fills them."""
        if "runs" in vars(self) or self._runs_size is None:
            return self.runs
        return standin_runs(self.space.u_lab)

    def compile_loss_aside(self, w: np.ndarray, g: np.ndarray) -> Aside | None:
        """On a first run, the CRF loss kernel is compiled in a child process while this one
        compiles the kernel's last callees, the shared scores and the kernels that sum
        the blocks (:mod:`crfkit.kernels.aside`): the kernel's arguments for an empty
        block, with stand-ins of the shared scores' and the runs' types."""
        if self.normalisation != config.NORM_GLOBAL:
            drop_queued()
            return None
        s = self.space
        # the factored version: all but valued corpora (and weights too large, which a
        # run rarely starts from)
        kernel, read = loss.crf_loss_kernel(s.n_b > 0, self.data.tok_val is None,
                                            self._runs_or_standin(), s.n_labels)
        # queued before the fork, for the child too (dropped if no child starts)
        compile_meanwhile([(loss.add_blocks, (self.G_blocks, True, g)),
                           (loss.finish_gradient, (self.empirical, w, self.rho2, g)),
                           (dot, (w, self.empirical))])
        aside = compile_aside(kernel, (w, self.space_arrays, self.data_arrays, s.n_labels, 0, 0,
                                       *standin_shared(s.n_labels), self.dense_expectations(),
                                       self.G_blocks[0], self.out[0], self.data.tok_val, read,
                                       self.work_buffers()))
        if aside is not None:
            compile_now(loss.last_callees(self.space_arrays, self.data_arrays, s.n_labels,
                                          self.dense_expectations(), self.G_blocks[0],
                                          self.data.tok_val, read))
        return aside

    def factors(self, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The exponentiated unigram weights (sparse, and the dense rows') with which the
        kernels multiply each token's scores out of factors
        (:func:`crfkit.kernels.lattice.unigram_factors`), or two empty tables: they then
        sum and exponentiate the scores (valued corpora; weights so large that a product
        could leave exp(+-FACTOR_RANGE)). Exponentiated on all threads."""
        s = self.space
        if not self.factors_fit(w):
            return np.empty(0), np.empty((0, s.n_labels))
        if self.factor_tables is None:  # allocated once: no page faults per evaluation
            self.factor_tables = np.empty(s.n_u), np.empty((self.n_dense, s.n_labels))
        expW, expWd = self.factor_tables
        cuts = self.factor_cuts
        run_blocks(lambda i: exp_range(w, expW, cuts[i], cuts[i + 1]), self.wave)
        dense_factors(expW, s.u_ptr, s.u_lab, expWd)
        return expW, expWd

    def factors_fit(self, w: np.ndarray) -> bool:
        """Whether every token's product of factors stays within exp(+-FACTOR_RANGE) at
        ``w``: the quick bound first, the per-token one (:func:`factor_bound`) only when
        it fails, as at a first line search's long trial step, where summing the scores
        would cost half an evaluation more. Never for valued corpora."""
        s, d = self.space, self.data
        if max_abs(w, s.n_u) * self.max_obs < FACTOR_RANGE:  # (inf * 0 is NaN: no)
            return True
        if not np.isfinite(self.max_obs):
            return False
        return bool(factor_bound(w, s.u_ptr, d.tok_ptr, d.tok_obs,
                                 np.empty(s.n_obs)) < FACTOR_RANGE)

    def _loss_block(self, w: np.ndarray, shared: tuple, s0: int, s1: int, G: np.ndarray,
                    out: np.ndarray) -> None:
        """Fill ``G`` (a gradient row) and ``out`` (3 values) for sequences s0..s1-1 at ``w``."""
        s = self.space
        if self.normalisation == config.NORM_GLOBAL:
            loss.crf_loss_block(w, self.space_arrays, self.data_arrays, s.n_b > 0, s.n_labels,
                                s0, s1, *shared, self.dense_expectations(), G, out,
                                self.data.tok_val, self.runs, self.work_buffers())
        else:
            loss.local_loss_block(w, self.space_arrays, self.data_arrays,
                                  self.normalisation == config.NORM_MEMM, s.n_labels, s0, s1,
                                  G, out, self.data.tok_val)

    def dense_expectations(self) -> np.ndarray:
        """The calling thread's buffer for the dense rows' expectations (the kernel zeroes
        it): one per thread, kept, not one per block (a new 700 KB block of memory per
        block of sequences cost ~4,000 page faults an evaluation on CoNLL-2000)."""
        thread = threading.get_ident()
        if thread not in self.dense_scratch:
            self.dense_scratch[thread] = np.empty((self.n_dense, self.space.n_labels))
        return self.dense_scratch[thread]

    def work_buffers(self) -> tuple:
        """The calling thread's work buffers of the CRF loss kernel
        (:func:`crfkit.kernels.loss.block_buffers`), sized for the longest sequence."""
        thread = threading.get_ident()
        if thread not in self.work_scratch:
            self.work_scratch[thread] = loss.block_buffers(self.longest, self.space.n_labels,
                                                           self.space.n_b > 0)
        return self.work_scratch[thread]

    def fill_blocks(self, w: np.ndarray, shared: tuple, first: int, last: int,
                    G: np.ndarray) -> None:
        """Blocks ``first..last-1`` at ``w`` on threads: gradient rows into ``G[0..]``,
        their ``out`` rows into ``self.out[first..last-1]``."""
        ptr = self.block_ptr

        def block(i: int) -> None:
            self._loss_block(w, shared, int(ptr[first + i]), int(ptr[first + i + 1]), G[i],
                             self.out[first + i])

        run_blocks(block, last - first)

    def __call__(self, w: np.ndarray, g: np.ndarray) -> float:
        aside = self.compile_loss_aside(w, g) if self.evaluations == 0 else None
        shared = self.shared(w)
        if aside is not None:
            aside.wait()
        n_blocks = len(self.out)
        for first in range(0, n_blocks, self.wave):
            last = min(first + self.wave, n_blocks)
            self.fill_blocks(w, shared, first, last, self.G_blocks)
            loss.add_blocks(self.G_blocks[:last - first], first == 0, g)
        f, self.token_errors, self.sequence_errors = finish(
            w, g, self.out, self.empirical, self.rho2, self.overflow)
        if self.frozen is not None:
            g[self.frozen] = 0.0
        self.evaluations += 1
        return f


def standin_shared(n_labels: int) -> tuple:
    """Empty arrays of the types of :meth:`Objective.shared`'s values for the CRF (the
    transitions, their exponentials, the shift, the bigram factors, the dense rows, the
    factor tables), to compile the loss kernel before they are computed."""
    L = n_labels
    return (np.empty((L, L)), np.empty((2, L, L)), 0.0, np.empty(0), np.empty((0, L)),
            np.empty(0), np.empty((0, L)))


def objective_blocks(lengths: np.ndarray, n_weights: int) -> np.ndarray:
    """The fixed block partition of a corpus (sequence lengths) for a feature space
    of ``n_weights``: :data:`config.N_BLOCKS` blocks, fewer when their gradient rows
    would pass :data:`config.MAX_BLOCK_BUFFER_BYTES` (or for tiny corpora)."""
    max_blocks = max(1, config.MAX_BLOCK_BUFFER_BYTES // max(1, 8 * n_weights))
    return partition_blocks(lengths, min(config.N_BLOCKS, max_blocks))


def overflow_message(normalisation: int) -> str:
    return ("numerical overflow in forward-backward" if normalisation == config.NORM_GLOBAL
            else "numerical overflow in the local softmax")


def finish(w: np.ndarray, g: np.ndarray, out: np.ndarray, empirical: np.ndarray, rho2: float,
           overflow: str) -> tuple[float, int, int]:
    """The objective's last step, once ``g`` holds the block gradients summed in block order
    and ``out`` every block's (log-sum, token errors, sequence errors) in block order:
    adds the counts and the L2 term to ``g``; returns (f, token errors, sequence errors).
    Shared with the distributed objective (:mod:`crfkit.dask`), so both give the same bits."""
    log_z = float(np.sum(out[:, 0]))
    if not np.isfinite(log_z):
        raise CrfkitError(f"{overflow}: the weights diverged (try a larger -2/--rho2)")
    loss.finish_gradient(empirical, w, rho2, g)
    f = log_z - dot(w, empirical) + 0.5 * rho2 * dot(w, w)
    return f, int(out[:, 1].sum()), int(out[:, 2].sum())
