"""The training objective of a second-order CRF: the first-order :class:`Objective` with
the order-2 loss kernel (:func:`crfkit.structures.order2.pair_lattice.loss_block2`) per block.

Blocks, waves and the block-order sum of gradient rows are the parent's, so
the result does not depend on the thread count either.
"""

from __future__ import annotations

import numpy as np

from crfkit import config
from crfkit.kernels.aside import Aside, drop_queued
from crfkit.kernels.lattice import dense_rows
from crfkit.kernels.objective import Objective
from crfkit.kernels.runs import NO_RUNS
from crfkit.space import DataArrays, Dataset, FeatureSpace
from crfkit.structures.order2 import lanes as lanes2
from crfkit.structures.order2 import pair_lattice as order2


class Objective2(Objective):
    """``f = objective(w, g)`` of a second-order CRF over one dataset."""

    def reads_dense_first(self) -> bool:
        """Where the lanes multiply factors, whose runs (:mod:`crfkit.kernels.runs`) read a
        token's dense rows first."""
        return self.uses_factors and self.data.tok_val is None and self.n_dense > 0

    def __init__(self, space: FeatureSpace, data: Dataset, empirical: np.ndarray,
                 rho2: float, normalisation: int = config.NORM_GLOBAL) -> None:
        if normalisation != config.NORM_GLOBAL:
            raise ValueError("second-order models are CRFs (one normalisation per sequence)")
        super().__init__(space, data, empirical, rho2, normalisation)
        self.lattice = space.lattice
        self.per_edge = space.n_g > 0
        # without observation trigrams, sequences go through the lattice in SIMD lanes
        self.edge_lists = None if self.per_edge else lanes2.edge_lists(self.lattice)
        # the lanes multiply exponentiated weights when no observation bigram reshapes a
        # token's pair scores (as the linear chain does)
        self.uses_factors = self.edge_lists is not None and space.n_b == 0

    def kernel_arrays(self) -> DataArrays:
        """The corpus as the lanes read it, each block's sequences shortest first, each
        token's dense rows first where :meth:`reads_dense_first`
        (:func:`crfkit.structures.order2.lanes.lane_order_copy`); as it is for the kernel
        of observation trigrams."""
        if self.edge_lists is None:
            return self.data.arrays()
        return lanes2.lane_order_copy(self.data.arrays(), self.block_ptr,
                                      self.n_dense if self.reads_dense_first() else 0)

    def compile_loss_aside(self, w: np.ndarray, g: np.ndarray) -> Aside | None:
        """None: the child process of a first run compiles the first order's loss kernel,
        which the second order never calls (the lane kernels compile on their first call)."""
        drop_queued()
        return None

    def shared(self, w: np.ndarray) -> tuple:
        s = self.space
        Wd = dense_rows(w, s.u_ptr, s.u_lab, self.n_dense, s.n_labels)
        if self.uses_factors:  # the runs built here, before the blocks' threads read them
            return Wd, self.factors(w), NO_RUNS if self.runs is None else self.runs
        # empty tables (exponentiate the scores), not None: one compiled lane kernel
        return Wd, (np.empty(0), np.empty((0, s.n_labels))), NO_RUNS

    def _loss_block(self, w: np.ndarray, shared: tuple, s0: int, s1: int, G: np.ndarray,
                    out: np.ndarray) -> None:
        if self.edge_lists is not None:
            lanes2.loss_block_lanes(w, self.space_arrays, self.lattice, self.edge_lists,
                                    self.data_arrays, self.space.n_labels, s0, s1, shared[0],
                                    G, out, shared[1], self.dense_expectations(), shared[2])
            return
        order2.loss_block2(w, self.space_arrays, self.lattice, self.data_arrays,
                           self.space.n_labels, s0, s1, self.per_edge, shared[0], G, out)
