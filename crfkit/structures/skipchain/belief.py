"""Numba kernels of the skip-chain CRF: loopy belief propagation over a document graph.

A document is a run of sentences (chains); skip edges join tokens of one
document (repeated capitalised words, say). The graph of a document is its
chains plus its skip edges, with loops as soon as there are skip edges.

Shapes and meaning (``L`` labels, ``E`` skip edges in all):

* ``psi_doc[t, y]``  unigram scores of the document's token ``t`` (computed once
                     per document and evaluation);
* ``S[e, a, b]``     the score of skip edge ``e``: ``a`` the label of the edge's
                     earlier end ``i``, ``b`` that of its later end ``j``; the sum of
                     the edge's weight blocks ``k`` (``eb_blk[eb_ptr[e]:eb_ptr[e+1]]``:
                     its skip pattern's block, then the blocks of the observations
                     that condition it), ``W[skip_offset + (k * L + a) * L + b]``
                     (:func:`edge_scores`);
* ``Bel[e, a, b]``   the belief of skip edge ``e``, added to the blocks' gradient
                     by :func:`scatter_beliefs` in edge order;
* ``msg[e, 0, :]``   log message from skip edge ``e`` into its end ``i``;
  ``msg[e, 1, :]``   into its end ``j``; normalised to log-sum-exp 0. Kept
                     between calls, so each evaluation starts from the messages of
                     the last one (warm start);
* ``logb[t, y]``     log belief (marginal) of a token that has skip edges.

Schedule (a tree-based one: the chains are the trees). Given the skip
messages, every chain is a tree whose tokens carry the messages as extra unary
scores, so one scaled forward-backward gives *all* of its chain messages at
their fixed point at once, and its token beliefs. A skip message is recomputed
from its end's cavity ``c_i = log b_i - msg[e, 0]`` (the belief of ``i`` without
what ``e`` sent):

    new msg[e, 1, b] = log sum_a exp(c_i[a] + S[a, b])      (sum-product)
    new msg[e, 0, a] = log sum_b exp(S[a, b] + c_j[b])
    msg = (1 - damping) * new + damping * old                (log domain, renormalised)

Sum-product rounds are serial sweeps: the chains run in document order (every
other round in reverse), and each sends the messages out of its tokens as soon
as it has run (:func:`crfkit.structures.skipchain.messages.send_from_chain`),
so the chains after it in the sweep already see them: a message crosses a
path of edges in one round, where a flooding round moves it one edge. Max-product
(labelling, with maxima for the sums) floods: every chain runs, then every edge
is updated. Either way, until no message moves by more than ``tol`` (in log space)
or after ``maxiter`` rounds; a round reruns only the chains whose incoming
messages moved by more than ``tol`` since they last ran. Sum-product rounds run
the passes over the part of each chain between its first and last token with
edges (:mod:`crfkit.structures.skipchain.window`) and compute the messages
through exponentiated edge factors (:mod:`crfkit.structures.skipchain.messages`):
the same formulas, in fewer operations.

At a fixed point the Bethe approximation of log Z is

    log Z_B = sum_s log Z'_s + sum_e log sum_ab exp(c_i[a] + S[a, b] + c_j[b])

(``Z'_s``: the partition function of chain ``s`` with the messages as unary
scores), and its gradient is the beliefs: token and chain-pair marginals of the
augmented chains for the chain features, and for a skip edge
``b_e(a, b) = exp(c_i[a] + S[a, b] + c_j[b] - log Z_e)``. A chain without skip
edges is just forward-backward (its ``Z'`` is its exact Z); a document without
skip edges is exact.

Argument groups (besides ``space``/``data`` of :mod:`crfkit.kernels.loss`)::

    graph = (doc_ptr, edge_ptr, e_i, e_j, e_pat, inc_ptr, inc_edge, inc_side)

``doc_ptr[d]:doc_ptr[d+1]`` are document ``d``'s sequences, ``edge_ptr`` its
edges; ``e_i < e_j`` are global token indices and ``e_pat`` the skip pattern;
``inc_ptr[t]:inc_ptr[t+1]`` index ``inc_edge``/``inc_side`` (0: the token is the
edge's ``i``, 1: its ``j``) for the edges of token ``t``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from crfkit.config import JIT
from crfkit.kernels.gradient import (
    posterior_errors,
    shared_pair_expectations,
    token_pair_expectations,
    unigram_expectations,
    work_buffers,
)
from crfkit.kernels.lattice import flush_dense, longest_sequence, unigram_scores, viterbi
from crfkit.structures.skipchain.chain_pass import (
    augmented,
    chain_beliefs,
    chain_pass,
    chain_phi,
    fixed_exps,
    has_edges,
    max_marginals,
    store_beliefs,
)
from crfkit.structures.skipchain.messages import cavities, row_max, send_from_chain, update_edges
from crfkit.structures.skipchain.window import chain_ends, edge_span, window_beliefs


@njit(**JIT)
def longest_document(seq_ptr, doc_ptr, d0, d1):
    """Tokens of the longest of documents d0..d1-1 (at least 1)."""
    longest = 1
    for d in range(d0, d1):
        longest = max(longest, seq_ptr[doc_ptr[d + 1]] - seq_ptr[doc_ptr[d]])
    return longest


@njit(**JIT)
def init_messages(msg):
    """Uniform messages (log 1/L)."""
    L = msg.shape[2]
    v = -np.log(L)
    for e in range(msg.shape[0]):
        for s in range(2):
            for y in range(L):
                msg[e, s, y] = v


@njit(**JIT)
def edge_scores(W, skip_offset, L, eb_ptr, eb_blk, S):
    """S[e] = the sum of edge e's weight blocks (module docstring)."""
    for e in range(S.shape[0]):
        for a in range(L):
            for b in range(L):
                S[e, a, b] = 0.0
        for k in range(eb_ptr[e], eb_ptr[e + 1]):
            base = skip_offset + eb_blk[k] * L * L
            for a in range(L):
                for b in range(L):
                    S[e, a, b] += W[base + a * L + b]


@njit(**JIT)
def scatter_beliefs(Bel, eb_ptr, eb_blk, skip_offset, L, g):
    """g[block k] += Bel[e] for every weight block k of every edge e, in edge order (so the
    sums do not depend on how documents were split among threads)."""
    for e in range(Bel.shape[0]):
        for k in range(eb_ptr[e], eb_ptr[e + 1]):
            base = skip_offset + eb_blk[k] * L * L
            for a in range(L):
                for b in range(L):
                    g[base + a * L + b] += Bel[e, a, b]


@njit(inline="always", **JIT)
def _window_round(psi_doc, expu_doc, g0, t0, T, L, graph, msg, M, MT, fresh, ends, work, logb,
                  tmp, row):
    """A sum-product round over chain t0..t0+T-1's span of tokens with edges
    (:mod:`crfkit.structures.skipchain.window`; ``fresh``: the document's first round,
    which takes the span's ends); False if the caller must run the whole chain."""
    first, last = edge_span(graph.inc_ptr, t0, T)
    c = t0 - g0
    pre, suf = ends[0][c], ends[1][c]
    if fresh:
        chain_ends(expu_doc, c, T, first, last, L, M, MT, pre, suf, tmp, row)
    return window_beliefs(psi_doc, expu_doc, g0, t0, first, last, L, graph.inc_ptr,
                          graph.inc_edge, graph.inc_side, msg, M, MT, pre, suf, work, logb)


@njit(**JIT)
def _propagate(W, space, data, graph, d, L, per_token, trans, exp_trans, trans_shift, expw,
               skip, psi_doc, expu_doc, logb, msg, work, bp, max_product, scratch, marks, ends):
    """Loopy BP on document d (schedule: module docstring). Returns the rounds run, negated
    when ``maxiter`` rounds ended without convergence; 0 for a document without edges.

    A round runs only the chains whose incoming messages moved by more than ``tol``
    since they last ran (``marks``: per document token its chain, per chain a flag, and
    a row per skip-edge end of a chain for the messages it sends); ``ends``: the rows of
    :func:`_window_round`, by the chain's first token.
    """
    seq_ptr, tok_ptr, tok_obs, labels = data
    doc_ptr, edge_ptr, e_i, e_j, e_pat, inc_ptr, inc_edge, inc_side = graph
    maxiter, tol, damping = bp
    e0 = edge_ptr[d]
    e1 = edge_ptr[d + 1]
    if e1 == e0:
        return 0
    s0 = doc_ptr[d]
    s1 = doc_ptr[d + 1]
    g0 = seq_ptr[s0]
    psi, phi, expu, expb, alpha, beta, scale, pair, tmp = work
    ci, cj, new, row = scratch
    sent_of, dirty, sent = marks
    for s in range(s0, s1):
        for g in range(seq_ptr[s], seq_ptr[s + 1]):
            sent_of[g - g0] = s - s0
        dirty[s - s0] = True
    MT = np.ascontiguousarray(exp_trans[0].T)
    for it in range(int(maxiter)):
        change = 0.0
        backwards = not max_product and it % 2 == 1  # serial sweeps alternate
        for k in range(s1 - s0):
            s = s1 - 1 - k if backwards else s0 + k
            t0 = seq_ptr[s]
            T = seq_ptr[s + 1] - t0
            if T == 0 or not dirty[s - s0] or not has_edges(inc_ptr, t0, T):
                continue
            dirty[s - s0] = False
            if max_product:
                augmented(psi_doc, g0, t0, T, L, inc_ptr, inc_edge, inc_side, msg, psi)
                chain_phi(W, space, tok_ptr, tok_obs, t0, T, per_token, trans, phi)
                max_marginals(psi, phi, per_token, T, L, alpha, beta, logb, t0, inc_ptr, g0)
                continue
            if per_token or not _window_round(psi_doc, expu_doc, g0, t0, T, L, graph, msg,
                                              exp_trans[0], MT, it == 0, ends, work, logb,
                                              new, row):
                chain_beliefs(W, space, tok_ptr, tok_obs, t0, T, L, per_token, trans,
                              exp_trans, trans_shift, expw, psi_doc, expu_doc, g0, graph, msg,
                              work, logb)
            moved = send_from_chain(skip, L, inc_ptr[t0], inc_ptr[t0 + T], inc_edge, inc_side,
                                    e_i, e_j, g0, logb, msg, damping, ci, row, sent, tol,
                                    sent_of, dirty)
            if moved > change or moved != moved:
                change = moved
        if max_product:  # flooding: every edge, once every chain has run
            change = update_edges(skip, L, e0, e1, e_i, e_j, g0, logb, msg, damping,
                                  max_product, ci, cj, new, row, tol, sent_of, dirty)
        if change <= tol:
            return it + 1
    return -int(maxiter)


@njit(inline="always", **JIT)
def _edge_belief_factors(S, ES, e, L, ci, cj, Bel):
    """Bel[e] = edge e's belief through its factors ``ES`` and the cavities' exponentials
    (18 exponentials instead of L * L); returns its log Z_e, or NaN (``Bel[e]`` then
    garbage) if the normaliser underflows or overflows."""
    mi = row_max(ci, L)
    mj = row_max(cj, L)
    ms = -np.inf
    for a in range(L):
        for b in range(L):
            ms = max(ms, S[e, a, b])
    if not (np.isfinite(mi) and np.isfinite(mj) and np.isfinite(ms)):
        return np.nan
    for y in range(L):
        ci[y] = np.exp(ci[y] - mi)
        cj[y] = np.exp(cj[y] - mj)
    z = 0.0
    for a in range(L):
        for b in range(L):
            v = ci[a] * ES[e, a, b] * cj[b]
            Bel[e, a, b] = v
            z += v
    if not (z > 0.0 and z < np.inf):
        return np.nan
    inv = 1.0 / z
    for a in range(L):
        for b in range(L):
            Bel[e, a, b] *= inv
    return mi + mj + ms + np.log(z)


@njit(**JIT)
def _skip_expectations(skip, L, e0, e1, e_i, e_j, g0, logb, msg, Bel, ci, cj, pair):
    """Bel[e] = the beliefs of the skip edges e0..e1-1; returns the sum of their log Z_e.
    Through the edges' factors, or the log-sum-exp form where they underflow."""
    S, ES = skip
    total = 0.0
    for e in range(e0, e1):
        cavities(e, e_i, e_j, g0, L, logb, msg, ci, cj)
        lz = _edge_belief_factors(S, ES, e, L, ci, cj, Bel)
        if lz == lz:
            total += lz
            continue
        cavities(e, e_i, e_j, g0, L, logb, msg, ci, cj)
        m = -np.inf
        for a in range(L):
            for b in range(L):
                v = ci[a] + S[e, a, b] + cj[b]
                pair[a, b] = v
                if v > m:
                    m = v
        acc = 0.0
        for a in range(L):
            for b in range(L):
                acc += np.exp(pair[a, b] - m)
        lz = m + np.log(acc)
        for a in range(L):
            for b in range(L):
                Bel[e, a, b] = np.exp(pair[a, b] - lz)
        total += lz
    return total


@njit(**JIT)
def _buffers(seq_ptr, doc_ptr, inc_ptr, d0, d1, L, per_token, exp_trans):
    """Work buffers of a block of documents d0..d1-1: the chain ``work`` tuple, the
    document's scores and beliefs, four label rows, the marks of its chains with a row
    per skip-edge end of the chain that has most, and the span ends of its chains."""
    Tmax = longest_sequence(seq_ptr, doc_ptr[d0], doc_ptr[d1])
    Dmax = longest_document(seq_ptr, doc_ptr, d0, d1)
    work = work_buffers(Tmax, L, per_token, exp_trans)
    scratch = (np.empty(L), np.empty(L), np.empty(L), np.empty(L))
    most_incidences = 0
    for s in range(doc_ptr[d0], doc_ptr[d1]):
        most_incidences = max(most_incidences, inc_ptr[seq_ptr[s + 1]] - inc_ptr[seq_ptr[s]])
    marks = (np.empty(Dmax, dtype=np.int64), np.empty(Dmax, dtype=np.bool_),
             np.empty((most_incidences, L)))
    ends = (np.empty((Dmax, L)), np.empty((Dmax, L)))
    return (work, np.empty((Dmax, L)), np.empty((Dmax, L)), np.empty((Dmax, L)), scratch, marks,
            Tmax, ends)


@njit(inline="always", **JIT)
def _settled_chains(W, space, data, graph, d, L, per_token, skip, trans, exp_trans, trans_shift,
                    expw, Wd, bp, max_product, msg, buffers, bp_counts):
    """Document d's unigram scores (into the buffers' ``psi_doc``) and its belief
    propagation (sum- or max-product) until it settles: the start of every document in
    training and in decoding. Returns the document's non-empty chains (none for an empty
    document: nothing done). ``bp_counts`` += (the rounds run, 1 if BP did not settle)."""
    seq_ptr, tok_ptr, tok_obs = data[0], data[1], data[2]
    u_ptr, u_lab = space[0], space[1]
    work, psi_doc, expu_doc, logb, scratch, marks, Tmax, ends = buffers
    s0, s1 = graph.doc_ptr[d], graph.doc_ptr[d + 1]
    g0 = seq_ptr[s0]
    D = seq_ptr[s1] - g0
    chains = np.empty(s1 - s0 if D > 0 else 0, dtype=np.int64)
    if D == 0:
        return chains
    unigram_scores(W, tok_ptr, tok_obs, None, u_ptr, u_lab, g0, D, psi_doc, Wd)
    if not max_product:
        fixed_exps(psi_doc, D, L, g0, graph.inc_ptr, expu_doc)
    r = _propagate(W, space, data, graph, d, L, per_token, trans, exp_trans, trans_shift, expw,
                   skip, psi_doc, expu_doc, logb, msg, work, bp, max_product, scratch, marks,
                   ends)
    bp_counts[0] += abs(r)
    if r < 0:
        bp_counts[1] += 1
    n = 0
    for c in range(s0, s1):
        if seq_ptr[c + 1] > seq_ptr[c]:
            chains[n] = c
            n += 1
    return chains[:n]


@njit(inline="always", **JIT)
def _chain_expectations(G, Gd, space, tok_ptr, tok_obs, t0, T, L, per_token, work, g0,
                        inc_ptr, logb):
    """A chain's expected label-pair and unigram counts into G (``Gd``: the dense rows),
    and the log beliefs of its tokens that have skip edges, from its lattice in ``work``."""
    u_ptr, u_lab, b_ptr, b_prev, b_cur, n_u, trans_offset, has_trans = space
    psi, phi, expu, expb, alpha, beta, scale, pair, tmp = work
    if per_token:
        token_pair_expectations(G, tok_ptr, tok_obs, None, b_ptr, b_prev, b_cur, n_u,
                                trans_offset, has_trans, t0, T, L, alpha, beta, expu,
                                expb, scale, pair, tmp)
    elif has_trans and T > 1:
        shared_pair_expectations(G, trans_offset, T, L, alpha, beta, expu, expb, scale,
                                 pair, tmp)
    store_beliefs(t0, T, L, g0, inc_ptr, alpha, beta, logb)
    unigram_expectations(G, tok_ptr, tok_obs, None, u_ptr, u_lab, t0, T, L, alpha, beta, Gd)


@njit(**JIT)
def skip_loss_block(W, space, data, graph, L, per_token, skip, d0, d1, trans, exp_trans,
                    trans_shift, expw, Wd, bp, msg, G, Bel, out):
    """Documents d0..d1-1: Bethe log Z into out[0], the chain beliefs (expected counts)
    into G, the skip edges' into Bel (their rows of it).

    ``Wd``: dense rows of the most frequent observations' unigram weights
    (:func:`crfkit.kernels.lattice.dense_rows`; may have no rows).

    out[1] / out[2]: token / sequence errors of posterior decoding; out[3] the
    BP rounds run, out[4] the documents whose BP did not converge.
    """
    seq_ptr, tok_ptr, tok_obs, labels = data
    doc_ptr, edge_ptr, e_i, e_j, e_pat, inc_ptr, inc_edge, inc_side = graph
    u_ptr, u_lab = space[0], space[1]
    buffers = _buffers(seq_ptr, doc_ptr, inc_ptr, d0, d1, L, per_token, exp_trans)
    work, logb, scratch = buffers[0], buffers[3], buffers[4]
    alpha, pair = work[4], work[7]
    Gd = np.zeros(Wd.shape)  # dense rows, as crfkit.kernels.loss does
    G[:] = 0.0
    logz_sum = 0.0
    tok_err = 0
    seq_err = 0
    bp_counts = out[3:5]
    bp_counts[:] = 0.0
    # sum-product BP, given as a bool rather than the literal False, which would make
    # Numba compile _propagate again beside the decoder's version
    max_product = np.bool_(False)
    for d in range(d0, d1):
        g0 = seq_ptr[doc_ptr[d]]
        for s in _settled_chains(W, space, data, graph, d, L, per_token, skip, trans, exp_trans,
                                 trans_shift, expw, Wd, bp, max_product, msg, buffers,
                                 bp_counts):
            t0 = seq_ptr[s]
            T = seq_ptr[s + 1] - t0
            shift, logz = chain_pass(W, space, tok_ptr, tok_obs, t0, T, L, per_token, trans,
                                     exp_trans, trans_shift, expw, buffers[1], buffers[2], g0,
                                     graph, msg, work)
            logz_sum += shift
            logz_sum += logz
            _chain_expectations(G, Gd, space, tok_ptr, tok_obs, t0, T, L, per_token, work, g0,
                                inc_ptr, logb)
            wrong = posterior_errors(alpha, labels, t0, T)
            tok_err += wrong
            if wrong:
                seq_err += 1
        if edge_ptr[d + 1] > edge_ptr[d]:
            logz_sum += _skip_expectations(skip, L, edge_ptr[d], edge_ptr[d + 1], e_i, e_j, g0,
                                           logb, msg, Bel, scratch[0], scratch[1], pair)
    flush_dense(G, Gd, u_ptr, u_lab)
    out[0] = logz_sum
    out[1] = tok_err
    out[2] = seq_err


@njit(inline="always", **JIT)
def _best_chain_path(W, space, data, graph, d, s, per_token, trans, msg, buffers, back, path,
                     paths):
    """Chain s's Viterbi path with the skip messages as unary scores (max-product BP)."""
    seq_ptr, tok_ptr, tok_obs = data[0], data[1], data[2]
    work, psi_doc = buffers[0], buffers[1]
    psi, phi, expu = work[0], work[1], work[2]
    L = psi.shape[1]
    g0 = seq_ptr[graph.doc_ptr[d]]
    t0 = seq_ptr[s]
    T = seq_ptr[s + 1] - t0
    augmented(psi_doc, g0, t0, T, L, graph.inc_ptr, graph.inc_edge, graph.inc_side, msg, psi)
    chain_phi(W, space, tok_ptr, tok_obs, t0, T, per_token, trans, phi)
    viterbi(psi, phi, per_token, T, L, expu, back, path)
    for t in range(T):
        paths[t0 + t] = path[t]


@njit(inline="always", **JIT)
def _best_chain_beliefs(W, space, data, graph, d, s, L, per_token, trans, exp_trans,
                        trans_shift, expw, msg, buffers, paths, marginals, keep):
    """Chain s's labels of highest belief (sum-product BP; ``keep``: the beliefs into
    ``marginals``); returns its log Z' (exact without skip edges)."""
    seq_ptr, tok_ptr, tok_obs = data[0], data[1], data[2]
    work = buffers[0]
    alpha, beta = work[4], work[5]
    g0 = seq_ptr[graph.doc_ptr[d]]
    t0 = seq_ptr[s]
    T = seq_ptr[s + 1] - t0
    shift, logz = chain_pass(W, space, tok_ptr, tok_obs, t0, T, L, per_token, trans,
                             exp_trans, trans_shift, expw, buffers[1], buffers[2], g0, graph,
                             msg, work)
    for t in range(T):
        best = 0
        for y in range(L):
            v = alpha[t, y] * beta[t, y]
            if keep:
                marginals[t0 + t, y] = v
            if v > alpha[t, best] * beta[t, best]:
                best = y
        paths[t0 + t] = best
    return shift + logz


@njit(**JIT)
def skip_decode_block(W, space, data, graph, L, per_token, skip, d0, d1, trans,
                      exp_trans, trans_shift, expw, bp, max_product, msg, paths, marginals, keep,
                      log_z, out):
    """Documents d0..d1-1: the label of every token into ``paths``.

    ``max_product``: max-product BP, then Viterbi of each chain with the skip
    messages as unary scores (exact Viterbi without skip edges). Otherwise
    sum-product BP and the label of highest belief (posterior decoding); with
    ``keep`` the beliefs go to ``marginals``. ``log_z[s]`` gets log Z' of each
    chain (its exact log Z without skip edges). out[0] / out[1]: BP rounds run,
    documents not converged.
    """
    seq_ptr = data[0]
    buffers = _buffers(seq_ptr, graph.doc_ptr, graph.inc_ptr, d0, d1, L, per_token, exp_trans)
    Tmax = buffers[6]
    Wd = np.zeros((0, L))
    back = np.empty((Tmax, L), dtype=np.int32)
    path = np.empty(Tmax, dtype=np.int32)
    bp_counts = out[0:2]
    bp_counts[:] = 0.0
    for d in range(d0, d1):
        for s in _settled_chains(W, space, data, graph, d, L, per_token, skip, trans, exp_trans,
                                 trans_shift, expw, Wd, bp, max_product, msg, buffers,
                                 bp_counts):
            if max_product:
                _best_chain_path(W, space, data, graph, d, s, per_token, trans, msg, buffers,
                                 back, path, paths)
            else:
                log_z[s] = _best_chain_beliefs(W, space, data, graph, d, s, L, per_token, trans,
                                               exp_trans, trans_shift, expw, msg, buffers,
                                               paths, marginals, keep)
