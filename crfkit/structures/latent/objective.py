"""The latent objective: the marginal likelihood of the annotation, summed over states.

    f(w) = sum_s [log Z(x_s) - log Z(x_s, y_s)] + rho2/2 |w|^2
    g(w) = E_free[f] - E_clamped[f] + rho2 w

The free pass is the chain's objective run on the state-level space with no gold counts
(its kernels do not know states from labels); the clamped pass
(:mod:`crfkit.structures.latent.clamped`) replaces the constant gold counts of a fully
observed chain. Non-convex for K > 1, and for K = 1 once a token allows several labels
(a difference of two log-partition functions; Tsuboi et al.).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from crfkit import config
from crfkit.errors import InputError
from crfkit.kernels.blocks import run_blocks, thread_count
from crfkit.kernels.flavour import read_only
from crfkit.kernels.objective import Objective, objective_blocks
from crfkit.space import Dataset, FeatureSpace


@dataclass
class LatentPart:
    """What the latent structure adds to a corpus: the labels each token allows
    (n_tokens, L), the states per label and each sequence's first line (error lines);
    ``start``: the states (n_tokens, L*K) the structured start allows
    (:func:`crfkit.structures.latent.states.start_mask`), which its first run clamps as
    ``allowed`` with K = 1 (one state a column)."""

    allowed: np.ndarray
    K: int
    lines: list[int]
    start: np.ndarray | None = None


class LatentObjective:
    """Callable ``f = objective(w, g)`` over the corpus ``data`` and its ``part``."""

    def __init__(self, space: FeatureSpace, data: Dataset, part: LatentPart, rho2: float,
                 frozen: np.ndarray | None = None) -> None:
        free_data = Dataset(data.seq_ptr, data.tok_ptr, data.tok_obs,
                            np.full(data.n_tokens, -1, dtype=np.int32))
        self.free = Objective(space, free_data, np.zeros(space.n_weights), rho2,
                              config.NORM_GLOBAL)
        self.space, self.data, self.K = space, data, part.K
        self.allowed = np.ascontiguousarray(part.allowed, dtype=np.bool_)
        self.frozen = frozen
        self.lines = part.lines
        self.block_ptr = objective_blocks(data.lengths, space.n_weights)
        n_blocks = len(self.block_ptr) - 1
        self.wave = max(1, min(thread_count(), n_blocks))
        self.G_blocks = np.empty((self.wave, space.n_weights))
        self.out = np.empty((n_blocks, 2))
        self.token_errors = -1  # the free pass's posterior over states says nothing of labels
        self.sequence_errors = -1
        self.evaluations = 0

    def clamped(self, w: np.ndarray, g: np.ndarray) -> float:
        """g -= the clamped expectations; returns the sum of log Z(x, y)."""
        from crfkit.structures.latent.clamped import clamped_block

        s, d = self.space, self.data
        E, shift = exp_transitions(s, w)
        # read-only, as a loaded model's are: labelling (label_search) shares the version
        w_ro, u_ptr, u_lab = read_only(w), read_only(s.u_ptr), read_only(s.u_lab)
        ptr = self.block_ptr
        for first in range(0, len(self.out), self.wave):
            last = min(first + self.wave, len(self.out))

            def block(i: int, first: int = first) -> None:
                b = first + i
                clamped_block(w_ro, u_ptr, u_lab, s.trans_offset, bool(s.has_trans),
                              s.n_labels, self.K, d.seq_ptr, d.tok_ptr, d.tok_obs,
                              self.allowed, E, shift, int(ptr[b]), int(ptr[b + 1]),
                              True, self.G_blocks[i], self.out[b])

            run_blocks(block, last - first)
            for i in range(last - first):
                self.no_path(int(self.out[first + i, 1]))
                g -= self.G_blocks[i]
        return float(np.sum(self.out[:, 0]))

    def no_path(self, s: int) -> None:
        if s >= 0:
            raise InputError(f"training sequence {s + 1} (line {self.lines[s]}): its labels "
                             f"allow no path")

    def __call__(self, w: np.ndarray, g: np.ndarray) -> float:
        f = self.free(w, g) - self.clamped(w, g)
        if self.frozen is not None:
            g[self.frozen] = 0.0
        self.evaluations += 1
        return f


def exp_transitions(space: FeatureSpace, w: np.ndarray) -> tuple[np.ndarray, float]:
    """exp(trans - max) over the state pairs, and the max (ones and 0 without transitions)."""
    S = space.n_labels
    if not space.has_trans:
        return np.ones((S, S)), 0.0
    trans = w[space.trans_offset:space.trans_offset + S * S].reshape(S, S)
    shift = float(trans.max())
    return np.exp(trans - shift), shift
