"""The numpy best path (crfkit.kernels.bestpath) vs brute force and vs the Numba decoder.

Models are random feature spaces built directly (random label subsets per
observation, random weights), so every code path is reached: unigrams,
observation bigrams, the dense transition block or none, crf / memm /
maxent, token and transition masks. Two oracles:

* enumeration of every label path (:mod:`tests.naive`) on tiny lattices,
  with random float weights (no ties, so the best path is unique);
* ``crfkit.kernels.decoder.decode(nbest=1)`` on batches of many sequences, with
  integer or zero weights (ties everywhere) so that tie-breaking must agree
  exactly, not only the score.
"""

from __future__ import annotations

import io
import subprocess
import sys
import zlib
from types import SimpleNamespace

import numpy as np
import pytest

from crfkit.features.patterns import parse_patterns
from crfkit.io.reader import Sequence
from crfkit.kernels import bestpath
from crfkit.kernels.bestpath import best_paths
from crfkit.kernels.decoder import decode
from crfkit.labelling.label import LabelOptions, label, label_stream
from crfkit.model.types import MODEL_TYPES
from crfkit.space import Dataset, FeatureSpace
from crfkit.training.train import TrainOptions, train
from tests import naive

TYPES = ["crf", "memm", "maxent"]


def rng_for(*case) -> np.random.Generator:
    """A generator seeded by the test case (``hash`` of a str changes between runs)."""
    return np.random.default_rng(zlib.crc32(repr(case).encode()))


# --- random problems -------------------------------------------------------------------------
def random_space(rng, L, n_obs, *, bigrams, trans, full=False):
    """Each observation fires unigram features for a random subset of labels (all labels if
    ``full``) and bigram features for a random subset of label pairs (sorted, as
    FeatureSpace keeps them)."""
    u_lab, b_pairs, u_ptr, b_ptr = [], [], [0], [0]
    for _ in range(n_obs):
        k = L if full else rng.integers(0, L + 1)
        u_lab.extend(sorted(rng.choice(L, size=k, replace=False)))
        u_ptr.append(len(u_lab))
        if bigrams:
            k = rng.integers(0, L * L + 1)
            b_pairs.extend(sorted(rng.choice(L * L, size=k, replace=False)))
        b_ptr.append(len(b_pairs))
    pairs = np.array(b_pairs, dtype=np.int64)
    return FeatureSpace(n_labels=L, u_ptr=np.array(u_ptr, dtype=np.int64),
                        u_lab=np.array(u_lab, dtype=np.int32),
                        b_ptr=np.array(b_ptr, dtype=np.int64),
                        b_prev=(pairs // L).astype(np.int32), b_cur=(pairs % L).astype(np.int32),
                        has_trans=trans)


def random_weights(rng, n, kind):
    if kind == "float":
        return rng.normal(scale=1.5, size=n)
    if kind == "int":  # small integers: sums are exact in any order, and tie a lot
        return rng.integers(-1, 2, size=n).astype(np.float64)
    return np.zeros(n)


def random_model(rng, model_type, L, *, bigrams, trans, weights="float", n_obs=6, full=False):
    if model_type == "maxent":  # no label pairs at all (Model refuses them)
        bigrams = trans = False
    space = random_space(rng, L, n_obs, bigrams=bigrams, trans=trans, full=full)
    return SimpleNamespace(space=space, model_type=model_type,
                           normalisation=MODEL_TYPES[model_type].normalisation,
                           weights=random_weights(rng, space.n_weights, weights))


def random_data(rng, n_obs, lengths, *, min_obs=0):
    """Sequences of the given lengths; each token fires min_obs-3 distinct observations."""
    per_token = rng.integers(min_obs, 4, size=int(np.sum(lengths)))
    tok_obs = np.concatenate([rng.choice(n_obs, size=k, replace=False) for k in per_token]
                             + [np.zeros(0, np.int64)]).astype(np.int32)
    return Dataset(seq_ptr=np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64),
                   tok_ptr=np.concatenate([[0], np.cumsum(per_token)]).astype(np.int64),
                   tok_obs=tok_obs, labels=np.zeros(0, dtype=np.int32))


def random_masks(rng, data, L, *, density):
    token_ok = rng.random((data.n_tokens, L)) < density
    trans_ok = rng.random((L, L)) < density
    return token_ok, trans_ok


# --- the oracle: lattices spelt out, then every path -------------------------------------------
def naive_lattice(model, data, s):
    """psi (T, L) and phi (T, L, L) of sequence s by plain loops, normalised per model type."""
    sp, W = model.space, model.weights
    t0, t1 = int(data.seq_ptr[s]), int(data.seq_ptr[s + 1])
    L = sp.n_labels
    psi = np.zeros((t1 - t0, L))
    phi = np.zeros((t1 - t0, L, L))
    if sp.has_trans:
        phi[:] = W[sp.trans_offset:].reshape(L, L)
    for t in range(t1 - t0):
        for o in data.tok_obs[data.tok_ptr[t0 + t]:data.tok_ptr[t0 + t + 1]]:
            for k in range(sp.u_ptr[o], sp.u_ptr[o + 1]):
                psi[t, sp.u_lab[k]] += W[k]
            for k in range(sp.b_ptr[o], sp.b_ptr[o + 1]):
                if t:
                    phi[t, sp.b_prev[k], sp.b_cur[k]] += W[sp.n_u + k]
    return naive.locally_normalised(psi, phi, model.model_type)


def brute_force(model, data, token_ok=None, trans_ok=None):
    """Per sequence: its lattice, masks and two best allowed paths (fewer if fewer exist)."""
    out = []
    for s in range(data.n_seqs):
        t0, t1 = int(data.seq_ptr[s]), int(data.seq_ptr[s + 1])
        psi, phi = naive_lattice(model, data, s)
        ok = None if token_ok is None else token_ok[t0:t1]
        out.append((psi, phi, ok, naive.nbest(psi, phi, 2, ok, trans_ok)))
    return out


def split_paths(dec, data):
    return [tuple(int(y) for y in dec.paths[data.seq_ptr[s]:data.seq_ptr[s + 1], 0])
            for s in range(data.n_seqs)]


# --- against enumeration ---------------------------------------------------------------------
@pytest.mark.parametrize("model_type", TYPES)
@pytest.mark.parametrize("bigrams,trans", [(False, False), (False, True), (True, False),
                                           (True, True)])
@pytest.mark.parametrize("masked", [False, True])
def test_matches_enumeration(model_type, bigrams, trans, masked):
    rng = rng_for(model_type, bigrams, trans, masked)
    L = 3
    # every token scores every label: ties are improbable, so the best path is unique
    model = random_model(rng, model_type, L, bigrams=bigrams, trans=trans, full=True)
    data = random_data(rng, 6, rng.integers(1, 5, size=25), min_obs=1)
    token_ok, trans_ok = random_masks(rng, data, L, density=0.8) if masked else (None, None)
    dec = best_paths(model, data, token_ok=token_ok, trans_ok=trans_ok)
    want = brute_force(model, data, token_ok, trans_ok)
    assert dec.paths.shape == (data.n_tokens, 1) and dec.scores.shape == (data.n_seqs, 1)
    got_paths = split_paths(dec, data)
    ties = 0
    for s, (psi, phi, ok, best) in enumerate(want):
        if not best:
            assert dec.scores[s, 0] == -np.inf
            continue
        path, score = best[0]
        assert dec.scores[s, 0] == pytest.approx(score, rel=1e-12, abs=1e-12)
        assert naive.allowed(got_paths[s], ok, trans_ok)
        assert naive.path_score(psi, phi, got_paths[s]) == pytest.approx(score, rel=1e-12)
        if len(best) == 1 or best[1][1] < score - 1e-9:
            assert got_paths[s] == path
        else:  # a tie: which path wins is test_batches_match_decode's business
            ties += 1
    assert ties <= 2
    if masked:  # the masks did forbid some best paths
        free = brute_force(model, data)
        assert any(m[3][:1] != f[3][:1] for m, f in zip(want, free, strict=True))


# --- against decode(nbest=1), ties included ----------------------------------------------------
def assert_same_as_decode(model, data, token_ok=None, trans_ok=None, *, exact=True):
    """Same scores as decode(nbest=1), and the same paths, ties included.

    ``exact``: the lattice has the same bits in both decoders, so tied paths
    tie in both and the tie-breaking must agree. A MEMM's or MaxEnt's
    log-softmax may differ in the last bit between numpy and Numba, so
    without ``exact`` paths must agree only where the best is clear (the
    second best, from decode's n-best, is lower).
    """
    got = best_paths(model, data, token_ok=token_ok, trans_ok=trans_ok)
    want = decode(model, data, nbest=2, token_ok=token_ok, trans_ok=trans_ok)
    best, second = want.scores[:, 0], want.scores[:, 1]
    np.testing.assert_array_equal(got.scores[:, 0] == -np.inf, best == -np.inf)
    np.testing.assert_allclose(got.scores[:, 0], best, rtol=1e-12, atol=1e-12)
    clear = (best > -np.inf) & (exact | (second < best - 1e-9))
    check = np.repeat(clear, np.diff(data.seq_ptr))
    np.testing.assert_array_equal(got.paths[check, 0], want.paths[check, 0])
    assert np.isnan(got.log_z).all() and got.marginals is None
    return got, want


@pytest.mark.parametrize("model_type", TYPES)
@pytest.mark.parametrize("weights", ["float", "int", "zero"])
@pytest.mark.parametrize("masked", [False, True])
def test_batches_match_decode(model_type, weights, masked):
    """Hundreds of sequences of lengths 1-30 at once; integer and zero weights tie a lot."""
    rng = rng_for(model_type, weights, masked)
    L = 5
    model = random_model(rng, model_type, L, bigrams=True, trans=True, weights=weights,
                         n_obs=40)
    data = random_data(rng, 40, rng.integers(1, 31, size=300))
    token_ok, trans_ok = random_masks(rng, data, L, density=0.9) if masked else (None, None)
    # integers are exact in any order, zeros tie exactly in any log-softmax
    exact = model_type == "crf" or weights != "int"
    _, want = assert_same_as_decode(model, data, token_ok, trans_ok, exact=exact)
    if weights == "zero" and not masked:  # every sequence has tied best paths
        np.testing.assert_array_equal(want.scores[:, 1], want.scores[:, 0])


@pytest.mark.parametrize("model_type", ["crf", "memm"])
def test_no_transition_block_and_no_bigrams(model_type):
    rng = np.random.default_rng(7)
    model = random_model(rng, model_type, 4, bigrams=False, trans=False, weights="int")
    data = random_data(rng, 6, rng.integers(1, 9, size=100))
    assert_same_as_decode(model, data)


def test_sequence_without_allowed_path_scores_minus_inf():
    rng = np.random.default_rng(3)
    L = 4
    model = random_model(rng, "crf", L, bigrams=True, trans=True)
    data = random_data(rng, 6, [3, 1, 4, 2])
    token_ok = np.ones((data.n_tokens, L), dtype=bool)
    token_ok[data.seq_ptr[2] + 1] = False  # no label allowed at the 2nd token of sequence 2
    trans_ok = np.ones((L, L), dtype=bool)
    got, _ = assert_same_as_decode(model, data, token_ok, trans_ok)
    assert got.scores[2, 0] == -np.inf and np.isfinite(np.delete(got.scores, 2)).all()
    # no transition allowed: only the one-token sequence keeps a path
    got, _ = assert_same_as_decode(model, data, None, np.zeros((L, L), dtype=bool))
    assert np.isfinite(got.scores[1, 0]) and (np.delete(got.scores, 1) == -np.inf).all()


def test_empty_sequences_and_empty_batch_are_minus_inf_like_decode():
    rng = np.random.default_rng(4)
    model = random_model(rng, "crf", 3, bigrams=True, trans=True)
    assert_same_as_decode(model, random_data(rng, 6, [2, 0, 3, 0]))
    got = best_paths(model, random_data(rng, 6, []))
    assert got.paths.shape == (0, 1) and got.scores.shape == (0, 1)


def test_token_mask_shape_is_checked():
    rng = np.random.default_rng(5)
    model = random_model(rng, "crf", 3, bigrams=False, trans=True)
    data = random_data(rng, 6, [2, 3])
    with pytest.raises(ValueError, match="token_ok"):
        best_paths(model, data, token_ok=np.ones((4, 3), dtype=bool))


def test_chunking_does_not_change_results(monkeypatch):
    """Tiny memory limits: Viterbi steps in chunks of one or two sequences, the unigram
    table split down to single tokens; results are the same bits."""
    rng = np.random.default_rng(6)
    for model_type in TYPES:
        model = random_model(rng, model_type, 4, bigrams=True, trans=True, n_obs=20)
        data = random_data(rng, 20, rng.integers(1, 12, size=60))
        token_ok, trans_ok = random_masks(rng, data, 4, density=0.9)
        before = best_paths(model, data, token_ok=token_ok, trans_ok=trans_ok)
        with monkeypatch.context() as patch:
            patch.setattr(bestpath, "CHUNK_CELLS", 20)
            patch.setattr(bestpath, "DENSE_CELLS", 8)
            patch.setattr(bestpath, "ROW_CHUNK", 3)
            after = best_paths(model, data, token_ok=token_ok, trans_ok=trans_ok)
        np.testing.assert_array_equal(after.paths, before.paths)
        np.testing.assert_array_equal(after.scores, before.scores)


def test_many_labels_use_wider_back_pointers():
    """200 labels do not fit an int8 back-pointer."""
    rng = np.random.default_rng(8)
    model = random_model(rng, "crf", 200, bigrams=False, trans=True, n_obs=5)
    assert_same_as_decode(model, random_data(rng, 5, rng.integers(1, 6, size=10)))


# --- the labelling pipeline ------------------------------------------------------------------
LABELS = ["O", "B-A", "I-A", "B-B", "I-B"]


def tiny_sequences(rng, n, *, extra=None):
    """Sequences of (word, tag) rows, plus a last column drawn from ``extra`` if given."""
    out = []
    for _ in range(n):
        T = int(rng.integers(1, 7))
        rows = [[str(rng.choice(["x", "y", "z", "w"])), str(rng.choice(["P", "Q"]))]
                for _ in range(T)]
        if extra:
            for row in rows:
                row.append(str(rng.choice(extra)))
        out.append(Sequence(rows=rows, lines=list(range(1, T + 1))))
    return out


@pytest.fixture(scope="module", params=TYPES)
def trained(request, tmp_path_factory):
    """A real model of each type (observation bigrams too), given random weights; and its file."""
    rng = rng_for("trained", request.param)
    text = "U00:%x[0,0]\nU01:%x[-1,0]/%x[0,0]\nU02:%x[0,1]\n"
    if request.param != "maxent":
        text += "B\nb:%x[0,1]\n"
    model = train(parse_patterns(text), tiny_sequences(rng, 40, extra=LABELS),
                  TrainOptions(maxiter=1, nthread=1, model_type=request.param))
    model.weights = rng.normal(scale=1.2, size=model.weights.shape)
    path = tmp_path_factory.mktemp("bestpath") / f"{request.param}.model"
    model.save(path)
    return model, path


def stream_labels(model, seqs, **options) -> list[list[str]]:
    out = io.StringIO()
    label_stream(model, seqs, out, LabelOptions(labels_only=True, **options))
    return [block.split("\n") for block in out.getvalue().strip("\n").split("\n\n")]


@pytest.mark.parametrize("case", [{}, {"force": True}, {"constraints": "iob"}],
                         ids=["free", "force", "iob"])
def test_plain_labelling_matches_the_decoder(trained, case):
    """label_stream's plain output (numpy path) vs label() (Numba decoder, with log Z)."""
    model, _ = trained
    rng = rng_for("pipeline", model.model_type, case)
    extra = LABELS + ["_"] * 10 if case.get("force") else None
    seqs = tiny_sequences(rng, 60, extra=extra)
    want = [result.labels for result in label(model, seqs, **case)]
    assert stream_labels(model, seqs, **case) == want


def test_cli_plain_labelling_never_imports_numba(trained, tmp_path):
    model, path = trained
    seqs = tiny_sequences(rng_for("cli", model.model_type), 20)
    source = tmp_path / "in.txt"
    source.write_text("\n\n".join("\n".join(" ".join(r) for r in s.rows) for s in seqs) + "\n")
    out = tmp_path / "out.txt"
    code = ("import sys; from crfkit.cli import cli; "
            f"cli(['label', '-l', '-m', {str(path)!r}, {str(source)!r}, {str(out)!r}], "
            "standalone_mode=False); "
            "loaded = [m for m in sys.modules if m.split('.')[0] == 'numba' "
            "or m in ('crfkit.kernels.decoder', 'crfkit.kernels.lattice', "
            "'crfkit.labelling.cells')]; "
            "assert not loaded, loaded")
    subprocess.run([sys.executable, "-c", code], check=True)
    got = [block.split("\n") for block in out.read_text().strip("\n").split("\n\n")]
    assert got == stream_labels(model, seqs)


def test_numpy_path_modules_do_not_import_numba():
    code = ("import sys, crfkit.kernels.bestpath, crfkit.labelling.constraints, "
            "crfkit.labelling.output; "
            "assert 'numba' not in sys.modules, 'numba imported'")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_pattern_columns_and_observation_lists_give_the_same_bits(trained):
    """Unigram scores read from the encoder's id matrix (pattern columns with holes) or from
    the per-token lists: the same additions in the same order, so the same scores."""
    from dataclasses import replace

    from crfkit.labelling.label import encode

    model, _ = trained
    unseen = Sequence(rows=[["x", "P"], ["new", "P"], ["y", "R"]], lines=[1, 2, 3])
    data = encode(model, tiny_sequences(rng_for("columns", model.model_type), 30) + [unseen])
    assert data.obs_matrix is not None and (data.obs_matrix < 0).any()
    with_matrix = best_paths(model, data)
    from_lists = best_paths(model, replace(data, obs_matrix=None))
    assert np.array_equal(with_matrix.paths, from_lists.paths)
    assert np.array_equal(with_matrix.scores, from_lists.scores)
    psi = bestpath.unigram_scores(model.weights, model.space, data)
    assert np.array_equal(psi, bestpath.unigram_scores(model.weights, model.space,
                                                       replace(data, obs_matrix=None)))
