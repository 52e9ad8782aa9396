"""Summing the blocks' gradient rows (crfkit.kernels.loss)."""

from __future__ import annotations

import numpy as np
import pytest

from crfkit.kernels.loss import add_blocks, add_blocks_range


@pytest.mark.parametrize("fresh", [True, False])
def test_the_weights_summed_in_shares_are_the_bits_of_the_whole_sum(fresh):
    """Threads may share out a wave's sum (Objective.add_wave): each share adds the rows in
    the same order, so the shares give the whole sum's bits, and leave the rest alone."""
    rng = np.random.default_rng(7)
    rows = rng.normal(size=(3, 101)) * np.exp(rng.normal(size=(3, 101)) * 10)
    start = rng.normal(size=101)
    whole = start.copy()
    add_blocks(rows, fresh, whole)
    shared = start.copy()
    cuts = [0, 13, 64, 101]
    for lo, hi in zip(cuts[:-1], cuts[1:], strict=True):
        add_blocks_range(rows, fresh, shared, lo, hi)
    assert np.array_equal(shared, whole)
    part = start.copy()
    add_blocks_range(rows, fresh, part, 13, 64)
    assert np.array_equal(part[13:64], whole[13:64])
    assert np.array_equal(part[:13], start[:13]) and np.array_equal(part[64:], start[64:])
    want = (0.0 if fresh else start) + rows[0] + rows[1] + rows[2]
    np.testing.assert_allclose(whole, want, rtol=1e-12)
