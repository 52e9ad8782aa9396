"""Slow, obviously-correct references for the kernels: enumerate every label path.

:func:`reference_scores` builds a sequence's ``psi``/``phi`` from observation
strings (the patterns applied one by one), not from the feature arrays.

Only for tiny problems (L**T paths). ``psi[t, y]`` are unigram scores and
``phi[t, a, b]`` transition scores into token t (phi[0] unused).

Constrained variants take ``token_ok[t, y]`` / ``trans_ok[a, b]`` boolean
masks and simply leave out the paths that break them: the restricted CRF
is the original one with the distribution renormalised over allowed paths.
"""

from __future__ import annotations

import itertools

import numpy as np

from crfkit.features.explain import apply_pattern


def path_score(psi: np.ndarray, phi: np.ndarray, path: tuple[int, ...]) -> float:
    score = sum(psi[t, y] for t, y in enumerate(path))
    score += sum(phi[t, path[t - 1], path[t]] for t in range(1, len(path)))
    return float(score)


def allowed(path: tuple[int, ...], token_ok=None, trans_ok=None) -> bool:
    if token_ok is not None and not all(token_ok[t, y] for t, y in enumerate(path)):
        return False
    if trans_ok is not None and not all(trans_ok[path[t - 1], path[t]]
                                        for t in range(1, len(path))):
        return False
    return True


def all_paths(T: int, L: int, token_ok=None, trans_ok=None):
    return (p for p in itertools.product(range(L), repeat=T) if allowed(p, token_ok, trans_ok))


def log_partition(psi: np.ndarray, phi: np.ndarray, token_ok=None, trans_ok=None) -> float:
    T, L = psi.shape
    scores = np.array([path_score(psi, phi, p) for p in all_paths(T, L, token_ok, trans_ok)])
    m = scores.max()
    return float(m + np.log(np.exp(scores - m).sum()))


def marginals(psi: np.ndarray, phi: np.ndarray, token_ok=None, trans_ok=None
              ) -> tuple[np.ndarray, np.ndarray]:
    """Token marginals (T, L) and pair marginals (T, L, L) (pair[0] is zero)."""
    T, L = psi.shape
    log_z = log_partition(psi, phi, token_ok, trans_ok)
    unary = np.zeros((T, L))
    pair = np.zeros((T, L, L))
    for p in all_paths(T, L, token_ok, trans_ok):
        prob = np.exp(path_score(psi, phi, p) - log_z)
        for t in range(T):
            unary[t, p[t]] += prob
            if t:
                pair[t, p[t - 1], p[t]] += prob
    return unary, pair


def best_path(psi: np.ndarray, phi: np.ndarray) -> tuple[tuple[int, ...], float]:
    T, L = psi.shape
    best = max(all_paths(T, L), key=lambda p: path_score(psi, phi, p))
    return best, path_score(psi, phi, best)


def nbest(psi: np.ndarray, phi: np.ndarray, n: int, token_ok=None, trans_ok=None
          ) -> list[tuple[tuple[int, ...], float]]:
    T, L = psi.shape
    scored = sorted(((path_score(psi, phi, p), p) for p in all_paths(T, L, token_ok, trans_ok)),
                    key=lambda sp: -sp[0])
    return [(p, s) for s, p in scored[:n]]


def max_expected_accuracy(psi: np.ndarray, phi: np.ndarray, token_ok=None, trans_ok=None
                          ) -> tuple[int, ...]:
    """The allowed path with the largest sum of (restricted) token marginals."""
    T, L = psi.shape
    unary, _ = marginals(psi, phi, token_ok, trans_ok)
    return max(all_paths(T, L, token_ok, trans_ok),
               key=lambda p: sum(unary[t, y] for t, y in enumerate(p)))


def _log_softmax(v: np.ndarray) -> np.ndarray:
    m = v.max()
    return v - (m + np.log(np.exp(v - m).sum()))


def locally_normalised(psi: np.ndarray, phi: np.ndarray, model_type: str
                       ) -> tuple[np.ndarray, np.ndarray]:
    """The lattice of a MaxEnt or MEMM whose path scores are log-probabilities.

    MaxEnt: p(y_t) = softmax psi[t]; MEMM: p(y_0) = softmax psi[0] and
    p(y_t | y_{t-1} = a) = softmax (psi[t] + phi[t, a]) (see crfkit.kernels.loss).
    """
    T, L = psi.shape
    psi2 = np.zeros_like(psi)
    phi2 = np.zeros_like(phi)
    if model_type == "maxent":
        for t in range(T):
            psi2[t] = _log_softmax(psi[t])
    elif model_type == "memm":
        psi2[0] = _log_softmax(psi[0])
        for t in range(1, T):
            for a in range(L):
                phi2[t, a] = _log_softmax(psi[t] + phi[t, a])
    else:
        return psi, phi
    return psi2, phi2


def reference_scores(corpus, weights: np.ndarray, seq) -> tuple[np.ndarray, np.ndarray]:
    """psi/phi of one sequence built from observation strings, not from the arrays."""
    space = corpus.space
    ids = {text: i for i, text in enumerate(corpus.featurizer.observation_strings())}
    L = space.n_labels
    T = len(seq.rows)
    psi = np.zeros((T, L))
    phi = np.zeros((T, L, L))
    trans = weights[space.trans_offset:].reshape(L, L) if space.has_trans else np.zeros((L, L))
    for t in range(T):
        if t:
            phi[t] += trans
        for pattern in corpus.featurizer.patterns:
            if pattern.is_constant and pattern.kind == "b":
                continue
            o = ids.get(apply_pattern(pattern, seq.rows, t))
            if o is None:
                continue
            for k in range(space.u_ptr[o], space.u_ptr[o + 1]):
                psi[t, space.u_lab[k]] += weights[k]
            if t:
                for k in range(space.b_ptr[o], space.b_ptr[o + 1]):
                    phi[t, space.b_prev[k], space.b_cur[k]] += weights[space.n_u + k]
    return psi, phi


# --- second order: scores of label trigrams ----------------------------------------------------
def path_score2(psi, phi, chi, pair_ok, tri_ok, path) -> float:
    """Score of a path under a second-order lattice; -inf if it uses a pair or trigram
    that has no state (``pair_ok[a, b]``, ``tri_ok[a, b, c]``)."""
    score = path_score(psi, phi, path)
    for t in range(1, len(path)):
        if not pair_ok[path[t - 1], path[t]]:
            return float("-inf")
        if t >= 2:
            if not tri_ok[path[t - 2], path[t - 1], path[t]]:
                return float("-inf")
            score += chi[t, path[t - 2], path[t - 1], path[t]]
    return float(score)


def scored_paths2(psi, phi, chi, pair_ok, tri_ok, token_ok=None, trans_ok=None):
    """(score, path) of every allowed path with a finite score."""
    T, L = psi.shape
    out = []
    for p in all_paths(T, L, token_ok, trans_ok):
        s = path_score2(psi, phi, chi, pair_ok, tri_ok, p)
        if s > float("-inf"):
            out.append((s, p))
    return out


def order2_summary(psi, phi, chi, pair_ok, tri_ok, token_ok=None, trans_ok=None):
    """log Z, token marginals (T, L), pair marginals (T, L, L), trigram marginals
    (T, L, L, L) and the paths sorted best first."""
    T, L = psi.shape
    scored = scored_paths2(psi, phi, chi, pair_ok, tri_ok, token_ok, trans_ok)
    scores = np.array([s for s, _ in scored])
    m = scores.max()
    log_z = float(m + np.log(np.exp(scores - m).sum()))
    unary, pair, tri = np.zeros((T, L)), np.zeros((T, L, L)), np.zeros((T, L, L, L))
    for s, p in scored:
        prob = np.exp(s - log_z)
        for t in range(T):
            unary[t, p[t]] += prob
            if t:
                pair[t, p[t - 1], p[t]] += prob
            if t >= 2:
                tri[t, p[t - 2], p[t - 1], p[t]] += prob
    ranked = [(p, s) for s, p in sorted(scored, key=lambda sp: -sp[0])]
    return log_z, unary, pair, tri, ranked


# --- skip-chain CRFs: enumeration of every labelling of a document graph ---------------------
def skip_features(space, data, graph, y) -> np.ndarray:
    """Feature counts of a labelling y of all tokens: unigrams, transitions, and every
    weight block of every skip edge (its pattern's, and those of its observations)."""
    L = space.n_labels
    f = np.zeros(space.n_weights)
    for t in range(data.n_tokens):
        f[t * L + y[t]] += 1
    for s in range(data.n_seqs):
        for t in range(data.seq_ptr[s] + 1, data.seq_ptr[s + 1]):
            f[space.trans_offset + y[t - 1] * L + y[t]] += 1
    eb_ptr, eb_blk = graph.blocks()
    for e, (i, j) in enumerate(zip(graph.e_i, graph.e_j, strict=True)):
        for k in eb_blk[eb_ptr[e]:eb_ptr[e + 1]]:
            f[space.skip_offset + (k * L + y[i]) * L + y[j]] += 1
    return f


def skip_enumeration(space, data, graph, W):
    """Exact log Z (sum over documents), token marginals, expected feature counts and the
    best labelling, by enumerating every labelling of all tokens."""
    L, N = space.n_labels, data.n_tokens
    configs = np.array(list(itertools.product(range(L), repeat=N)))
    F = np.array([skip_features(space, data, graph, y) for y in configs])
    scores = F @ W
    log_z = np.logaddexp.reduce(scores)
    p = np.exp(scores - log_z)
    marg = np.stack([np.bincount(configs[:, t], weights=p, minlength=L) for t in range(N)])
    return log_z, marg, p @ F, configs[np.argmax(scores)]


def token_observations(corpus, seqs):
    """For every token: its global index, the observation strings the corpus encoded for
    it and those the slow pattern explainer gives (both sorted), to compare."""
    strings = corpus.featurizer.observation_strings()
    listed = [corpus.featurizer.patterns[p] for p in corpus.featurizer.listed]
    data = corpus.data
    for s, seq in enumerate(seqs):
        for t in range(len(seq.rows)):
            g = data.seq_ptr[s] + t
            got = sorted(strings[o] for o in data.tok_obs[data.tok_ptr[g]:data.tok_ptr[g + 1]])
            yield g, got, sorted(apply_pattern(p, seq.rows, t) for p in listed)


def central_differences(f, W: np.ndarray, h: float = 1e-5) -> np.ndarray:
    """The gradient of the scalar function f at W by central finite differences."""
    numeric = np.empty_like(W)
    for k in range(len(W)):
        step = np.zeros_like(W)
        step[k] = h
        numeric[k] = (f(W + step) - f(W - step)) / (2 * h)
    return numeric
