"""Read-only views: training and labelling hand the decoder one array flavour."""

from __future__ import annotations

import numpy as np

from crfkit.config import NORM_GLOBAL
from crfkit.kernels.bestpath import Weights
from crfkit.kernels.decoder import decode, decode_block
from crfkit.kernels.flavour import read_only, read_only_space
from tests.helpers import valued_problem


def test_read_only_views_share_the_data_and_leave_the_original_writable():
    array = np.arange(4.0)
    view = read_only(array)
    assert not view.flags.writeable and np.shares_memory(view, array)
    assert array.flags.writeable
    assert read_only(view) is view and read_only(None) is None
    space, _, _ = valued_problem(0, bigrams=True, trans=True)
    frozen = read_only_space(space.arrays())
    assert not any(a.flags.writeable for a in frozen[:5])
    assert frozen[5:] == space.arrays()[5:]


def test_writable_and_read_only_weights_decode_with_one_compiled_decoder():
    """A loaded model's weights are read-only, training's writable: one signature serves both."""
    space, data, W = valued_problem(3, bigrams=True, trans=True)
    loaded = W.copy()
    loaded.flags.writeable = False
    trained = decode(Weights(space, W, NORM_GLOBAL), data, nbest=2)
    n_signatures = len(decode_block.signatures)
    labelled = decode(Weights(space, loaded, NORM_GLOBAL), data, nbest=2)
    assert len(decode_block.signatures) == n_signatures
    assert np.array_equal(trained.paths, labelled.paths)
    assert np.array_equal(trained.scores, labelled.scores)
