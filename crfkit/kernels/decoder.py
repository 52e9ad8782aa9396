"""Decoding beyond the single best path: n-best, marginals, posterior, constraints.

Everything here works on the lattice of :mod:`crfkit.kernels.lattice` (``psi[t, y]``
unigram scores, ``phi[t, a, b]`` transition scores) and reuses its kernels.
The best path alone has a numpy twin, :mod:`crfkit.kernels.bestpath`, which
``crfkit label`` uses to start without Numba; the two must agree exactly.

Constraints are masks (built by :mod:`crfkit.labelling.constraints`), never special
cases in the recurrences:

* a per-token mask ``token_ok[t, y]`` (forced labels, "no ``I-X`` at the
  start") sets ``psi[t, y] = -inf`` where false;
* a transition mask ``trans_ok[a, b]`` (IOB2 rules) sets ``phi[., a, b] =
  -inf`` where false.

Viterbi is max-plus, so ``-inf`` simply loses; the scaled forward-backward
exponentiates with a max shift, so a forbidden entry becomes exactly 0 and
the marginals, log Z and path log-probabilities are those of the CRF
*restricted to the allowed paths*. If no path is allowed at all, the best
score is ``-inf`` and the caller reports the contradiction.

Exact n-best is list Viterbi: ``delta[t, y, k]`` is the k-th best score of
the prefixes ending in label ``y`` at ``t``. A path among the global N best
has each of its prefixes among the N best prefixes ending in the same
(t, label), otherwise N better paths would share its suffix; so keeping N per
cell is exact, not a beam. Each cell's N entries come from an N-way merge of
the (already sorted) lists of its predecessors: O(T L^2 N) time, no sorting.
Ties go to the lower previous label, then the lower rank, which makes
``N = 1`` identical to :func:`crfkit.kernels.lattice.viterbi`.

Posterior decoding picks, per token, the label of highest marginal. With
transition constraints that could produce a forbidden pair (``O`` then
``I-NP``), so it then returns the allowed path with the largest *sum* of
marginals (the expected number of correct tokens), found by Viterbi over
the marginals. Without transition constraints the two coincide, and the plain
argmax is used.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from crfkit import config
from crfkit.config import NORM_GLOBAL, NORM_MEMM
from crfkit.errors import UsageError
from crfkit.kernels import lattice
from crfkit.kernels.bestpath import Decoded, Weighted
from crfkit.kernels.blocks import partition_blocks, run_blocks
from crfkit.kernels.flavour import read_only, read_only_space
from crfkit.space import Dataset


# --- kernels ---------------------------------------------------------------------------------
@njit(**config.JIT)
def mask_tokens(psi, token_ok, t0, T, L):
    """psi[t, y] = -inf where token t0 + t may not take label y."""
    for t in range(T):
        for y in range(L):
            if not token_ok[t0 + t, y]:
                psi[t, y] = -np.inf


@njit(inline="always", **config.JIT)
def insert_ranked(vals, codes, n, N, v, code):
    """Insert (v, code) into the descending list vals[:n] (capacity N), after equal
    entries so that earlier candidates win ties; returns the new length."""
    i = n if n < N else N - 1
    while i > 0 and v > vals[i - 1]:
        vals[i] = vals[i - 1]
        codes[i] = codes[i - 1]
        i -= 1
    vals[i] = v
    codes[i] = code
    return n + 1 if n < N else N


@njit(**config.JIT)
def nbest_viterbi(psi, phi, per_token, T, L, N, delta, back, count, paths, scores):
    """The N best label paths of one sequence, best first (list Viterbi).

    ``delta[t, y, :count[t, y]]`` holds the best prefix scores ending in ``y``
    at ``t``, descending; ``back[t, y, k] = a * N + j`` names the prefix it
    extends (label ``a``, rank ``j`` at ``t-1``). Each list is filled by
    scanning predecessors in order and leaving a predecessor's (sorted) list
    as soon as it cannot beat the current N-th best (or is ``-inf``), so a
    cell usually costs about L comparisons, not L * N. Paths of score
    ``-inf`` (forbidden) are never listed. Writes ``paths[r, :T]`` and
    ``scores[r]`` and returns the number of paths found (< N if fewer exist).
    """
    for y in range(L):
        delta[0, y, 0] = psi[0, y]
        count[0, y] = 1 if psi[0, y] > -np.inf else 0
    for t in range(1, T):
        M = phi[t] if per_token else phi[0]
        for b in range(L):
            n = 0
            if psi[t, b] > -np.inf:
                worst = -np.inf  # the N-th best so far, once the list is full
                for a in range(L):
                    m = M[a, b]
                    for k in range(count[t - 1, a]):
                        v = delta[t - 1, a, k] + m
                        if not v > worst:
                            break
                        n = insert_ranked(delta[t, b], back[t, b], n, N, v, a * N + k)
                        if n == N:
                            worst = delta[t, b, N - 1]
                p = psi[t, b]
                for k in range(n):
                    delta[t, b, k] += p
            count[t, b] = n
    # The N best complete paths among the lists of the last token.
    last = T - 1
    found = np.int64(0)  # not the literal 0: insert_ranked would be compiled twice
    for y in range(L):
        for k in range(count[last, y]):
            v = delta[last, y, k]
            if found == N and not v > scores[N - 1]:
                break
            found = insert_ranked(scores, paths[:, 0], found, N, v, y * N + k)
    for r in range(found):
        code = paths[r, 0]
        y = code // N
        k = code % N
        for t in range(last, -1, -1):
            paths[r, t] = y
            if t > 0:
                code = back[t, y, k]
                y = code // N
                k = code % N
    return found


@njit(**config.JIT)
def path_score(psi, phi, per_token, T, path):
    """Score of one label path (-inf if it uses a forbidden label or transition)."""
    s = psi[0, path[0]]
    for t in range(1, T):
        M = phi[t] if per_token else phi[0]
        s += M[path[t - 1], path[t]] + psi[t, path[t]]
    return s


@njit(**config.JIT)
def posterior_path(marg, psi, pen, constrained, T, L, gain, delta, back, path):
    """Most probable label per token; the allowed path of largest summed marginals
    when transitions are constrained (see the module docstring)."""
    if not constrained:
        for t in range(T):
            path[t] = lattice.argmax(marg[t])
        return
    for t in range(T):
        for y in range(L):
            gain[t, y] = marg[t, y] if psi[t, y] > -np.inf else -np.inf
    # ``not constrained`` is False here, a runtime bool: a literal False would compile a
    # second Viterbi
    lattice.viterbi(gain, pen, not constrained, T, L, delta, back, path)


@njit(**config.JIT)
def decode_shared(W, trans_offset, has_trans, norm, L, pen):
    """What every block reads: the transitions with their penalties ``pen[0]`` (``trans``),
    the base of the observation bigrams, and the exponentiated transitions with their shift."""
    raw_trans = lattice.transition_block(W, trans_offset, has_trans, L)
    trans = np.empty((L, L))
    for a in range(L):
        for b in range(L):
            trans[a, b] = raw_trans[a, b] + pen[0, a, b]
    # a MEMM normalises the raw scores first and gets its penalties afterwards
    bigram_base = raw_trans if norm == NORM_MEMM else trans
    exp_trans = np.empty((1, L, L))
    trans_shift = lattice.exp_shifted(trans, exp_trans[0])
    return trans, bigram_base, exp_trans, trans_shift


# Argument groups of the block decoder (``space`` as in crfkit.kernels.gradient):
#   shared = (trans, bigram_base, exp_trans, trans_shift)          from decode_shared
#   masks  = (token_ok, use_token_ok, pen, constrained)
#   asked  = (N, want_logz, want_marg, posterior)
#   out    = (paths (n_tok, N), scores (n_seq, N), logz (n_seq,), marginals (n_tok | 0, L))
@njit(**config.JIT)
def _buffers(Tmax, L, N, per_token, need_fb, exp_trans):
    """Work arrays of a block: lattice (psi, phi, tmp, no_dense), forward-backward
    (expu, expb, alpha, beta, scale), Viterbi (delta, back, path) and n-best lists."""
    TP = Tmax if per_token else 1
    FB = Tmax if need_fb else 1
    NB = Tmax if N > 1 else 1
    expb = np.empty((TP, L, L)) if per_token and need_fb else exp_trans
    return ((np.empty((Tmax, L)), np.empty((TP, L, L)), np.empty(L), np.empty((0, L))),
            (np.empty((FB, L)), expb, np.empty((FB, L)), np.empty((FB, L)), np.empty(FB)),
            (np.empty((Tmax, L)), np.empty((Tmax, L), dtype=np.int32),
             np.empty(Tmax, dtype=np.int32)),
            (np.empty((NB, L, N)), np.empty((NB, L, N), dtype=np.int32),
             np.empty((NB, L), dtype=np.int32), np.empty((N, Tmax), dtype=np.int32),
             np.empty(N)))


@njit(**config.JIT)
def _scores(W, space, tok_ptr, tok_obs, t0, T, L, per_token, norm, masks, shared, lat,
            tok_val):
    """psi and phi of one sequence in the model type's normalisation, masks applied last,
    so constraints renormalise the model's own distribution. ``tok_val``: occurrence
    values (None: all 1, resolved at compile time; :func:`lattice.occurrence_value`)."""
    token_ok, use_token_ok, pen, constrained = masks
    psi, phi, tmp, no_dense = lat
    lattice.chain_scores(W, space, tok_ptr, tok_obs, tok_val, t0, T, per_token, shared[1], psi,
                         phi, no_dense)
    if norm != NORM_GLOBAL:
        lattice.local_normalise(psi, phi, T, L, norm, tmp)
        if norm == NORM_MEMM and constrained:
            for t in range(1, T):
                for a in range(L):
                    for b in range(L):
                        phi[t, a, b] += pen[0, a, b]
    if use_token_ok:
        mask_tokens(psi, token_ok, t0, T, L)


@njit(**config.JIT)
def _marginals(psi, phi, per_token, T, L, trans_shift, fb, tmp):
    """log Z of one sequence; leaves the token marginals in fb's alpha."""
    expu, expb, alpha, beta, scale = fb
    if per_token:
        shift = lattice.exp_transitions(phi, T, expb)
    else:
        shift = trans_shift * (T - 1)
    logz = shift + lattice.forward_backward(psi, expb, per_token, T, L, expu, alpha, beta,
                                            scale, tmp)
    for t in range(T):
        for y in range(L):
            alpha[t, y] *= beta[t, y]
    return logz


@njit(**config.JIT)
def _paths(psi, phi, per_token, T, L, asked, masks, marg, gain, vit, nb, t0, s, out):
    """The posterior path, the best path or the N best of one sequence, into ``out``."""
    N, want_logz, want_marg, posterior = asked
    pen, constrained = masks[2], masks[3]
    out_paths, out_scores = out[0], out[1]
    delta, back, path = vit
    if posterior:
        posterior_path(marg, psi, pen, constrained, T, L, gain, delta, back, path)
        out_scores[s, 0] = path_score(psi, phi, per_token, T, path)
    elif N == 1:
        out_scores[s, 0] = lattice.viterbi(psi, phi, per_token, T, L, delta, back, path)
    if posterior or N == 1:
        for t in range(T):
            out_paths[t0 + t, 0] = path[t]
        return
    ndelta, nback, ncount, npaths, nscores = nb
    found = nbest_viterbi(psi, phi, per_token, T, L, N, ndelta, nback, ncount, npaths, nscores)
    for r in range(found):
        out_scores[s, r] = nscores[r]
        for t in range(T):
            out_paths[t0 + t, r] = npaths[r, t]


@njit(**config.JIT)
def decode_block(W, space, data, per_token, norm, L, s0, s1, masks, asked, shared, out,
                 tok_val):
    """Decode sequences s0..s1-1 of ``data`` = (seq_ptr, tok_ptr, tok_obs).

    ``out[0][tok, r]`` receives the label of rank ``r`` (left untouched where a
    sequence has fewer paths), ``out[1][s, r]`` its score, ``out[2][s]`` log Z
    when asked, ``out[3][tok]`` the token marginals when asked. ``pen[0]`` (0
    or -inf) is added to every transition; ``posterior`` replaces the Viterbi
    path by posterior decoding. ``norm`` is the model type's normalisation
    (``config.NORM_*``); ``tok_val`` the occurrence values (None: all 1).
    """
    seq_ptr, tok_ptr, tok_obs = data
    N, want_logz, want_marg, posterior = asked
    need_fb = want_logz or want_marg or posterior
    lat, fb, vit, nb = _buffers(lattice.longest_sequence(seq_ptr, s0, s1), L, N, per_token,
                                need_fb, shared[2])
    psi, phi, tmp = lat[0], lat[1], lat[2]
    lattice.copy_matrix(shared[0], phi[0])
    for s in range(s0, s1):
        t0 = seq_ptr[s]
        T = seq_ptr[s + 1] - t0
        if T == 0:
            continue
        _scores(W, space, tok_ptr, tok_obs, t0, T, L, per_token, norm, masks, shared, lat,
                tok_val)
        if need_fb:
            out[2][s] = _marginals(psi, phi, per_token, T, L, shared[3], fb, tmp)
            if want_marg:
                for t in range(T):
                    for y in range(L):
                        out[3][t0 + t, y] = fb[2][t, y]
        _paths(psi, phi, per_token, T, L, asked, masks, fb[2], fb[0], vit, nb, t0, s, out)


# --- batch driver ----------------------------------------------------------------------------
def decode(model: Weighted, data: Dataset, *, nbest: int = 1, log_z: bool = False,
           marginals: bool = False, posterior: bool = False,
           token_ok: np.ndarray | None = None, trans_ok: np.ndarray | None = None) -> Decoded:
    """Decode a batch: the ``nbest`` best paths (or the posterior path), optionally
    log Z and token marginals, under optional masks. The one decoder of every
    model type: labelling, scoring a development set while training, and the
    tests use it; :func:`crfkit.kernels.bestpath.best_paths` is its numpy twin.

    ``model`` is anything with ``space``, ``weights`` and ``normalisation``
    (a :class:`crfkit.model.model.Model`, or :class:`crfkit.kernels.bestpath.Weights`).
    ``token_ok`` (n_tokens, L) and ``trans_ok`` (L, L) are boolean masks of
    allowed labels / transitions (see the module docstring). A sequence with
    no allowed path gets score ``-inf``; the caller decides how to report it.
    """
    check_decode_request(nbest, posterior)
    s = model.space
    L = s.n_labels
    n_tok, n_seq = data.n_tokens, data.n_seqs
    out = (np.full((n_tok, nbest), -1, dtype=np.int32), np.full((n_seq, nbest), -np.inf),
           np.full(n_seq, np.nan), np.zeros((n_tok if marginals else 0, L)))
    masks = decode_masks(token_ok, trans_ok, n_tok, L)
    norm = model.normalisation
    per_token = s.n_b > 0 or norm == NORM_MEMM  # a MEMM's phi depends on psi
    if n_seq:
        blocks = partition_blocks(data.lengths, config.N_BLOCKS)
        weights, tok_val = read_only(model.weights), read_only(data.tok_val)
        shared = decode_shared(weights, s.trans_offset, s.has_trans, norm, L, masks[2])
        space = read_only_space(s.arrays())
        arrays = tuple(read_only(a) for a in (data.seq_ptr, data.tok_ptr, data.tok_obs))
        asked = (nbest, log_z, marginals, posterior)

        def block(b: int) -> None:
            decode_block(weights, space, arrays, per_token, norm, L, blocks[b], blocks[b + 1],
                         masks, asked, shared, out, tok_val)

        run_blocks(block, len(blocks) - 1)
    return Decoded(paths=out[0], scores=out[1], log_z=out[2],
                   marginals=out[3] if marginals else None)


def check_decode_request(nbest: int, posterior: bool) -> None:
    """The one-line refusals of a decoding request, for every structure's decoder."""
    if nbest < 1:
        raise UsageError(f"nbest must be >= 1, got {nbest}")
    if posterior and nbest > 1:
        raise UsageError("posterior decoding gives one path: it cannot be combined with nbest")


def decode_masks(token_ok: np.ndarray | None, trans_ok: np.ndarray | None, n_tok: int,
                 L: int) -> tuple:
    """The ``masks`` group: token mask, whether it applies, transition penalties
    (1, L, L) and whether any transition is forbidden."""
    use_token_ok = token_ok is not None
    if token_ok is None:
        token_ok = np.ones((1, L), dtype=np.bool_)
    elif token_ok.shape != (n_tok, L):
        raise ValueError(f"token_ok has shape {token_ok.shape}, expected {(n_tok, L)}")
    constrained = trans_ok is not None and not trans_ok.all()
    pen = np.zeros((1, L, L))  # (1, L, L): the shape of a transition block shared by all tokens
    if trans_ok is not None:
        pen[0][~trans_ok] = -np.inf
    return np.ascontiguousarray(token_ok, dtype=np.bool_), use_token_ok, pen, constrained
