"""The feature space of a second-order CRF (``crfkit train --order 2``).

A second-order model scores label trigrams: besides the unigram and bigram
features of a first-order space (:class:`crfkit.space.FeatureSpace`, whose
layout it keeps unchanged at the front of the weight vector), it has

* observation trigrams: an observation of a ``t`` pattern x (y[t-2], y[t-1], y[t]);
* a dense block of plain label-trigram weights, when the patterns have a
  constant trigram line (``t``) or a constant bigram line (``B``: in a
  second-order model it means "label transitions of the model's order").

Exact inference runs over label-pair states ``(y[t-1], y[t])``. Like the
features, the states follow the training data: only label pairs and label
trigrams seen in training (``pairs``, ``tri``) exist, every other path has
probability zero (all of them with ``--all-features``). On CoNLL-2000 that is
a few hundred pairs and about a thousand trigrams instead of 22**3 = 10648,
and the work per token follows them.

Weight layout (one float64 vector)::

    [ first-order space (unigrams | obs bigrams | transitions) | obs trigrams (n_g)
      | label trigrams (K, optional) ]

Observation ``o``'s trigram features are ``g_ptr[o]:g_ptr[o+1]``, the
trigram of feature ``f`` is ``tri[g_tri[f]]`` (code ``(a * L + b) * L + c``).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from functools import cached_property
from typing import ClassVar, NamedTuple

import numpy as np

from crfkit.space import FeatureSpace, owners, pointer


class PairLattice(NamedTuple):
    """The arrays the order-2 kernels take (:attr:`Order2Space.lattice` says what each
    holds); a tuple to Numba, read by name."""

    pair_a: np.ndarray  # int32 (P,): first label of each pair state
    pair_b: np.ndarray  # int32 (P,): second label
    pair_of: np.ndarray  # int32 (L * L,): the state of pair a * L + b, -1 if none
    e_ptr: np.ndarray  # int64 (P + 1,): the edge slots into each state
    e_src0: np.ndarray  # int32 (P,): the source state of each state's first slot
    e_tri: np.ndarray  # int32 (slots,): the slot's trigram (index into tri), -1 if none
    g_ptr: np.ndarray  # int64 (n_obs + 1,): each observation's trigram features
    g_edge: np.ndarray  # int32 (n_g,): the slot of each observation trigram
    g_offset: int  # where the observation-trigram weights start
    tri_offset: int  # where the label-trigram block starts
    has_tri: bool  # whether the label-trigram block exists


@dataclass
class Order2Space(FeatureSpace):
    """A first-order space plus label-trigram states and features (module docstring)."""

    pairs: np.ndarray = None  # int64 (P,): sorted codes a * L + b of the allowed label pairs
    tri: np.ndarray = None  # int64 (K,): sorted codes (a * L + b) * L + c of allowed trigrams
    g_ptr: np.ndarray = None  # int64 (n_obs + 1,)
    g_tri: np.ndarray = None  # int32 (n_g,): index into tri
    has_tri: bool = False  # a dense block of K label-trigram weights

    order: ClassVar[int] = 2

    @property
    def n_g(self) -> int:
        return len(self.g_tri)

    @property
    def g_offset(self) -> int:
        """Where the observation-trigram weights start."""
        return self.trans_offset + (self.n_labels**2 if self.has_trans else 0)

    @property
    def tri_offset(self) -> int:
        """Where the dense label-trigram block starts."""
        return self.g_offset + self.n_g

    @property
    def n_weights(self) -> int:
        return self.tri_offset + (len(self.tri) if self.has_tri else 0)

    @cached_property
    def lattice(self) -> PairLattice:
        """The arrays the order-2 kernels take (see :mod:`crfkit.structures.order2.pair_lattice`)::

            (pair_a, pair_b, pair_of, e_ptr, e_src0, e_tri, g_ptr, g_edge,
             g_offset, tri_offset, has_tri)

        States at t >= 1 are the allowed pairs, ordered by their second label,
        so the pairs (a, b) that can precede a pair (b, c) are one contiguous
        run. The edges into state ``p = (b, c)`` are dense over that run (trimmed
        to its first and last allowed trigram): slots
        ``e_ptr[p]:e_ptr[p+1]``, slot ``e_ptr[p] + i`` coming from state
        ``e_src0[p] + i``; ``e_tri`` is the slot's trigram (index into ``tri``),
        -1 where that trigram has no state (its score is -inf). Contiguous
        runs instead of index lists let the loops vectorise: about 1.7 slots
        per allowed trigram on CoNLL-2000 (891 for 762), but faster.
        """
        L = self.n_labels
        P = len(self.pairs)
        first, second = self.pairs // L, self.pairs % L
        order = np.lexsort((first, second))  # by second label, then first
        pair_a, pair_b = first[order].astype(np.int32), second[order].astype(np.int32)
        pair_of = np.full(L * L, -1, dtype=np.int32)
        pair_of[pair_a * L + pair_b] = np.arange(P, dtype=np.int32)
        ending = np.zeros(L + 1, dtype=np.int64)  # states ending in label b: ending[b]:ending[b+1]
        np.cumsum(np.bincount(pair_b, minlength=L), out=ending[1:])
        e_src0, sizes = ending[pair_a], ending[pair_a + 1] - ending[pair_a]
        for trim in (False, True):  # the whole runs, then trimmed to their allowed trigrams
            e_ptr = np.zeros(P + 1, dtype=np.int64)
            np.cumsum(sizes, out=e_ptr[1:])
            # slot -> trigram (a, b, c): a = first label of the source, (b, c) its destination
            dst = np.repeat(np.arange(P), sizes)
            src = e_src0[dst] + (np.arange(int(e_ptr[-1])) - e_ptr[dst])
            codes = pair_a[src].astype(np.int64) * L * L + pair_a[dst] * L + pair_b[dst]
            where = np.searchsorted(self.tri, codes)
            found = where < len(self.tri)
            found[found] = self.tri[where[found]] == codes[found]
            if not trim:
                lo = np.full(P, np.iinfo(np.int64).max)
                hi = np.full(P, -1)
                np.minimum.at(lo, dst[found], src[found])
                np.maximum.at(hi, dst[found], src[found])
                e_src0 = np.where(hi >= 0, lo, e_src0)
                sizes = np.where(hi >= 0, hi - lo + 1, 0)
        e_src0 = e_src0.astype(np.int32)
        e_tri = np.where(found, where, -1).astype(np.int32)
        if found.sum() != len(self.tri):
            raise ValueError("a label trigram whose label pairs are not states")
        slot_of = np.empty(len(self.tri), dtype=np.int32)
        slot_of[e_tri[found]] = np.flatnonzero(found).astype(np.int32)
        return PairLattice(pair_a, pair_b, pair_of, e_ptr, e_src0, e_tri, self.g_ptr,
                           slot_of[self.g_tri], self.g_offset, self.tri_offset,
                           bool(self.has_tri))

    def check(self) -> None:
        """Raise ValueError if the arrays disagree (a model file read from disk)."""
        L, n = self.n_labels, self.n_obs
        for name, codes, limit in (("pairs", self.pairs, L * L), ("tri", self.tri, L**3)):
            if len(codes) and (codes.min() < 0 or codes.max() >= limit
                               or (np.diff(codes) <= 0).any()):
                raise ValueError(f"{name}: label codes out of range or not sorted")
        if len(self.g_ptr) != n + 1 or self.g_ptr[0] != 0 or (np.diff(self.g_ptr) < 0).any() \
                or self.g_ptr[-1] != len(self.g_tri):
            raise ValueError("g_ptr is not a valid offset table")
        if len(self.g_tri) and (self.g_tri.min() < 0 or self.g_tri.max() >= len(self.tri)):
            raise ValueError("g_tri: trigram index out of range")
        self.lattice  # noqa: B018 - raises if a trigram's pairs are not states


def first_order_parts(space: FeatureSpace) -> dict:
    """The fields of the first-order part of a space, as keyword arguments."""
    return {f.name: getattr(space, f.name) for f in fields(FeatureSpace)}


def order2_space(base: FeatureSpace, base_empirical: np.ndarray, obs: np.ndarray,
                 trigram_columns: np.ndarray, index: np.ndarray, labels: np.ndarray,
                 has_tri: bool, all_features: np.ndarray | None = None
                 ) -> tuple[Order2Space, np.ndarray]:
    """The second-order space of a training corpus, and its empirical counts.

    ``obs`` (n_tokens, n_columns) observation ids, ``trigram_columns`` flags
    the columns of ``t`` patterns, ``index`` is each token's position in its
    sequence. ``all_features``: per observation, whether it gets every
    trigram (and then every label pair and trigram is a state).
    """
    L = base.n_labels
    y = labels.astype(np.int64)
    inner = np.flatnonzero(index >= 1)
    third = np.flatnonzero(index >= 2)
    pair_codes = y[inner - 1] * L + y[inner]
    tri_codes = (y[third - 2] * L + y[third - 1]) * L + y[third]
    if all_features is not None:
        pairs, tri = np.arange(L * L, dtype=np.int64), np.arange(L**3, dtype=np.int64)
    else:
        pairs, tri = np.unique(pair_codes), np.unique(tri_codes)
    K = len(tri)
    tri_index = np.searchsorted(tri, tri_codes)
    keys = [obs[third, c].astype(np.int64) * K + tri_index
            for c in np.flatnonzero(trigram_columns)]
    keys = np.concatenate(keys) if keys else np.zeros(0, dtype=np.int64)
    keys = keys[keys >= 0]
    g_keys, g_count = np.unique(keys, return_counts=True)
    if all_features is not None and all_features.any():
        dense = (np.flatnonzero(all_features)[:, None] * K + np.arange(K)).ravel()
        merged = np.union1d(g_keys, dense)
        counts = np.zeros(len(merged), dtype=np.int64)
        counts[np.searchsorted(merged, g_keys)] = g_count
        g_keys, g_count = merged, counts
    space = Order2Space(**first_order_parts(base),
                        pairs=pairs, tri=tri, g_ptr=pointer(g_keys // max(K, 1), base.n_obs),
                        g_tri=(g_keys % max(K, 1)).astype(np.int32), has_tri=has_tri)
    empirical = np.zeros(space.n_weights)
    empirical[:base.n_weights] = base_empirical
    empirical[space.g_offset:space.tri_offset] = g_count
    if has_tri:
        empirical[space.tri_offset:] = np.bincount(tri_index, minlength=K)
    return space, empirical


def with_base(space: Order2Space, base: FeatureSpace, **changes) -> Order2Space:
    """``space``'s trigram parts (``changes`` replaced) on another first-order space."""
    parts = {f: getattr(space, f) for f in ("pairs", "tri", "g_ptr", "g_tri", "has_tri")}
    parts.update(changes)
    return Order2Space(**first_order_parts(base),
                       **parts)


def subset2(space: Order2Space, keep_u: np.ndarray, keep_b: np.ndarray, keep_g: np.ndarray
            ) -> tuple[Order2Space, np.ndarray]:
    """The space of the kept features (flags per feature); the observations that still own
    one, renumbered in order. States and the dense blocks stay whole (compaction)."""
    u_owner, b_owner = space.owners()
    g_owner = owners(space.g_ptr)
    keep_obs = (np.bincount(u_owner[keep_u], minlength=space.n_obs)
                + np.bincount(b_owner[keep_b], minlength=space.n_obs)
                + np.bincount(g_owner[keep_g], minlength=space.n_obs)) > 0
    new_id = np.cumsum(keep_obs) - 1
    n_obs = int(keep_obs.sum())
    base = FeatureSpace(n_labels=space.n_labels, u_ptr=pointer(new_id[u_owner[keep_u]], n_obs),
                        u_lab=space.u_lab[keep_u], b_ptr=pointer(new_id[b_owner[keep_b]], n_obs),
                        b_prev=space.b_prev[keep_b], b_cur=space.b_cur[keep_b],
                        has_trans=space.has_trans)
    return with_base(space, base, g_ptr=pointer(new_id[g_owner[keep_g]], n_obs),
                     g_tri=space.g_tri[keep_g]), keep_obs


def rekey(codes: np.ndarray, L_old: int, L: int, n: int) -> np.ndarray:
    """Label codes of ``n`` labels (pair n=2, trigram n=3) from ``L_old`` to ``L`` labels."""
    out = np.zeros(len(codes), dtype=np.int64)
    rest = codes.astype(np.int64)
    scale = 1
    for _ in range(n):
        rest, digit = np.divmod(rest, L_old)
        out += digit * scale
        scale *= L
    return out


def merged_trigrams(base: FeatureSpace, base_emp: np.ndarray, base_x0: np.ndarray,
                    new: Order2Space, empirical: np.ndarray, old: Order2Space,
                    old_weights: np.ndarray) -> tuple[Order2Space, np.ndarray, np.ndarray]:
    """The second-order space of a warm start: ``base`` (the merged first-order parts, with
    their empirical counts and starting weights) plus the union of the new corpus's and the
    old model's states and observation trigrams; returns (space, empirical, x0)."""
    L, L_old = new.n_labels, old.n_labels
    old_tri = rekey(old.tri, L_old, L, 3)
    pairs = np.union1d(new.pairs, rekey(old.pairs, L_old, L, 2))
    tri = np.union1d(new.tri, old_tri)
    L3 = L**3
    new_g = owners(new.g_ptr) * L3 + new.tri[new.g_tri]
    old_g = owners(old.g_ptr) * L3 + old_tri[old.g_tri]
    g_keys = np.union1d(new_g, old_g)
    space = Order2Space(**first_order_parts(base), pairs=pairs, tri=tri,
                        g_ptr=pointer(g_keys // L3, base.n_obs),
                        g_tri=np.searchsorted(tri, g_keys % L3).astype(np.int32),
                        has_tri=new.has_tri)
    emp, x0 = np.zeros(space.n_weights), np.zeros(space.n_weights)
    emp[:base.n_weights], x0[:base.n_weights] = base_emp, base_x0
    emp[space.g_offset + np.searchsorted(g_keys, new_g)] = empirical[new.g_offset:new.tri_offset]
    x0[space.g_offset + np.searchsorted(g_keys, old_g)] = old_weights[old.g_offset:old.tri_offset]
    if space.has_tri:
        emp[space.tri_offset + np.searchsorted(tri, new.tri)] = empirical[new.tri_offset:]
        if old.has_tri:
            x0[space.tri_offset + np.searchsorted(tri, old_tri)] = old_weights[old.tri_offset:]
    return space, emp, x0
