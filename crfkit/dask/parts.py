"""The parts of a distributed corpus: how each is made, and making lost ones again.

A part (a run of consecutive blocks, :func:`crfkit.dask.worker.part_task`)
is assembled from slices of encoded shards, which are made from counted
shards, which are read from their source. Once a part exists, Dask forgets
the tasks that made it (their results are released to save the workers'
memory), so it cannot remake a part lost with its worker. The driver can:
it keeps each part's recipe (which shards, which slices, the maps from the
shards' local ids to the vocabulary's) and submits the chain again for the
lost parts only. The remade part holds the same numbers, so training goes
on as if nothing happened.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from crfkit.dask import worker
from crfkit.space import FeatureSpace

LIVE = ("finished", "pending")  # a part Dask holds, or is still making


@dataclass(frozen=True)
class PartSpec:
    """Which slices of which shards (by index in the counted list) make one part."""

    shards: tuple[int, ...]
    ranges: tuple[tuple[int, int], ...]
    block_ptr: np.ndarray  # the part's blocks, relative to its first sequence
    first_block: int


def plan_parts(shard_seqs: list[int], block_ptr: np.ndarray, workers: int) -> list[PartSpec]:
    """One part per worker (at most one per block): consecutive blocks of about equal
    token count, each covering slices of the shards it straddles."""
    n_blocks = len(block_ptr) - 1
    n_parts = max(1, min(workers, n_blocks))
    cuts = np.linspace(0, n_blocks, n_parts + 1).round().astype(int)
    shard_start = np.concatenate([[0], np.cumsum(shard_seqs)])
    specs = []
    for b0, b1 in zip(cuts[:-1], cuts[1:], strict=True):
        s0, s1 = int(block_ptr[b0]), int(block_ptr[b1])
        shards, ranges = [], []
        for k in range(len(shard_seqs)):
            lo, hi = max(s0, shard_start[k]), min(s1, shard_start[k + 1])
            if lo < hi:
                shards.append(k)
                ranges.append((int(lo - shard_start[k]), int(hi - shard_start[k])))
        specs.append(PartSpec(tuple(shards), tuple(ranges), block_ptr[b0:b1 + 1] - s0,
                              int(b0)))
    return specs


@dataclass
class Recipe:
    """Everything the driver needs to submit a part's chain again, from its sources."""

    sources: list  # the counted shards' sources (file shards or bag partition futures)
    patterns: list
    encoding: str
    sep: str
    obs_maps: list[np.ndarray]
    label_maps: list[np.ndarray]
    kinds: tuple  # unigram, bigram, n_obs, n_labels: encode_task's last arguments
    space: FeatureSpace
    normalisation: int
    specs: list[PartSpec]


def submit_part(client: Any, spec: PartSpec, space_future: Any, encoded: list,
                normalisation: int) -> Any:
    """The part of ``spec`` from the encoded shards (futures, indexed as counted)."""
    return client.submit(worker.part_task, space_future, [encoded[k] for k in spec.shards],
                         list(spec.ranges), spec.block_ptr, spec.first_block, normalisation,
                         pure=False)


def remake_lost(client: Any, recipe: Recipe, parts: list, scatter: Callable[[Any], Any]
                ) -> int:
    """Submit again, from their sources, the parts Dask lost; return how many. ``scatter``
    puts data on a worker (:meth:`crfkit.dask.cluster.Watch.scatter`: it retries)."""
    lost = [i for i, part in enumerate(parts) if part.status not in LIVE]
    if not lost:
        return 0
    space_future = scatter(recipe.space)
    encoded: dict[int, Any] = {}
    for k in sorted({k for i in lost for k in recipe.specs[i].shards}):
        counted = client.submit(worker.count_task, recipe.sources[k], recipe.patterns,
                                recipe.encoding, recipe.sep, pure=False)
        encoded[k] = client.submit(worker.encode_task, counted, recipe.obs_maps[k],
                                   recipe.label_maps[k], *recipe.kinds, pure=False)
    for i in lost:
        parts[i] = submit_part(client, recipe.specs[i], space_future, encoded,
                               recipe.normalisation)
    return len(lost)
