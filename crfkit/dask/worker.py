"""What runs on the Dask workers: read and count a shard, encode it, hold a part, compute.

Each function is one Dask task; its inputs and outputs are plain objects
(numpy arrays, dataclasses), pickled by Dask between processes. The big
ones (a counted shard, an encoded shard, a part) stay in the memory of the
worker that made them and only their small summaries travel to the driver.
A task never changes its inputs in place: Dask may run it again (after a
worker was lost) on the same objects.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from crfkit.dask.shard_vocab import CountedShard, ShardCounts, ShardPairs, count_shard, shard_pairs
from crfkit.dask.shards import Shard, ShardReport, read_shard
from crfkit.features.extract import token_lists
from crfkit.features.patterns import Pattern
from crfkit.io.reader import Sequence
from crfkit.kernels import loss
from crfkit.kernels.blocks import set_thread_count
from crfkit.kernels.objective import Objective
from crfkit.space import Dataset, FeatureSpace


def use_worker_threads() -> int:
    """Give the kernels as many threads as the worker has (``dask worker --nthreads``)."""
    try:
        from distributed import get_worker

        threads = get_worker().state.nthreads
    except (ImportError, ValueError):  # not on a worker (tests call tasks directly)
        threads = 1
    set_thread_count(threads)
    return threads


def as_sequences(partition: list) -> tuple[list[Sequence], ShardReport]:
    """A bag partition's items (:class:`Sequence` or lists of rows) as sequences, checked."""
    report = ShardReport()
    sequences = []
    for item in partition:
        if not isinstance(item, Sequence) and not all(_is_row(row) for row in item):
            report.error = (f"sequence {len(sequences) + 1} of a partition: a bag item must "
                            "be a sequence of rows (lists of strings, the label last), not "
                            "feature dicts (CRFsuite's format is not available with Dask)",
                            None)
            break
        seq = item if isinstance(item, Sequence) else Sequence(
            [list(row) for row in item], list(range(1, len(item) + 1)))
        for row in seq.rows:
            if not report.columns:
                report.columns = len(row)
            if len(row) != report.columns and report.error is None:
                report.error = (f"sequence {len(sequences) + 1} of a partition: expected "
                                f"{report.columns} columns, found {len(row)}", None)
        if seq.rows:
            sequences.append(seq)
            report.n_sequences += 1
            report.n_tokens += len(seq.rows)
    return sequences, report


def _is_row(row: object) -> bool:
    return isinstance(row, (list, tuple)) and all(isinstance(x, str) for x in row)


@dataclass
class Counted:
    shard: CountedShard | None  # None when the shard is empty or bad
    report: ShardReport


def count_task(source: Shard | list, patterns: list[Pattern], encoding: str, sep: str
               ) -> Counted:
    """Read (a file shard) or take (a bag partition) the sequences, and count them."""
    if isinstance(source, Shard):
        sequences, report = read_shard(source, encoding=encoding, sep=sep, min_columns=2)
    else:
        sequences, report = as_sequences(source)
        if report.columns == 1 and report.error is None:
            report.error = ("training data needs token columns and a label column, found 1 "
                            "column", None)
    if report.error is not None or not sequences:
        return Counted(None, report)
    return Counted(count_shard(patterns, sequences), report)


def summary_task(counted: Counted) -> tuple[ShardCounts | None, ShardReport]:
    return (None if counted.shard is None else counted.shard.counts), counted.report


@dataclass
class Encoded:
    """A shard under the corpus-wide vocabulary: the kernels' arrays and its features."""

    lengths: np.ndarray
    tok_ptr: np.ndarray
    tok_obs: np.ndarray
    labels: np.ndarray
    pairs: ShardPairs | None


def encode_task(counted: Counted, obs_map: np.ndarray, label_map: np.ndarray,
                unigram: np.ndarray, bigram: np.ndarray, n_obs: int, n_labels: int) -> Encoded:
    """Renumber a counted shard into vocabulary ids; collect its features."""
    from crfkit.features.intern import renumber  # Numba: training only

    shard = counted.shard
    if shard is None:
        empty = np.zeros(0, dtype=np.int32)
        return Encoded(np.zeros(0, dtype=np.int64), np.zeros(1, dtype=np.int64), empty, empty,
                       None)
    obs = np.array(shard.obs, order="F", copy=True)  # the counted shard stays as it was
    renumber(obs, obs_map, shard.offsets)
    y = label_map[shard.y]
    tok_ptr, tok_obs = token_lists(obs)
    pairs = shard_pairs(obs, y, shard.first_token, unigram, bigram, n_obs, n_labels)
    return Encoded(shard.counts.lengths, tok_ptr, tok_obs, y, pairs)


def pairs_task(encoded: Encoded) -> ShardPairs | None:
    return encoded.pairs


def slice_data(pieces: list[Encoded], ranges: list[tuple[int, int]]) -> Dataset:
    """Sequences ``lo:hi`` of each piece, concatenated into one dataset."""
    lengths, ptrs, obs, labels = [], [], [], []
    base = 0
    for piece, (lo, hi) in zip(pieces, ranges, strict=True):
        starts = np.concatenate([[0], np.cumsum(piece.lengths)])
        t0, t1 = int(starts[lo]), int(starts[hi])
        lengths.append(piece.lengths[lo:hi])
        ptr = piece.tok_ptr[t0:t1 + 1]
        ptrs.append(ptr[:-1] - ptr[0] + base)
        base += int(ptr[-1] - ptr[0])
        obs.append(piece.tok_obs[ptr[0]:ptr[-1]])
        labels.append(piece.labels[t0:t1])
    seq_ptr = np.concatenate([[0], np.cumsum(np.concatenate(lengths))]).astype(np.int64)
    tok_ptr = np.concatenate(ptrs + [np.array([base])]).astype(np.int64)
    return Dataset(seq_ptr=seq_ptr, tok_ptr=tok_ptr,
                   tok_obs=np.ascontiguousarray(np.concatenate(obs), dtype=np.int32),
                   labels=np.ascontiguousarray(np.concatenate(labels), dtype=np.int32))


@dataclass
class Part:
    """A run of consecutive blocks of the corpus, held by one worker for the whole training."""

    objective: Objective
    data: Dataset
    first_block: int


def part_task(space: FeatureSpace, pieces: list[Encoded], ranges: list[tuple[int, int]],
              block_ptr: np.ndarray, first_block: int, normalisation: int) -> Part:
    """Assemble a part from slices of encoded shards; its blocks are the corpus's blocks."""
    data = slice_data(pieces, ranges)
    objective = Objective(space, data, np.zeros(0), 0.0, normalisation, block_ptr=block_ptr)
    objective.G_blocks = np.empty((0, 0))  # the part fills its own rows (rows_task)
    return Part(objective, data, first_block)


@dataclass
class Rows:
    """A part's block gradient rows and ``out`` rows at one point, and the compute time."""

    G: np.ndarray
    out: np.ndarray
    seconds: float


def rows_task(part: Part, w: np.ndarray) -> Rows:
    """Every block of the part at ``w``: one gradient row each (summed later, in order)."""
    started = time.perf_counter()
    use_worker_threads()
    objective = part.objective
    n_blocks = len(objective.out)
    G = np.empty((n_blocks, len(w)))
    objective.fill_blocks(w, objective.shared(w), 0, n_blocks, G)
    return Rows(G, objective.out.copy(), time.perf_counter() - started)


@dataclass
class Fold:
    """The gradient rows of every block so far, summed in block order, and their ``out``."""

    g: np.ndarray
    outs: list[np.ndarray]
    seconds: list[float]


def fold_task(previous: Fold | None, rows: Rows) -> Fold:
    """Add a part's rows, in block order, to the sum of the parts before it: the same
    additions in the same order as :class:`Objective` on one machine."""
    if previous is None:
        g = np.empty(rows.G.shape[1])
        loss.add_blocks(rows.G, True, g)
        return Fold(g, [rows.out], [rows.seconds])
    g = previous.g.copy()
    loss.add_blocks(rows.G, False, g)
    return Fold(g, previous.outs + [rows.out], previous.seconds + [rows.seconds])

