"""Labelling a latent-dynamic model by label paths (Sun et al. 2008's exact inference).

The probability of a label path is the sum over its state paths: log Z(x, y) - log Z(x),
the clamped pass with one label per token. The search draws state paths best first (the
chain's exact n-best Viterbi over states, N doubled while needed), scores each new label
path they map to exactly, and stops once the n-th best label path found is at least as
probable as all the probability mass not yet covered: no unseen label path can beat it.
If MAX_STATE_PATHS state paths do not settle a sequence, the best found are returned (the
bound then holds only for the paths found; the total uncovered mass bounds the error).
"""

from __future__ import annotations

import numpy as np

from crfkit.kernels.decoded import Decoded, Weighted
from crfkit.kernels.flavour import read_only
from crfkit.space import Dataset
from crfkit.structures.base import DecodeRequest
from crfkit.structures.latent.states import state_tokens, state_transitions

MAX_STATE_PATHS = 1024


def label_path_log_z(model: Weighted, data: Dataset, s: int, labels: np.ndarray) -> float:
    """log Z(x, y): the log-sum of the scores of the state paths of label path ``labels``
    of sequence ``s`` (-inf where it has none)."""
    from crfkit.structures.latent.clamped import clamped_block
    from crfkit.structures.latent.objective import exp_transitions

    sp = model.space
    L = sp.n_labels // sp.K
    allowed = np.zeros((data.n_tokens, L), dtype=bool)
    t0 = int(data.seq_ptr[s])
    allowed[t0 + np.arange(len(labels)), labels] = True
    E, shift = exp_transitions(sp, model.weights)
    out = np.zeros(2)
    # read-only whether the model was loaded or just trained: training's compiled version
    clamped_block(read_only(model.weights), read_only(sp.u_ptr), read_only(sp.u_lab),
                  sp.trans_offset, bool(sp.has_trans),
                  sp.n_labels, sp.K, data.seq_ptr, data.tok_ptr, data.tok_obs, allowed, E,
                  shift, s, s + 1, False, np.zeros(0), out)
    return -np.inf if out[1] >= 0 else float(out[0])


def best_label_paths(model: Weighted, data: Dataset, s: int, nbest: int, token_ok, trans_ok,
                     log_z: float) -> list[tuple[float, np.ndarray]]:
    """The ``nbest`` most probable label paths of sequence ``s``: (log Z(x, y), path)."""
    from crfkit.kernels.decoder import decode

    K = model.space.K
    t0, t1 = int(data.seq_ptr[s]), int(data.seq_ptr[s + 1])
    found: dict[bytes, tuple[float, np.ndarray]] = {}
    N = 8 * nbest
    while True:
        dec = decode(model, data, nbest=N, token_ok=token_ok, trans_ok=trans_ok)
        for r in range(N):
            if not np.isfinite(dec.scores[s, r]):
                break
            path = (dec.paths[t0:t1, r] // K).astype(np.int32)
            if path.tobytes() not in found:
                found[path.tobytes()] = (label_path_log_z(model, data, s, path), path)
        ranked = sorted(found.values(), key=lambda f: -f[0])
        covered = sum(np.exp(f[0] - log_z) for f in ranked)
        settled = len(ranked) >= nbest and np.exp(ranked[nbest - 1][0] - log_z) >= 1 - covered
        if settled or not np.isfinite(dec.scores[s, N - 1]) or N >= MAX_STATE_PATHS:
            return ranked[:nbest]
        N *= 2


def decode_labels(model: Weighted, data: Dataset, request: DecodeRequest) -> Decoded:
    """Every sequence's best label paths (scores: log Z(x, y), so that -s gives the label
    path's exact probability); log Z and label marginals as the state decoder's."""
    from crfkit.kernels.decoder import decode
    from crfkit.structures.latent.states import label_marginals

    r, K = request, model.space.K
    token_ok = None if r.token_ok is None else state_tokens(r.token_ok, K)
    trans_ok = None if r.trans_ok is None else state_transitions(r.trans_ok, K)
    base = decode(model, data, log_z=True, marginals=r.marginals, token_ok=token_ok,
                  trans_ok=trans_ok)
    paths = np.full((data.n_tokens, r.nbest), -1, dtype=np.int32)
    scores = np.full((data.n_seqs, r.nbest), -np.inf)
    for s in range(data.n_seqs):
        t0, t1 = int(data.seq_ptr[s]), int(data.seq_ptr[s + 1])
        if t1 == t0 or not np.isfinite(base.log_z[s]):
            continue
        sub = _one_sequence(data, s)
        sub_ok = None if token_ok is None else token_ok[t0:t1]
        best = best_label_paths(model, sub, 0, r.nbest, sub_ok, trans_ok, base.log_z[s])
        for rank, (score, path) in enumerate(best):
            paths[t0:t1, rank] = path
            scores[s, rank] = score
    return Decoded(paths=paths, scores=scores, log_z=base.log_z,
                   marginals=None if base.marginals is None
                   else label_marginals(base.marginals, K))


def _one_sequence(data: Dataset, s: int) -> Dataset:
    t0, t1 = int(data.seq_ptr[s]), int(data.seq_ptr[s + 1])
    lo, hi = int(data.tok_ptr[t0]), int(data.tok_ptr[t1])
    return Dataset(seq_ptr=np.array([0, t1 - t0], dtype=data.seq_ptr.dtype),
                   tok_ptr=data.tok_ptr[t0:t1 + 1] - lo, tok_obs=data.tok_obs[lo:hi],
                   labels=np.zeros(0, dtype=np.int32))


def posterior_paths(marginals: np.ndarray, data: Dataset,
                    trans_ok: np.ndarray | None) -> np.ndarray:
    """Per token the label of highest marginal; under transition constraints the allowed
    path with the largest sum of marginals (as the chain's posterior decoding)."""
    if trans_ok is None or trans_ok.all():
        return marginals.argmax(axis=1).astype(np.int32)[:, None]
    path = np.empty(data.n_tokens, dtype=np.int32)
    pen = np.where(trans_ok, 0.0, -np.inf)
    for s in range(data.n_seqs):
        t0, t1 = int(data.seq_ptr[s]), int(data.seq_ptr[s + 1])
        if t1 == t0:
            continue
        delta = marginals[t0].copy()
        back = np.zeros((t1 - t0, marginals.shape[1]), dtype=np.int64)
        for t in range(1, t1 - t0):
            cand = delta[:, None] + pen
            back[t] = cand.argmax(axis=0)
            delta = cand.max(axis=0) + marginals[t0 + t]
        y = int(delta.argmax())
        for t in range(t1 - t0 - 1, -1, -1):
            path[t0 + t] = y
            y = int(back[t, y])
    return path[:, None]
