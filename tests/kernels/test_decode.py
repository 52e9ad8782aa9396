"""n-best, marginals, posterior, forced and IOB-constrained decoding vs brute force.

Two levels: the list-Viterbi kernel on random lattices, and the whole
``crfkit.labelling.label.label`` pipeline on small trained models whose weights are
then replaced by random floats (so the lattices are rich and ties unlikely);
the oracle is :mod:`tests.naive`, restricted to the allowed paths.
"""

from __future__ import annotations

import numpy as np
import pytest

from crfkit.errors import InputError, UsageError
from crfkit.features.patterns import parse_patterns
from crfkit.io.reader import Sequence
from crfkit.kernels import lattice
from crfkit.kernels.decoder import nbest_viterbi
from crfkit.labelling.constraints import iob_masks
from crfkit.labelling.label import encode, label
from crfkit.training.train import TrainOptions, train
from tests import naive
from tests.helpers import decode_scored

LABELS = ["O", "B-A", "I-A", "B-B", "I-B"]
WORDS = ["x", "y", "z", "w"]
TAGS = ["P", "Q"]


# --- the kernel ------------------------------------------------------------------------------
def run_nbest(psi, phi, per_token, N):
    T, L = psi.shape
    delta = np.empty((T, L, N))
    back = np.empty((T, L, N), dtype=np.int32)
    count = np.empty((T, L), dtype=np.int32)
    paths = np.empty((N, T), dtype=np.int32)
    scores = np.empty(N)
    found = nbest_viterbi(psi, phi if per_token else phi[1:2], per_token, T, L, N, delta, back,
                          count, paths, scores)
    return [tuple(int(y) for y in paths[r, :T]) for r in range(found)], scores[:found]


def lattice_for_kernel(phi, per_token):
    """The phi the brute force sees: per token, or phi[1] everywhere."""
    return phi if per_token else np.repeat(phi[1:2], len(phi), axis=0)


@pytest.mark.parametrize("per_token", [False, True])
@pytest.mark.parametrize("T,L,N", [(1, 3, 2), (2, 2, 4), (2, 2, 9), (3, 3, 5), (4, 3, 7),
                                   (5, 2, 40), (4, 4, 3), (3, 5, 125)])
def test_nbest_kernel_matches_enumeration(T, L, N, per_token):
    rng = np.random.default_rng(1000 + 10 * T + L + N)
    psi = rng.normal(scale=1.5, size=(T, L))
    phi = rng.normal(scale=1.5, size=(max(T, 2), L, L))
    paths, scores = run_nbest(psi, phi, per_token, N)
    want = naive.nbest(psi, lattice_for_kernel(phi, per_token)[:T], N)
    assert paths == [p for p, _ in want]  # exact order: random floats have no ties
    np.testing.assert_allclose(scores, [s for _, s in want], rtol=1e-12)
    assert len(paths) == min(N, L**T)


@pytest.mark.parametrize("seed", range(6))
def test_nbest_kernel_is_exact_with_ties(seed):
    """Integer scores tie a lot: the N scores are still the N best, and N=1 is Viterbi."""
    rng = np.random.default_rng(seed)
    T, L, N = 4, 3, 10
    psi = rng.integers(-1, 2, size=(T, L)).astype(float)
    phi = rng.integers(-1, 2, size=(T, L, L)).astype(float)
    paths, scores = run_nbest(psi, phi, True, N)
    want = naive.nbest(psi, phi, N)
    np.testing.assert_allclose(scores, [s for _, s in want])
    assert len(set(paths)) == N
    for p, s in zip(paths, scores, strict=True):
        assert naive.path_score(psi, phi, p) == pytest.approx(s)
    delta = np.empty((T, L))
    back = np.empty((T, L), dtype=np.int32)
    path = np.empty(T, dtype=np.int32)
    lattice.viterbi(psi, phi, True, T, L, delta, back, path)
    assert run_nbest(psi, phi, True, 1)[0] == [tuple(path)]


@pytest.mark.parametrize("seed", range(8))
def test_nbest_kernel_with_masks(seed):
    rng = np.random.default_rng(50 + seed)
    T, L, N = 4, 3, 6
    psi = rng.normal(size=(T, L))
    phi = rng.normal(size=(T, L, L))
    token_ok = rng.random((T, L)) < 0.7
    trans_ok = rng.random((L, L)) < 0.6
    psi[~token_ok] = -np.inf
    phi[:, ~trans_ok] = -np.inf
    paths, scores = run_nbest(psi, phi, True, N)
    want = naive.nbest(np.where(token_ok, psi, 0.0), np.where(trans_ok, phi, 0.0), N,
                       token_ok, trans_ok)
    assert paths == [p for p, _ in want]
    np.testing.assert_allclose(scores, [s for _, s in want], rtol=1e-12)


# --- the pipeline on small models ------------------------------------------------------------
def random_sequences(rng, n, max_len=5, forced=False):
    out = []
    for _ in range(n):
        T = int(rng.integers(1, max_len + 1))
        rows = [[str(rng.choice(WORDS)), str(rng.choice(TAGS))] for _ in range(T)]
        if forced:
            for row in rows:
                row.append(str(rng.choice(LABELS)) if rng.random() < 0.3 else "_")
        out.append(Sequence(rows=rows, lines=list(range(1, T + 1))))
    return out


def make_model(kind: str, seed: int = 0):
    """A model trained one iteration on random IOB data, then given random weights.

    ``kind``: ``dense`` (CRF, transitions only), ``per-token`` (CRF with
    observation bigrams), ``memm`` or ``maxent``.
    """
    rng = np.random.default_rng(seed)
    text = "U00:%x[0,0]\nU01:%x[-1,0]/%x[0,0]\nU02:%x[0,1]\n"
    if kind != "maxent":
        text += "B\n"
    if kind in ("per-token", "memm"):
        text += "b:%x[0,1]\n"
    data = [Sequence(rows=[r + [str(rng.choice(LABELS))] for r in s.rows], lines=s.lines)
            for s in random_sequences(rng, 40)]
    model_type = kind if kind in ("memm", "maxent") else "crf"
    model = train(parse_patterns(text), data,
                  TrainOptions(maxiter=1, nthread=1, model_type=model_type))
    assert model.model_type == model_type
    model.weights = rng.normal(scale=1.2, size=model.weights.shape)
    return model


@pytest.fixture(scope="module", params=["dense", "per-token", "memm", "maxent"])
def model(request):
    return make_model(request.param)


def scores_of(model, seq):
    """psi (T, L) and phi (T, L, L) of one sequence, as the brute force wants them:
    for a MEMM or MaxEnt, path scores are log-probabilities."""
    data = encode(model, [seq])
    s, W = model.space, model.weights
    T, L = len(seq.rows), s.n_labels
    psi = np.empty((T, L))
    lattice.unigram_scores(W, data.tok_ptr, data.tok_obs, None, s.u_ptr, s.u_lab, 0, T, psi,
                           np.empty((0, L)))
    trans = lattice.transition_block(W, s.trans_offset, s.has_trans, L)
    phi = np.repeat(trans[None], T, axis=0)
    if s.n_b:
        lattice.bigram_scores(W, data.tok_ptr, data.tok_obs, None, s.b_ptr, s.b_prev, s.b_cur,
                              s.n_u, trans, 0, T, phi)
    return naive.locally_normalised(psi, phi, model.model_type)


def masks(model, seq, *, force=False, iob=False):
    T, L = len(seq.rows), len(model.labels)
    token_ok = np.ones((T, L), dtype=bool)
    trans_ok = None
    if force:
        for t, row in enumerate(seq.rows):
            if row[-1] != "_":
                token_ok[t] = False
                token_ok[t, model.labels.index(row[-1])] = True
    if iob:
        start_ok, trans_ok = iob_masks(model.labels)
        token_ok[0] &= start_ok
    return token_ok, trans_ok


def feasible(model, seq, **kw):
    token_ok, trans_ok = masks(model, seq, **kw)
    return any(True for _ in naive.all_paths(len(seq.rows), len(model.labels), token_ok,
                                             trans_ok))


def check_nbest(result, psi, phi, n, token_ok=None, trans_ok=None):
    """The result's paths are distinct, allowed, scored right, and the n best."""
    want = naive.nbest(psi, phi, n, token_ok, trans_ok)
    log_z = naive.log_partition(psi, phi, token_ok, trans_ok)
    paths = [tuple(int(y) for y in row) for row in result.ids]
    assert len(set(paths)) == len(paths) == len(want)
    got = [naive.path_score(psi, phi, p) for p in paths]
    np.testing.assert_allclose(got, [s for _, s in want], rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(result.log_probs, np.array(got) - log_z, atol=1e-9)
    assert all(naive.allowed(p, token_ok, trans_ok) for p in paths)


CASES = [dict(), dict(force=True), dict(iob=True), dict(force=True, iob=True)]


@pytest.mark.parametrize("case", CASES, ids=["free", "force", "iob", "force+iob"])
@pytest.mark.parametrize("n", [1, 3, 12])
def test_nbest_matches_brute_force(model, case, n):
    rng = np.random.default_rng(n)
    seqs = [s for s in random_sequences(rng, 12, forced=True) if feasible(model, s, **case)]
    results = label(model, seqs, nbest=n, force=case.get("force", False),
                    constraints="iob" if case.get("iob") else None)
    for seq, result in zip(seqs, results, strict=True):
        psi, phi = scores_of(model, seq)
        token_ok, trans_ok = masks(model, seq, **case)
        check_nbest(result, psi, phi, n, token_ok, trans_ok)
        assert result.paths[0] == [model.labels[y] for y in result.ids[0]]


@pytest.mark.parametrize("case", CASES, ids=["free", "force", "iob", "force+iob"])
def test_marginals_and_posterior_match_brute_force(model, case):
    rng = np.random.default_rng(7)
    seqs = [s for s in random_sequences(rng, 12, forced=True) if feasible(model, s, **case)]
    kw = dict(force=case.get("force", False), constraints="iob" if case.get("iob") else None)
    marg_results = label(model, seqs, marginals=True, **kw)
    post_results = label(model, seqs, posterior=True, marginals=True, **kw)
    for seq, mres, pres in zip(seqs, marg_results, post_results, strict=True):
        psi, phi = scores_of(model, seq)
        token_ok, trans_ok = masks(model, seq, **case)
        want, _ = naive.marginals(psi, phi, token_ok, trans_ok)
        np.testing.assert_allclose(mres.marginals, want, atol=1e-10)
        np.testing.assert_allclose(mres.marginals.sum(axis=1), 1.0, atol=1e-12)
        post = tuple(int(y) for y in pres.ids[0])
        assert naive.allowed(post, token_ok, trans_ok)
        if trans_ok is None:  # plain per-token argmax (ties: any maximum)
            picked = want[np.arange(len(post)), post]
            np.testing.assert_allclose(picked, want.max(axis=1), atol=1e-12)
        else:  # the allowed path of largest summed marginals
            best = naive.max_expected_accuracy(psi, phi, token_ok, trans_ok)
            assert sum(want[t, y] for t, y in enumerate(post)) == pytest.approx(
                sum(want[t, y] for t, y in enumerate(best)), abs=1e-12)
        log_z = naive.log_partition(psi, phi, token_ok, trans_ok)
        assert pres.log_probs[0] == pytest.approx(naive.path_score(psi, phi, post) - log_z)


def test_forced_labels_are_never_violated(model):
    rng = np.random.default_rng(3)
    seqs = random_sequences(rng, 30, forced=True)
    for n in (1, 4):
        for seq, result in zip(seqs, label(model, seqs, nbest=n, force=True), strict=True):
            for path in result.paths:
                for row, y in zip(seq.rows, path, strict=True):
                    assert row[-1] in ("_", y)


def test_iob_rules_hold_in_every_output(model):
    rng = np.random.default_rng(4)
    seqs = random_sequences(rng, 40, max_len=6)
    start_ok, trans_ok = iob_masks(model.labels)
    outputs = [r.ids for r in label(model, seqs, nbest=5, constraints="iob")]
    outputs += [r.ids for r in label(model, seqs, posterior=True, constraints="iob")]
    for ids in outputs:
        for path in ids:
            assert start_ok[path[0]]
            assert all(trans_ok[a, b] for a, b in zip(path[:-1], path[1:], strict=True))


def test_batches_and_blocks_do_not_change_results(model):
    """Many sequences (several parallel blocks) give what one-at-a-time labelling gives."""
    rng = np.random.default_rng(5)
    seqs = random_sequences(rng, 200, max_len=8)
    together = label(model, seqs, nbest=3, marginals=True)
    for seq, result in list(zip(seqs, together, strict=True))[::17]:
        alone = label(model, [seq], nbest=3, marginals=True)[0]
        assert alone.paths == result.paths
        np.testing.assert_allclose(alone.log_probs, result.log_probs, atol=1e-12)
        np.testing.assert_allclose(alone.marginals, result.marginals, atol=1e-12)


def test_local_models_give_probabilities_and_agree_with_their_decoder(model):
    """MEMM/MaxEnt log-probabilities sum to one over all paths, and the best path is the
    one the decoder finds alone (nbest=1)."""
    if model.model_type == "crf":
        pytest.skip("globally normalised")

    rng = np.random.default_rng(11)
    seqs = random_sequences(rng, 15, max_len=3)
    results = label(model, seqs, nbest=len(LABELS) ** 3)
    for seq, result in zip(seqs, results, strict=True):
        assert np.exp(result.log_probs).sum() == pytest.approx(1.0, abs=1e-9)
        ids, scores = decode_scored(model.model_type, model.weights,
                                    encode(model, [seq]), model.space)
        assert ids.tolist() == result.ids[0].tolist()
        assert scores[0] == pytest.approx(result.log_probs[0], abs=1e-9)


def test_plain_rows_are_accepted(model):
    rows = [["x", "P"], ["y", "Q"]]
    result = label(model, [rows])[0]
    assert len(result.labels) == 2 and result.marginals is None
    assert result.log_probs[0] <= 0.0


# --- masks and errors ------------------------------------------------------------------------
def test_iob_masks():
    labels = ["O", "B-NP", "I-NP", "B-VP", "I-VP"]
    start_ok, trans_ok = iob_masks(labels)
    assert start_ok.tolist() == [True, True, False, True, False]
    ok = {(a, b) for a in labels for b in labels if trans_ok[labels.index(a), labels.index(b)]}
    forbidden = {(a, b) for a in labels for b in labels} - ok
    assert forbidden == {("O", "I-NP"), ("O", "I-VP"), ("B-NP", "I-VP"), ("I-NP", "I-VP"),
                         ("B-VP", "I-NP"), ("I-VP", "I-NP")}


def test_iob_masks_accept_untyped_labels_as_conlleval_reads_them():
    """CRF++'s base-NP example tags B, I and O: one chunk type without a name."""
    labels = ["B", "I", "O"]
    start_ok, trans_ok = iob_masks(labels)
    assert start_ok.tolist() == [True, False, True]
    forbidden = {(a, b) for a in labels for b in labels
                 if not trans_ok[labels.index(a), labels.index(b)]}
    assert forbidden == {("O", "I")}
    mixed = ["O", "B", "I", "B-NP", "I-NP"]  # untyped and typed do not continue each other
    start_ok, trans_ok = iob_masks(mixed)
    assert not trans_ok[mixed.index("B"), mixed.index("I-NP")]
    assert not trans_ok[mixed.index("B-NP"), mixed.index("I")]
    assert trans_ok[mixed.index("I"), mixed.index("I")]


@pytest.mark.parametrize("bad", ["NP", "E-NP", "B-", "o"])
def test_iob_refuses_other_schemes(bad):
    with pytest.raises(UsageError, match=repr(bad)):
        iob_masks(["O", "B-NP", bad])


def test_contradictory_constraints_name_the_line(model):
    seq = Sequence(rows=[["x", "P", "_"], ["y", "Q", "O"], ["z", "P", "I-A"]], lines=[7, 8, 9])
    with pytest.raises(InputError, match="no label sequence") as err:
        label(model, [seq], force=True, constraints="iob")
    assert err.value.line == 9
    seq = Sequence(rows=[["x", "P", "I-A"]], lines=[4])
    with pytest.raises(InputError) as err:
        label(model, [seq], force=True, constraints="iob")
    assert err.value.line == 4


def test_unknown_forced_label_names_the_line(model):
    seq = Sequence(rows=[["x", "P", "_"], ["y", "Q", "B-Z"]], lines=[3, 4])
    with pytest.raises(InputError, match="'B-Z'") as err:
        label(model, [seq], force=True)
    assert err.value.line == 4


@pytest.mark.parametrize("kw,needle", [
    (dict(nbest=0), "--nbest"), (dict(nbest=2, posterior=True), "--post"),
    (dict(constraints="bio"), "bio"),
])
def test_conflicting_options(model, kw, needle):
    with pytest.raises(UsageError, match=needle):
        label(model, [[["x", "P"]]], **kw)
