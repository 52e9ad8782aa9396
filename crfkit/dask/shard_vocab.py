"""The training vocabulary and feature space from per-shard counts, exactly as one process.

One process interns every column value, numbers observations and collects
(observation, label) features over the whole corpus in order; ids depend
on that order (string tables grow in order of first appearance, an
observation's id ranks it by count then by pattern then by first
appearance). The shards are in corpus order, so the corpus-wide order of
first appearance is the shards' own orders, concatenated, keeping the first
occurrence: merging per-shard lists that way gives the same string tables,
the same observation ids and the same features, bit for bit, whatever the
number of shards. Padding values (``_B-1``...) are interned after all corpus
values, as :meth:`crfkit.features.extract.Featurizer.components` does, by
running it on no sequence once the tables hold the corpus's values.

Nothing here imports Dask: the workers' halves (:func:`count_shard`,
:func:`shard_pairs`) and the driver's (:func:`merge_counts`,
:func:`merge_space`) are plain functions over arrays and lists.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from crfkit.features.extract import Featurizer
from crfkit.features.keys import tuple_keys
from crfkit.features.patterns import Pattern
from crfkit.io.reader import Sequence
from crfkit.space import FeatureSpace


@dataclass
class ShardCounts:
    """What the driver needs from a shard to build the vocabulary (no per-token data)."""

    tables: list[list[str]]  # each transform's string table (corpus values, then padding)
    corpus_sizes: list[int]  # how many of them are corpus values
    labels: list[str]  # gold labels in order of first appearance
    rows: list[np.ndarray]  # per listed pattern: distinct observations (local table ids)
    counts: list[np.ndarray]  # and their counts
    lengths: np.ndarray  # int64: sequence lengths


@dataclass
class CountedShard:
    """A shard on its worker after counting: per-token ids, local to the shard."""

    obs: np.ndarray  # (n_tokens, n_listed) int32: per-pattern ids (shard numbering)
    offsets: np.ndarray  # where each pattern's ids start in the shard's concatenation
    y: np.ndarray  # int32 local label ids
    first_token: np.ndarray  # bool: the token starts a sequence
    counts: ShardCounts


def count_shard(patterns: list[Pattern], sequences: list[Sequence]) -> CountedShard:
    """Intern a shard's values and observations with its own (local) tables."""
    featurizer = Featurizer(patterns)
    pos, components = featurizer.components(sequences, grow=True)
    obs, rows, counts = featurizer.intern_observations(components)
    # Every corpus value of a table occurs at some token and padding values come after
    # them, so the corpus values are the ids below the largest one seen at a token.
    tv = components.token_values
    sizes = [int(tv[k].max()) + 1 if tv.shape[1] else 0 for k in range(len(tv))]
    gold = [row[-1] for seq in sequences for row in seq.rows]
    labels = list(dict.fromkeys(gold))
    index = {label: i for i, label in enumerate(labels)}
    y = np.fromiter(map(index.__getitem__, gold), dtype=np.int32, count=len(gold))
    offsets = np.concatenate([[0], np.cumsum([len(c) for c in counts])]).astype(np.int64)
    summary = ShardCounts([t.strings for t in featurizer.tables], sizes, labels, rows, counts,
                          np.diff(pos.seq_ptr))
    return CountedShard(obs, offsets, y, pos.index == 0, summary)


@dataclass
class Vocabulary:
    """The corpus-wide vocabulary, and how each shard's local ids map to it."""

    featurizer: Featurizer  # global tables and observation vocabulary
    labels: list[str]
    obs_maps: list[np.ndarray]  # per shard: vocabulary id of each local observation (-1: cut)
    label_maps: list[np.ndarray]  # per shard: global id of each local label


def merge_counts(patterns: list[Pattern], shards: list[ShardCounts], cutoff: int
                 ) -> Vocabulary:
    """The vocabulary one process would build from the shards' corpus, in shard order."""
    featurizer = Featurizer(patterns)
    for shard in shards:
        for table, strings, size in zip(featurizer.tables, shard.tables, shard.corpus_sizes,
                                        strict=True):
            table.lookup(strings[:size], grow=True)
    featurizer.components([], grow=True)  # the padding values, after every corpus value
    table_maps = [[table.lookup(strings, grow=False)
                   for table, strings in zip(featurizer.tables, shard.tables, strict=True)]
                  for shard in shards]
    labels = list(dict.fromkeys(label for shard in shards for label in shard.labels))
    label_index = {label: i for i, label in enumerate(labels)}
    label_maps = [np.array([label_index[x] for x in shard.labels], dtype=np.int32)
                  for shard in shards]
    merged_rows, merged_counts, where = [], [], []
    for j, p in enumerate(featurizer.listed):
        transforms = featurizer.command_transform[p]
        parts = []
        for s, shard in enumerate(shards):
            rows = shard.rows[j].copy()
            for c, t in enumerate(transforms):
                rows[:, c] = table_maps[s][t][rows[:, c]]
            parts.append(rows)
        rows, counts, index = _merge_rows(p, parts, [shard.counts[j] for shard in shards])
        merged_rows.append(rows)
        merged_counts.append(counts)
        where.append(index)
    new_id, offsets = featurizer.vocab_from_counts(merged_rows, merged_counts, cutoff)
    obs_maps = [np.concatenate([new_id[offsets[j] + where[j][s]]
                                for j in range(len(featurizer.listed))] or
                               [np.zeros(0, dtype=np.int32)]).astype(np.int32)
                for s in range(len(shards))]
    return Vocabulary(featurizer, labels, obs_maps, label_maps)


def _merge_rows(pattern: int, parts: list[np.ndarray], counts: list[np.ndarray]
                ) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """One pattern's distinct rows over all shards in order of first appearance, their
    summed counts, and per shard the merged index of each of its rows."""
    rows = np.concatenate(parts) if parts else np.zeros((0, 0), dtype=np.int32)
    keys = tuple_keys(pattern, rows)
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    if not np.array_equal(rows[first[inverse]], rows):
        raise RuntimeError("64-bit observation key collision; please report it")
    order = np.argsort(first, kind="stable")
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    merged = rank[inverse]
    total = np.zeros(len(order), dtype=np.int64)
    np.add.at(total, merged, np.concatenate(counts).astype(np.int64))
    bounds = np.cumsum([0] + [len(part) for part in parts])
    index = [merged[bounds[s]:bounds[s + 1]] for s in range(len(parts))]
    return rows[first[order]], total, index


@dataclass
class ShardPairs:
    """A shard's features (keys as in :meth:`FeatureSpace.keys`) and their gold counts."""

    u_keys: np.ndarray
    u_counts: np.ndarray
    b_keys: np.ndarray
    b_counts: np.ndarray
    trans: np.ndarray  # (L*L,) label-pair counts inside sequences


def shard_pairs(obs: np.ndarray, y: np.ndarray, first_token: np.ndarray, unigram: np.ndarray,
                bigram: np.ndarray, n_obs: int, n_labels: int) -> ShardPairs:
    """The (observation, label) and (observation, label pair) features a shard contains."""
    from crfkit.features.intern import observed_pairs  # Numba: training only

    L = n_labels
    y64 = np.ascontiguousarray(y, dtype=np.int64)
    first = np.ascontiguousarray(first_token, dtype=np.bool_)
    obs = np.ascontiguousarray(obs, dtype=np.int32)
    out = []
    for columns, pairs, width in ((unigram, False, L), (bigram, True, L * L)):
        ptr, codes, counts = observed_pairs(obs, np.flatnonzero(columns), y64, first, n_obs,
                                            L, pairs)
        owner = np.repeat(np.arange(n_obs, dtype=np.int64), np.diff(ptr))
        out += [owner * width + codes, counts.astype(np.int64)]
    inner = ~first
    trans = np.bincount(y64[np.flatnonzero(inner) - 1] * L + y64[inner], minlength=L * L)
    return ShardPairs(*out, trans.astype(np.int64))


def merge_space(shards: list[ShardPairs], n_obs: int, n_labels: int, has_trans: bool
                ) -> tuple[FeatureSpace, np.ndarray]:
    """The feature space and empirical counts of the whole corpus (as
    :meth:`FeatureSpace.from_training`: features sorted by key, counts summed)."""
    merged = []
    for key, count in (("u_keys", "u_counts"), ("b_keys", "b_counts")):
        keys = np.concatenate([getattr(s, key) for s in shards])
        unique, inverse = np.unique(keys, return_inverse=True)
        total = np.zeros(len(unique), dtype=np.int64)
        np.add.at(total, inverse.reshape(-1), np.concatenate([getattr(s, count) for s in shards]))
        merged.append((unique, total))
    (u_keys, u_counts), (b_keys, b_counts) = merged
    space = FeatureSpace.from_keys(u_keys, b_keys, n_obs, n_labels, has_trans)
    empirical = np.zeros(space.n_weights, dtype=np.float64)
    empirical[:space.n_u] = u_counts
    empirical[space.n_u:space.trans_offset] = b_counts
    if has_trans:
        empirical[space.trans_offset:] = np.sum([s.trans for s in shards], axis=0)
    return space, empirical
