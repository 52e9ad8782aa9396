"""SGD-L1 epochs of a latent-dynamic model: the chain's epoch with a clamped pass.

As :func:`crfkit.kernels.epochs.sgd_epoch`, one sequence at a time: the chain's
forward-backward over every state adds the free expectations to G; where the chain then
subtracts the gold path's counts, the clamped pass
(:func:`crfkit.structures.latent.clamped.clamped_sequence`) subtracts the expectations
over the states the annotation allows. The step and its cumulative L1 penalty are the
chain's (Tsuruoka et al. 2009), on the weights the sequence touches.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from crfkit.config import JIT
from crfkit.errors import InputError
from crfkit.kernels.epochs import EpochBuffers, max_touched, touched_weights
from crfkit.kernels.gradient import sequence_gradient, work_buffers
from crfkit.kernels.lattice import load_transitions, longest_sequence, transition_buffer
from crfkit.kernels.sgdfused import close_epoch, next_sequence, step
from crfkit.space import Dataset, FeatureSpace
from crfkit.structures.latent.clamped import clamped_buffers, clamped_sequence


@njit(**JIT)
def latent_sgd_epoch(W, order, space, data, allowed, K, S, eta0, alpha, rho1, seen, q, G,
                     touched, state, out):
    """One SGD-L1 pass over the sequences in ``order`` (W, q, state updated in place; G all
    zeros, left so). out = [loss, token errors (not counted: 0), sequence errors (0),
    1 if a sequence overflowed, the first sequence with no allowed path or -1]."""
    seq_ptr, tok_ptr, tok_obs, labels = data
    trans_offset, has_trans = space[6], space[7]
    trans = np.empty((S, S))
    exp_trans = transition_buffer(S)
    Tmax = longest_sequence(seq_ptr, np.int64(0), len(seq_ptr) - 1)
    work = work_buffers(Tmax, S, np.bool_(False), exp_trans)
    buf = clamped_buffers(Tmax, S)
    none2, none1 = np.empty((0, S)), np.empty(0)
    u, l1, loss, eta = state[0], rho1 > 0.0, 0.0, eta0
    out[4] = -1.0
    for i in range(len(order)):
        t0, T, eta, u = next_sequence(order, i, seq_ptr, eta0, alpha, rho1, seen, u)
        if T == 0:
            continue
        shift = load_transitions(W, trans_offset, has_trans, S, trans, exp_trans)
        logz = sequence_gradient(W, space, tok_ptr, tok_obs, None, t0, T, S, False, trans,
                                 exp_trans, shift, none1, none2, none2, work, G, none1,
                                 none2)[1] + shift * (T - 1)
        clamped = clamped_sequence(W, space[0], space[1], trans_offset, has_trans, S, K,
                                   tok_ptr, tok_obs, allowed, exp_trans[0], shift, t0, T,
                                   True, -1.0, G, buf)
        if clamped != clamped:
            out[4] = order[i]
            break
        if not np.isfinite(logz - clamped):
            out[3] = 1.0
            break
        loss += logz - clamped
        for n in range(touched_weights(space, tok_ptr, tok_obs, S, t0, T, touched)):
            step(W, G, q, touched[n], eta, u, l1)
    close_epoch(state, u, out, loss, 0, 0)
    return eta


class LatentSgdEpochs(EpochBuffers):
    """``run(W, order, seen, eta0, alpha, rho1, q, state) -> (loss, token errors, sequence
    errors, overflowed)``: one SGD-L1 epoch (as :class:`crfkit.kernels.epochs.SgdEpochs`)."""

    n_out = 5

    def __init__(self, space: FeatureSpace, data: Dataset, allowed: np.ndarray, K: int,
                 lines: list[int]) -> None:
        super().__init__(space, data)
        self.allowed = np.ascontiguousarray(allowed, dtype=np.bool_)
        self.K, self.lines = K, lines
        self.touched = np.empty(max_touched(self.space, *self.data[:3], self.L), dtype=np.int64)

    def __call__(self, W: np.ndarray, order: np.ndarray, seen: int, eta0: float, alpha: float,
                 rho1: float, q: np.ndarray, state: np.ndarray) -> tuple[float, int, int, bool]:
        latent_sgd_epoch(W, order, self.space, self.data, self.allowed, self.K, self.L,
                         float(eta0), float(alpha), float(rho1), seen, q, self.G, self.touched,
                         state, self.out)
        s = int(self.out[4])
        if s >= 0:
            raise InputError(f"training sequence {s + 1} (line {self.lines[s]}): its labels "
                             f"allow no path")
        out = self.out
        return float(out[0]), -1, -1, bool(out[3])
