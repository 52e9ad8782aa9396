"""Which features exist, and where their weights sit in the flat weight vector.

Like CRFsuite (and unlike CRF++/Wapiti's dense blocks), a feature exists for
an observation and a label (or label pair) only if that combination occurs
in the training data. On CoNLL-2000 that is 456k unigram features instead
of 7.4M dense ones: less memory, a smaller model and a faster gradient, at
no loss of accuracy. Constant bigram patterns (CRF++'s bare ``B``) are the
exception: they get a dense ``L x L`` transition block, so transitions never
seen in training still get (negative) weights.

Weight layout (one float64 vector)::

    [ unigram features (n_u) | observation bigrams (n_b) | transitions (L*L, optional)
      | a structure's own blocks, if any (its subclass of FeatureSpace lays them out) ]

Per observation ``o``, its unigram features are ``u_ptr[o]:u_ptr[o+1]`` with
labels ``u_lab``; its bigram features are ``b_ptr[o]:b_ptr[o+1]`` with label
pairs ``(b_prev, b_cur)``, weight index ``n_u + k``.

Feature keys (:meth:`FeatureSpace.keys`): unigram ``o * L + y``, bigram
``(o * L + a) * L + b``. Sorting the keys sorts by observation first, which is
the CSR order of the space, so a space is a pair of sorted key arrays
(:meth:`FeatureSpace.from_keys`) and merging two spaces is a union of keys.
All the arithmetic on the layout lives here: the corpus (warm start),
compaction and ``dump`` call it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from crfkit.features.small_counts import is_small


class DataArrays(NamedTuple):
    """The ``data`` argument of the kernels (:meth:`Dataset.arrays`)."""

    seq_ptr: np.ndarray
    tok_ptr: np.ndarray
    tok_obs: np.ndarray
    labels: np.ndarray


class SpaceArrays(NamedTuple):
    """The ``space`` argument of the kernels (:meth:`FeatureSpace.arrays`): the feature
    lists and where the dense transition block starts (``has_trans``: whether there is one)."""

    u_ptr: np.ndarray
    u_lab: np.ndarray
    b_ptr: np.ndarray
    b_prev: np.ndarray
    b_cur: np.ndarray
    n_u: int
    trans_offset: int
    has_trans: bool


@dataclass
class Dataset:
    """A batch of sequences as flat arrays, ready for the kernels.

    ``tok_obs[tok_ptr[t]:tok_ptr[t+1]]`` are the observation ids firing at
    token ``t``; sequence ``s`` spans tokens ``seq_ptr[s]:seq_ptr[s+1]``.
    ``labels`` holds gold label ids (-1 where unknown), or is empty.
    ``obs_matrix``, when kept, is the (n_tokens, n_patterns) id matrix the
    lists were made from (-1: no observation), which the numpy labeller
    reads a pattern column at a time. ``tok_val``, when given, holds a value
    per observation occurrence (float64, parallel to ``tok_obs``) that multiplies
    its weights (:mod:`crfkit.kernels.valued`); None means every value is 1.
    ``zero_occ`` (attribute corpora, :mod:`crfkit.attributes.attribute_model`): the (token,
    observation) pairs of occurrences of value 0, left out of the lists as they
    score nothing, but which make their (observation, label) features exist in
    training, as in CRFsuite.
    """

    seq_ptr: np.ndarray
    tok_ptr: np.ndarray
    tok_obs: np.ndarray
    labels: np.ndarray
    obs_matrix: np.ndarray | None = None
    tok_val: np.ndarray | None = None
    zero_occ: np.ndarray | None = None

    @property
    def n_seqs(self) -> int:
        return len(self.seq_ptr) - 1

    @property
    def n_tokens(self) -> int:
        return int(self.seq_ptr[-1])

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.seq_ptr)

    def arrays(self) -> DataArrays:
        """The ``data`` argument of the kernels."""
        return DataArrays(self.seq_ptr, self.tok_ptr, self.tok_obs, self.labels)


@dataclass
class FeatureSpace:
    """The features of a model and the layout of its weight vector."""

    n_labels: int
    u_ptr: np.ndarray  # int64 (n_obs + 1,)
    u_lab: np.ndarray  # int32 (n_u,)
    b_ptr: np.ndarray  # int64 (n_obs + 1,)
    b_prev: np.ndarray  # int32 (n_b,)
    b_cur: np.ndarray  # int32 (n_b,)
    has_trans: bool

    @property
    def n_obs(self) -> int:
        return len(self.u_ptr) - 1

    @property
    def n_u(self) -> int:
        return len(self.u_lab)

    @property
    def n_b(self) -> int:
        return len(self.b_prev)

    @property
    def trans_offset(self) -> int:
        return self.n_u + self.n_b

    @property
    def chain_weights(self) -> int:
        """Where the chain's weights end (a structure's own blocks follow)."""
        return self.trans_offset + (self.n_labels**2 if self.has_trans else 0)

    @property
    def n_weights(self) -> int:
        return self.chain_weights

    def arrays(self) -> SpaceArrays:
        """The ``space`` argument of the kernels."""
        return SpaceArrays(self.u_ptr, self.u_lab, self.b_ptr, self.b_prev, self.b_cur,
                           self.n_u, self.trans_offset, bool(self.has_trans))

    def owners(self) -> tuple[np.ndarray, np.ndarray]:
        """The observation of every unigram feature and of every bigram feature (int64)."""
        return owners(self.u_ptr), owners(self.b_ptr)

    def keys(self, n_labels: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Sorted int64 keys of the unigram and bigram features (module docstring).

        ``n_labels`` (>= the space's) re-keys the features for a larger label set.
        """
        L = n_labels or self.n_labels
        u_owner, b_owner = self.owners()
        return u_owner * L + self.u_lab, (b_owner * L + self.b_prev) * L + self.b_cur

    @classmethod
    def from_keys(cls, u_keys: np.ndarray, b_keys: np.ndarray, n_obs: int, n_labels: int,
                  has_trans: bool) -> FeatureSpace:
        """The feature space holding exactly these (sorted, distinct) keys."""
        L = n_labels
        return cls(n_labels=L, u_ptr=pointer(u_keys // L, n_obs),
                   u_lab=(u_keys % L).astype(np.int32),
                   b_ptr=pointer(b_keys // (L * L), n_obs),
                   b_prev=((b_keys // L) % L).astype(np.int32),
                   b_cur=(b_keys % L).astype(np.int32), has_trans=has_trans)

    def subset(self, keep_u: np.ndarray, keep_b: np.ndarray) -> tuple[FeatureSpace, np.ndarray]:
        """The space of the kept unigram and bigram features (flags per feature), and which
        observations still own one (they are renumbered in order; the transition block
        stays whole)."""
        u_owner, b_owner = self.owners()
        keep_obs = (np.bincount(u_owner[keep_u], minlength=self.n_obs)
                    + np.bincount(b_owner[keep_b], minlength=self.n_obs)) > 0
        new_id = np.cumsum(keep_obs) - 1
        n_obs = int(keep_obs.sum())
        space = FeatureSpace(n_labels=self.n_labels,
                             u_ptr=pointer(new_id[u_owner[keep_u]], n_obs),
                             u_lab=self.u_lab[keep_u],
                             b_ptr=pointer(new_id[b_owner[keep_b]], n_obs),
                             b_prev=self.b_prev[keep_b], b_cur=self.b_cur[keep_b],
                             has_trans=self.has_trans)
        return space, keep_obs

    @classmethod
    def from_training(
        cls,
        obs: np.ndarray,
        unigram_columns: np.ndarray,
        bigram_columns: np.ndarray,
        first_token: np.ndarray,
        labels: np.ndarray,
        n_obs: int,
        n_labels: int,
        has_trans: bool,
        all_features: np.ndarray | None = None,
    ) -> tuple[FeatureSpace, np.ndarray]:
        """Features seen in training, and their empirical counts (the gold feature totals).

        ``obs`` is the (n_tokens, n_columns) observation-id matrix (-1: none);
        ``unigram_columns``/``bigram_columns`` flag which columns feed which
        kind; ``first_token`` flags tokens that start a sequence. With
        ``all_features`` = (unigram, bigram) flags per observation, those
        observations get every label / label pair (Wapiti and CRF++'s dense
        model), not only the combinations seen.
        """
        if is_small(len(obs)):  # numpy: nothing to compile
            from crfkit.features.small_counts import observed_pairs_small as observed_pairs
        else:
            from crfkit.features.intern import observed_pairs  # Numba: training only

        L = n_labels
        y = np.ascontiguousarray(labels, dtype=np.int64)
        first = np.ascontiguousarray(first_token, dtype=np.bool_)
        obs = np.ascontiguousarray(obs, dtype=np.int32)
        u_ptr, u_lab, u_count = observed_pairs(
            obs, np.flatnonzero(unigram_columns), y, first, n_obs, L, False)
        if bigram_columns.any():
            b_ptr, b_code, b_count = observed_pairs(
                obs, np.flatnonzero(bigram_columns), y, first, n_obs, L, True)
        else:  # what observed_pairs gives, in zero pages the kernels only read (CRF++'s files)
            b_ptr = np.zeros(n_obs + 1, dtype=np.int64)
            b_code, b_count = np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.int32)
        if all_features is not None:
            u_ptr, u_lab, u_count = _every_code(u_ptr, u_lab, u_count, all_features[0], L)
            b_ptr, b_code, b_count = _every_code(b_ptr, b_code, b_count, all_features[1], L * L)
        space = cls(n_labels=L, u_ptr=u_ptr, u_lab=u_lab, b_ptr=b_ptr,
                    b_prev=(b_code // L).astype(np.int32), b_cur=(b_code % L).astype(np.int32),
                    has_trans=has_trans)
        empirical = np.zeros(space.n_weights, dtype=np.float64)
        empirical[: space.n_u] = u_count
        empirical[space.n_u : space.trans_offset] = b_count
        if has_trans:
            inner = ~first
            pairs = y[np.flatnonzero(inner) - 1] * L + y[inner]
            empirical[space.trans_offset :] = np.bincount(pairs, minlength=L * L)
        return space, empirical


def merge_spaces(new: FeatureSpace, empirical: np.ndarray, old: FeatureSpace,
                 old_weights: np.ndarray) -> tuple[FeatureSpace, np.ndarray, np.ndarray]:
    """Union of the old model's features and the new corpus's, with starting weights.

    Labels and observations were appended, so an old feature keeps its
    (observation, labels) ids and only its key changes with L. The old
    transition block (L_old x L_old) goes to the top-left of the new one.
    """
    L, L_old = new.n_labels, old.n_labels
    nu_new, nb_new = new.keys()
    ou, ob = old.keys(L)
    u_keys = np.union1d(nu_new, ou)
    b_keys = np.union1d(nb_new, ob)
    space = FeatureSpace.from_keys(u_keys, b_keys, new.n_obs, L, new.has_trans)
    emp = np.zeros(space.n_weights)
    x0 = np.zeros(space.n_weights)
    n_u, t_off = space.n_u, space.trans_offset
    emp[np.searchsorted(u_keys, nu_new)] = empirical[:new.n_u]
    emp[n_u + np.searchsorted(b_keys, nb_new)] = empirical[new.n_u:new.trans_offset]
    x0[np.searchsorted(u_keys, ou)] = old_weights[:old.n_u]
    x0[n_u + np.searchsorted(b_keys, ob)] = old_weights[old.n_u:old.trans_offset]
    if space.has_trans:
        emp[t_off:] = empirical[new.trans_offset:]
        block = x0[t_off:].reshape(L, L)
        if old.has_trans:
            block[:L_old, :L_old] = old_weights[old.trans_offset:old.chain_weights].reshape(
                L_old, L_old)
    return space, emp, x0


def owners(ptr: np.ndarray) -> np.ndarray:
    """The owner ``o`` of every entry of a CSR offset table (``ptr[o] <= k < ptr[o+1]``)."""
    return np.repeat(np.arange(len(ptr) - 1, dtype=np.int64), np.diff(ptr))


def pointer(owner: np.ndarray, n: int) -> np.ndarray:
    """The CSR offset table of ``n`` owners from the (sorted) owner of every entry."""
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(owner, minlength=n), out=ptr[1:])
    return ptr


def _every_code(ptr: np.ndarray, codes: np.ndarray, counts: np.ndarray, flagged: np.ndarray,
                n_codes: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """CSR with all ``n_codes`` codes for each flagged observation, seen counts kept.

    Every observation with a seen code must be flagged (its pattern's kind is), or none
    is (``--all-labels``' label pairs: the seen CSR is returned as it is).
    """
    if not flagged.any():
        return ptr, codes, counts
    sizes = np.where(flagged, n_codes, 0).astype(np.int64)
    dense_ptr = np.zeros(len(sizes) + 1, dtype=np.int64)
    np.cumsum(sizes, out=dense_ptr[1:])
    dense_codes = np.tile(np.arange(n_codes, dtype=np.int32), int(flagged.sum()))
    dense_counts = np.zeros(len(dense_codes), dtype=np.int64)
    owner = owners(ptr)  # all flagged
    dense_counts[dense_ptr[owner] + codes] = counts
    return dense_ptr, dense_codes, dense_counts
