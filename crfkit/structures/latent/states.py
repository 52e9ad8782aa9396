"""States of a latent-dynamic CRF: label ``y`` owns states ``y*K .. y*K+K-1``.

The state-level space is a chain's :class:`~crfkit.space.FeatureSpace` over ``S = L*K``
"labels" (the states): every (observation, label) feature seen in training becomes K
(observation, state) features, and the transition block is dense over state pairs. The
chain's kernels then run on it unchanged; only the clamped pass and the mapping of masks
and results between labels and states are the latent structure's own.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from crfkit.space import FeatureSpace


@dataclass
class LatentSpace(FeatureSpace):
    """A state-level space: ``n_labels`` counts states, ``K`` of them per label."""

    K: int = 1

    @classmethod
    def of(cls, space: FeatureSpace, K: int) -> LatentSpace:
        return cls(**{f.name: getattr(space, f.name) for f in fields(FeatureSpace)}, K=K)


def state_space(space: FeatureSpace, K: int) -> LatentSpace:
    """Each unigram feature of a label-level space as K features of the label's states."""
    u_lab = (np.repeat(space.u_lab.astype(np.int64) * K, K)
             + np.tile(np.arange(K), space.n_u)).astype(np.int32)
    return LatentSpace(n_labels=space.n_labels * K, u_ptr=space.u_ptr * K, u_lab=u_lab,
                       b_ptr=space.b_ptr, b_prev=space.b_prev, b_cur=space.b_cur,
                       has_trans=space.has_trans, K=K)


def label_space(space: FeatureSpace, K: int) -> FeatureSpace:
    """The label-level space a state-level one was made from (its features' labels)."""
    keep = space.u_lab % K == 0
    owners = np.repeat(np.arange(space.n_obs), np.diff(space.u_ptr))[keep]
    return FeatureSpace(n_labels=space.n_labels // K,
                        u_ptr=np.concatenate([[0], np.cumsum(np.bincount(
                            owners, minlength=space.n_obs))]).astype(np.int64),
                        u_lab=(space.u_lab[keep] // K).astype(np.int32), b_ptr=space.b_ptr,
                        b_prev=space.b_prev, b_cur=space.b_cur, has_trans=space.has_trans)


def state_tokens(token_ok: np.ndarray, K: int) -> np.ndarray:
    """A per-token label mask (n, L) as a state mask (n, L*K)."""
    return np.repeat(token_ok, K, axis=1)


def state_transitions(trans_ok: np.ndarray, K: int) -> np.ndarray:
    """A label-pair mask (L, L) as a state-pair mask (L*K, L*K)."""
    return np.repeat(np.repeat(trans_ok, K, axis=0), K, axis=1)


def label_marginals(marginals: np.ndarray, K: int) -> np.ndarray:
    """State marginals (n, L*K) summed over each label's states: (n, L)."""
    n, S = marginals.shape
    return marginals.reshape(n, S // K, K).sum(axis=2)


def state_names(labels: list[str], K: int) -> list[str]:
    """``LABEL#k`` for every state (``info``/``dump``)."""
    return [f"{label}#{k}" for label in labels for k in range(K)]


def perturbation(n_weights: int, seed: int, scale: float = 0.1) -> np.ndarray:
    """The seeded start that breaks the symmetry of a label's states: with equal weights
    they would receive equal gradients forever."""
    return np.random.default_rng(seed).uniform(-scale, scale, n_weights)


def successor_states(labels: np.ndarray, seq_ptr: np.ndarray, n_labels: int,
                     K: int) -> np.ndarray:
    """Each token's state in the structured start: ``k < K-1`` when the next token's label
    (or the sequence's end) is its label's ``k+1``-th most frequent successor in the
    corpus, ``K-1`` otherwise; -1 (free) where the token or its successor has a label set
    (``labels`` -1). A label's states then start as the contexts it is followed by (with
    BIO chunk tags and K = 2, B-NP splits into the tokens I-NP follows and one-word
    chunks, as BIOES tags split B and S), a distinction a random start does not find
    (its states collapse into one)."""
    n, L = len(labels), n_labels
    following = np.full(n, L, dtype=np.int64)  # L: the sequence ends here
    if n:
        following[:-1] = labels[1:]
        lengths = np.diff(seq_ptr)
        following[seq_ptr[1:][lengths > 0] - 1] = L
    known = (labels >= 0) & (following >= 0)
    label, after = labels[known].astype(np.int64), following[known]
    counts = np.bincount(label * (L + 1) + after, minlength=L * (L + 1)).reshape(L, L + 1)
    order = np.argsort(-counts, axis=1, kind="stable")  # ties: the lower successor id first
    rank = np.empty_like(order)
    rank[np.arange(L)[:, None], order] = np.arange(L + 1)
    states = np.full(n, -1, dtype=np.int8)
    states[known] = np.minimum(rank[label, after], K - 1)
    return states


def start_mask(allowed: np.ndarray, labels: np.ndarray, states: np.ndarray,
               K: int) -> np.ndarray:
    """The states (n_tokens, L*K) the clamped pass allows during the structured start: the
    one state :func:`successor_states` gave a token, all states of its allowed labels
    where it gave none."""
    mask = state_tokens(allowed, K)
    fixed = np.flatnonzero(states >= 0)
    mask[fixed] = False
    mask[fixed, labels[fixed].astype(np.int64) * K + states[fixed]] = True
    return mask
