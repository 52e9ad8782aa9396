"""crfkit.kernels.blocks: contiguous blocks of about equal size, each run once on the threads."""

from __future__ import annotations

import threading

import numba
import numpy as np
import pytest

from crfkit.kernels.blocks import partition_blocks, run_blocks


@pytest.fixture(params=[1, numba.config.NUMBA_NUM_THREADS])
def threads(request):
    numba.set_num_threads(request.param)
    yield request.param
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)


def test_blocks_cover_the_sequences_in_order_and_ignore_the_thread_count(threads):
    lengths = np.random.default_rng(0).integers(1, 40, size=500)
    ptr = partition_blocks(lengths, 16)
    assert ptr[0] == 0 and ptr[-1] == 500 and len(ptr) == 17
    assert np.all(np.diff(ptr) > 0)
    tokens = np.add.reduceat(lengths, ptr[:-1])
    assert tokens.max() <= tokens.sum() / 16 + lengths.max()
    assert np.array_equal(ptr, partition_blocks(lengths, 16))
    assert np.array_equal(partition_blocks(lengths[:3], 16), [0, 1, 2, 3])


def test_every_block_runs_exactly_once(threads):
    seen = []
    names = set()
    lock = threading.Lock()

    def task(blk: int) -> None:
        with lock:
            seen.append(blk)
            names.add(threading.current_thread().name)

    run_blocks(task, 50)
    assert sorted(seen) == list(range(50))
    assert len(names) <= threads
    if threads == 1:  # no pool at all: the calling thread runs the blocks in order
        assert seen == list(range(50)) and names == {threading.current_thread().name}


def test_a_failing_block_is_raised_and_no_further_block_starts(threads):
    started = []

    def task(blk: int) -> None:
        started.append(blk)
        if blk == 3:
            raise ValueError("block 3")

    with pytest.raises(ValueError, match="block 3"):
        run_blocks(task, 1000)
    assert len(started) < 100  # the other threads stopped taking blocks
