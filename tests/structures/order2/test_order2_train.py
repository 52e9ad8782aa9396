"""Second-order CRFs end to end: training, the model file, labelling modes, dump, info,
compaction, and the one-line refusals of what order 2 does not support.

The labelling pipeline is checked against brute-force enumeration on short
sequences of a model trained on the address sample (its weights replaced by
random floats so that the lattice is rich), with and without IOB constraints.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from crfkit.errors import ModelFormatError
from crfkit.features.patterns import parse_patterns
from crfkit.io import fileformat
from crfkit.io.reader import Sequence
from crfkit.kernels.bestpath import Weights
from crfkit.labelling.constraints import iob_masks
from crfkit.labelling.label import encode, label
from crfkit.model.model import Model, compact
from crfkit.structures.order2.pair_decoder import decode2
from crfkit.structures.order2.pair_space import Order2Space
from crfkit.training.train import TrainOptions, train
from tests import naive
from tests.helpers import ROOT, one_error_line, run
from tests.structures.order2.reference import (
    PATTERNS_O2,
    encode2,
    options2,
    reference_lattice,
)

ORDER2 = {"order": 2}


@pytest.fixture(scope="module")
def model2(corpus) -> Model:
    return train(parse_patterns(PATTERNS_O2), corpus, options2(maxiter=40))


def short(corpus, n=4, T=4):
    return [Sequence(rows=s.rows[:T], lines=s.lines[:T]) for s in corpus[-n:]]


def test_trained_model_round_trips_and_reports_its_states(model2, corpus):
    s = model2.space
    assert isinstance(s, Order2Space) and s.n_g > 0 and s.has_tri and s.has_trans
    y = [row[-1] for seq in corpus for row in seq.rows]
    index = {name: i for i, name in enumerate(model2.labels)}
    seen = {(index[a], index[b], index[c]) for seq in corpus
            for a, b, c in zip([r[-1] for r in seq.rows], [r[-1] for r in seq.rows[1:]],
                               [r[-1] for r in seq.rows[2:]], strict=False)}
    L = s.n_labels
    assert {(c // (L * L), (c // L) % L, c % L) for c in s.tri} == seen  # only seen trigrams
    assert len(y) > 0
    again = Model.from_bytes(model2.to_bytes())
    assert again.to_bytes() == model2.to_bytes()
    assert np.array_equal(again.space.tri, s.tri) and isinstance(again.space, Order2Space)
    tokens = [[row[:-1] for row in seq.rows] for seq in corpus[:10]]
    assert [r.paths for r in label(again, tokens)] == [r.paths for r in label(model2, tokens)]


@pytest.mark.parametrize("constrained", [False, True])
def test_labelling_pipeline_matches_enumeration(model2, corpus, constrained):
    rng = np.random.default_rng(5)
    model = Model.from_bytes(model2.to_bytes())
    model.weights = rng.normal(scale=1.0, size=model.space.n_weights)
    seqs = short(corpus)
    data = encode(model, seqs)
    trans_ok = iob_masks(model.labels)[1] if constrained else None
    token_ok = None
    if constrained:
        token_ok = np.ones((data.n_tokens, model.space.n_labels), dtype=bool)
        token_ok[data.seq_ptr[:-1]] = iob_masks(model.labels)[0]
    w = Weights(model.space, model.weights, model.normalisation)
    full = decode2(w, data, log_z=True, marginals=True, token_ok=token_ok, trans_ok=trans_ok)
    nb = decode2(w, data, nbest=4, token_ok=token_ok, trans_ok=trans_ok)
    for s in range(data.n_seqs):
        t0, t1 = data.seq_ptr[s], data.seq_ptr[s + 1]
        lat = reference_lattice(model.space, model.weights, data, s)
        tok = None if token_ok is None else token_ok[t0:t1]
        log_z, unary, _, _, ranked = naive.order2_summary(*lat, tok, trans_ok)
        assert full.log_z[s] == pytest.approx(log_z, rel=1e-10)
        np.testing.assert_allclose(full.marginals[t0:t1], unary, atol=1e-10)
        n = min(4, len(ranked))
        assert [tuple(nb.paths[t0:t1, r]) for r in range(n)] == [p for p, _ in ranked[:n]]


def test_huge_weights_fall_back_to_a_full_shift(model2, corpus):
    """Observation bigrams and trigrams 800 above the rest: their exponentials would
    overflow with the shared shifts, so those tokens take the full-row shift."""
    model = Model.from_bytes(model2.to_bytes())
    rng = np.random.default_rng(9)
    s = model.space
    model.weights = rng.normal(scale=2.0, size=s.n_weights)
    model.weights[s.n_u:s.trans_offset] += 800.0
    model.weights[s.g_offset:s.tri_offset] += 900.0
    data = encode(model, short(corpus, 3, 3))
    got = decode2(Weights(model.space, model.weights, model.normalisation), data, log_z=True)
    for s in range(data.n_seqs):
        log_z, *_ = naive.order2_summary(*reference_lattice(model.space, model.weights, data, s))
        assert got.log_z[s] == pytest.approx(log_z, rel=1e-9)


def test_compaction_keeps_the_labelling(corpus):
    l1 = train(parse_patterns(PATTERNS_O2), corpus, options2(maxiter=30, rho1=0.5))
    small = compact(l1)
    assert small.space.n_weights < l1.space.n_weights and small.space.n_g < l1.space.n_g
    tokens = [[row[:-1] for row in seq.rows] for seq in corpus[:20]]
    a, b = label(l1, tokens, nbest=2), label(small, tokens, nbest=2)
    assert [r.paths for r in a] == [r.paths for r in b]
    np.testing.assert_allclose([r.log_probs for r in a], [r.log_probs for r in b], atol=1e-9)


def test_damaged_second_order_arrays_are_refused(model2):
    meta, arrays = fileformat.loads(model2.to_bytes())
    arrays = dict(arrays)
    arrays["g_tri"] = arrays["g_tri"].copy()
    arrays["g_tri"][0] = len(arrays["tri"])
    with pytest.raises(ModelFormatError, match="trigram index out of range"):
        Model.from_bytes(fileformat.dumps(meta, arrays))


def test_first_order_file_has_no_second_order_entries(corpus):
    model = train(parse_patterns(PATTERNS_O2), corpus, TrainOptions(maxiter=5))
    meta, arrays = fileformat.loads(model.to_bytes())
    assert "order" not in meta and "tri" not in arrays
    assert "order" not in model.info["options"]
    assert not any(p.has_trigram for p in model.patterns)  # a first-order model ignores t


@pytest.mark.slow
def test_cli_train_label_dump_info(tmp_path, corpus):
    pat = tmp_path / "o2.pat"
    pat.write_text(PATTERNS_O2)
    data = tmp_path / "train.txt"
    data.write_text("".join("\n".join(" ".join(r) for r in s.rows) + "\n\n" for s in corpus))
    model = tmp_path / "m"
    assert run("train", "-q", "--order", "2", "-i", "20", "-p", pat, data, model).exit_code == 0
    info = run("info", model).output
    assert "order:" in info and "label trigrams" in info
    dump = run("dump", model).output
    assert any(line.startswith("t:s0=") and line.count("->") == 2 for line in dump.splitlines())
    plain = run("label", "-m", model, data).output
    best = run("label", "-n", "1", "-m", model, data).output
    header = re.compile(r"# 0 -?[0-9.]+$")  # '# RANK LOGPROB' (tokens may start with '#')
    assert [line for line in best.splitlines() if not header.match(line)] == plain.splitlines()
    for option in (["--marginals"], ["-p"], ["-n", "3"], ["--constraints", "iob"], ["-s"]):
        result = run("label", *option, "-m", model, data)
        assert result.exit_code == 0 and result.output


@pytest.mark.parametrize("args,needle", [
    (["--order", "3"], "--order must be 1 or 2"),
    (["--order", "2", "-a", "l2sgd"], "cannot train a second-order model"),
    (["--order", "2", "-a", "ap"], "cannot train a second-order model"),
    (["--order", "2", "-T", "memm"], "has no second order"),
    (["--order", "2", "--likely-features", "0.5"], "--likely-features trains a first-order"),
])
def test_unsupported_combinations_are_one_error_line(tmp_path, args, needle):
    pat = tmp_path / "p.pat"
    pat.write_text(PATTERNS_O2)
    result = run("train", *args, "-p", pat, ROOT / "data/address-test.txt", tmp_path / "m")
    one_error_line(result, needle)


def test_warm_start_keeps_a_second_order_model(model2, corpus):
    """Continuing on new data keeps every old state and weight: on the old labels' data the
    starting point labels exactly as the model; training then goes on from there."""

    extra = [Sequence(rows=[r[:-1] + ["NEW"] for r in corpus[0].rows], lines=corpus[0].lines)]
    c = encode2(model2.patterns, corpus + extra, init=model2)
    s, old = c.space, model2.space
    assert isinstance(s, Order2Space) and s.n_labels == old.n_labels + 1
    L = s.n_labels
    assert len(s.tri) > len(old.tri) and set(
        (old.tri // old.n_labels**2 * L * L + old.tri // old.n_labels % old.n_labels * L
         + old.tri % old.n_labels).tolist()) <= set(s.tri.tolist())
    start = Model(labels=c.labels, patterns=model2.patterns, n_token_columns=2,
                  featurizer=c.featurizer, space=s, weights=c.x0)
    w_old = Weights(old, model2.weights, model2.normalisation)
    w_new = Weights(s, c.x0, model2.normalisation)
    data_old, data_new = encode(model2, corpus[:10]), encode(start, corpus[:10])
    a = decode2(w_old, data_old, log_z=True)
    b = decode2(w_new, data_new, log_z=True)
    np.testing.assert_array_equal(a.paths, b.paths)
    np.testing.assert_allclose(b.scores, a.scores, rtol=1e-12)
    again = train(None, corpus + extra, TrainOptions(maxiter=3), init=model2)
    assert isinstance(again.space, Order2Space) and "NEW" in again.labels


def test_a_trained_and_a_loaded_model_decode_with_one_compiled_decoder(model2, corpus):
    """Training hands the decoder writable arrays, a loaded model read-only ones: decode2
    passes read-only views of both, so Numba compiles one version, not one per flavour."""
    from crfkit.structures.order2.pair_decoder import decode_block2

    data = encode(model2, short(corpus))
    trained = decode2(model2, data, nbest=2, marginals=True)
    n_signatures = len(decode_block2.signatures)
    loaded = Model.from_bytes(model2.to_bytes())
    assert not loaded.weights.flags.writeable and model2.weights.flags.writeable
    labelled = decode2(loaded, data, nbest=2, marginals=True)
    assert len(decode_block2.signatures) == n_signatures
    assert np.array_equal(trained.paths, labelled.paths)
    assert np.array_equal(trained.marginals, labelled.marginals)
