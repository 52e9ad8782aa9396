"""SGD-L1 for second-order CRFs (crfkit.structures.order2.pair_epochs): the gold path's counts
against
the corpus's empirical vector, one sequence's step and loss against the batch objective
(Objective2, itself checked against brute force and finite differences), and training
from the command line."""

from __future__ import annotations

import numpy as np
import pytest

from crfkit.features.patterns import parse_patterns
from crfkit.io.reader import read_sequences
from crfkit.model.model import Model
from crfkit.space import Dataset
from crfkit.structures import named
from crfkit.structures.order2.pair_epochs import SgdEpochs2, gold_path2
from crfkit.structures.order2.pair_objective import Objective2
from crfkit.structures.order2.pair_space import Order2Space
from crfkit.training.corpus import model_patterns
from tests.helpers import ROOT, run
from tests.structures.order2.reference import encode2

PATTERNS = """u:w0=%X[0,0]
u:w-1=%X[-1,0]
u:s0=%x[0,1]
*:s-1/s0=%x[-1,1]/%x[0,1]
t:s0=%x[0,1]
*
"""


@pytest.fixture(scope="module", params=["observation trigrams", "shared edges"])
def corpus(request):
    text = PATTERNS if request.param == "observation trigrams" else \
        PATTERNS.replace("t:s0=%x[0,1]\n", "")
    sequences = list(read_sequences(ROOT / "data/address-train.txt"))[:60]
    patterns = model_patterns(named("order2").patterns(parse_patterns(text), None), "crf")
    c = encode2(patterns, sequences)
    assert (c.space.n_g > 0) == (request.param == "observation trigrams")
    return c


def one_sequence(data: Dataset, s: int) -> Dataset:
    t0, t1 = data.seq_ptr[s], data.seq_ptr[s + 1]
    tok_ptr = data.tok_ptr[t0:t1 + 1]
    return Dataset(seq_ptr=np.array([0, t1 - t0], dtype=np.int64),
                   tok_ptr=(tok_ptr - tok_ptr[0]).astype(np.int64),
                   tok_obs=data.tok_obs[tok_ptr[0]:tok_ptr[-1]].copy(),
                   labels=data.labels[t0:t1].copy())


def gold_counts(c, W, s):
    G = np.zeros(c.space.n_weights)
    t0, T = c.data.seq_ptr[s], c.data.seq_ptr[s + 1] - c.data.seq_ptr[s]
    score = gold_path2(W, G, c.space.arrays(), c.space.lattice, c.data.tok_ptr, c.data.tok_obs,
                       c.data.labels, t0, T, c.space.n_labels, c.space.n_g > 0)
    return -G, score


def test_gold_paths_sum_to_the_empirical_counts(corpus):
    rng = np.random.default_rng(0)
    W = rng.normal(size=corpus.space.n_weights)
    total = np.zeros(corpus.space.n_weights)
    for s in range(corpus.data.n_seqs):
        counts, score = gold_counts(corpus, W, s)
        assert score == pytest.approx(counts @ W, rel=1e-12, abs=1e-12)
        total += counts
    np.testing.assert_array_equal(total, corpus.empirical)
    assert corpus.space.has_tri and total[corpus.space.tri_offset:].sum() > 0


@pytest.mark.parametrize("s", [0, 7, 31])
def test_one_step_is_the_batch_gradient_of_its_sequence(corpus, s):
    rng = np.random.default_rng(s)
    W = rng.normal(scale=0.5, size=corpus.space.n_weights)
    counts, _ = gold_counts(corpus, W, s)
    data1 = one_sequence(corpus.data, s)
    g = np.empty_like(W)
    f = Objective2(corpus.space, data1, counts, rho2=0.0)(W, g)
    eta = 0.3
    epochs = SgdEpochs2(corpus.space, corpus.data)
    W1, q, state = W.copy(), np.zeros(W.size), np.zeros(1)
    loss, _, _, overflowed = epochs(W1, np.array([s]), 0, eta, 1.0, 0.0, q, state)
    assert not overflowed
    assert loss == pytest.approx(f, rel=1e-10)
    np.testing.assert_allclose(W1, W - eta * g, rtol=1e-10, atol=1e-12)
    assert np.abs(W1 - W).max() > 1e-3  # it moved
    assert not epochs.G.any()  # the gradient buffer is left clean


def test_l1_epochs_zero_weights_and_lower_the_loss(corpus):
    epochs = SgdEpochs2(corpus.space, corpus.data)
    W, q, state = np.zeros(corpus.space.n_weights), np.zeros(corpus.space.n_weights), np.zeros(1)
    order = np.arange(corpus.data.n_seqs)
    losses = [epochs(W, order, k * len(order), 0.1, 0.9, 1.0, q, state)[0] for k in range(6)]
    assert losses[-1] < 0.5 * losses[0]
    touched = q != 0
    assert touched.any() and (W[touched] == 0).any()  # the penalty clipped some at zero


def test_cli_trains_second_order_with_sgd(tmp_path):
    model_file = tmp_path / "o2sgd.model"
    pattern = tmp_path / "p.pat"
    pattern.write_text(PATTERNS)
    result = run("train", "--order", "2", "-a", "sgd-l1", "-i", "8", "-p", pattern,
                 ROOT / "data/address-train.txt", model_file)
    assert result.exit_code == 0, result.stderr
    model = Model.load(model_file)
    assert isinstance(model.space, Order2Space) and model.info["options"]["algo"] == "sgd-l1"
    checked = run("label", "-m", model_file, "-c", ROOT / "data/address-test.txt")
    assert checked.exit_code == 0, checked.stderr
    pairs = [line.split()[-2:] for line in checked.output.splitlines() if line.strip()]
    accuracy = np.mean([gold == guess for gold, guess in pairs])
    assert accuracy > 0.8
