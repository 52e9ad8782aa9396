"""Random second-order feature spaces and lattices for the brute-force tests."""

from __future__ import annotations

import numpy as np

from crfkit.space import Dataset, FeatureSpace, pointer
from crfkit.structures import named
from crfkit.structures.order2.pair_space import Order2Space, first_order_parts
from crfkit.training.corpus import encode_training
from crfkit.training.train import TrainOptions


def options2(**given) -> TrainOptions:
    """The options of a second-order training (``--order 2``)."""
    return TrainOptions(structure={"order": 2}, **given)


def encode2(patterns, sequences, **given):
    """A training corpus encoded by the second order."""
    return encode_training(patterns, sequences, structure=named("order2"), **given)


# a second-order pattern file over the address sample (tests/structures/order2/conftest.py)
PATTERNS_O2 = """u:w0=%X[0,0]
u:w-1=%X[-1,0]
u:s0=%x[0,1]
*:s-1/s0=%x[-1,1]/%x[0,1]
t:s0=%x[0,1]
*
"""


def random_space(rng: np.random.Generator, L: int, n_obs: int, dense: bool = False,
                 has_trans: bool = True, has_tri: bool = True, obs_tri: bool = True,
                 obs_bigrams: bool = True) -> Order2Space:
    """A space with random unigram / bigram / trigram features and random allowed states
    (every pair and trigram with ``dense``)."""
    u_keys = np.flatnonzero(rng.random(n_obs * L) < 0.7)
    b_keys = np.flatnonzero(rng.random(n_obs * L * L) < (0.3 if obs_bigrams else 0.0))
    if dense:
        pairs, tri = np.arange(L * L), np.arange(L**3)
    else:
        tri = np.flatnonzero(rng.random(L**3) < 0.6)
        pairs = np.union1d(tri // L, tri % (L * L))
        pairs = np.union1d(pairs, np.flatnonzero(rng.random(L * L) < 0.3))
    base = FeatureSpace.from_keys(u_keys, b_keys[np.isin(b_keys % (L * L), pairs)], n_obs, L,
                                  has_trans)
    K = len(tri)
    g_keys = np.flatnonzero(rng.random(n_obs * K) < (0.3 if obs_tri else 0.0))
    return Order2Space(**first_order_parts(base),
                       pairs=pairs.astype(np.int64), tri=tri.astype(np.int64),
                       g_ptr=pointer(g_keys // max(K, 1), n_obs),
                       g_tri=(g_keys % max(K, 1)).astype(np.int32), has_tri=has_tri)


def random_data(rng: np.random.Generator, lengths: list[int], n_obs: int,
                L: int) -> Dataset:
    seq_ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    n = int(seq_ptr[-1])
    lists = [np.sort(rng.choice(n_obs, size=rng.integers(0, 3), replace=False)) for _ in range(n)]
    tok_ptr = np.concatenate([[0], np.cumsum([len(x) for x in lists])]).astype(np.int64)
    tok_obs = (np.concatenate(lists) if n else np.zeros(0)).astype(np.int32)
    return Dataset(seq_ptr=seq_ptr, tok_ptr=tok_ptr, tok_obs=tok_obs,
                   labels=rng.integers(0, L, size=n).astype(np.int32))


def reference_lattice(space: Order2Space, W: np.ndarray, data: Dataset, s: int):
    """psi (T, L), phi (T, L, L), chi (T, L, L, L) of sequence s, by plain loops over the
    features; and the allowed pair / trigram masks."""
    L = space.n_labels
    t0, t1 = data.seq_ptr[s], data.seq_ptr[s + 1]
    T = t1 - t0
    psi, phi, chi = np.zeros((T, L)), np.zeros((T, L, L)), np.zeros((T, L, L, L))
    trans = W[space.trans_offset:space.g_offset].reshape(L, L) if space.has_trans else 0.0
    for t in range(T):
        if t:
            phi[t] += trans
        if t >= 2 and space.has_tri:
            for k, code in enumerate(space.tri):
                a, b, c = code // (L * L), (code // L) % L, code % L
                chi[t, a, b, c] += W[space.tri_offset + k]
        for o in data.tok_obs[data.tok_ptr[t0 + t]:data.tok_ptr[t0 + t + 1]]:
            for k in range(space.u_ptr[o], space.u_ptr[o + 1]):
                psi[t, space.u_lab[k]] += W[k]
            if t:
                for k in range(space.b_ptr[o], space.b_ptr[o + 1]):
                    phi[t, space.b_prev[k], space.b_cur[k]] += W[space.n_u + k]
            if t >= 2:
                for f in range(space.g_ptr[o], space.g_ptr[o + 1]):
                    code = space.tri[space.g_tri[f]]
                    a, b, c = code // (L * L), (code // L) % L, code % L
                    chi[t, a, b, c] += W[space.g_offset + f]
    pair_ok = np.zeros((L, L), dtype=bool)
    pair_ok.flat[space.pairs] = True
    tri_ok = np.zeros((L, L, L), dtype=bool)
    tri_ok.flat[space.tri] = True
    return psi, phi, chi, pair_ok, tri_ok
