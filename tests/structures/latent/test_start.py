"""The structured start of ``--latent K``: states set by each token's successor, a convex
first phase (one clamped state path), then the states set free."""

from __future__ import annotations

import re

import numpy as np
import pytest

from crfkit.model.model import Model
from crfkit.structures.latent.objective import LatentObjective, LatentPart
from crfkit.structures.latent.states import start_mask, successor_states
from crfkit.structures.latent.structure import Latent
from crfkit.training.corpus import encode_training
from tests.helpers import CHUNK_TRAIN, random_corpus, run, trained_model
from tests.structures.latent.test_objective import PATTERNS as TINY_PATTERNS
from tests.structures.latent.test_objective import path_score

PATTERNS = "U00:%x[0,0]\nU01:%x[0,1]\nU02:%x[-1,1]/%x[0,1]\nB\n"


def test_states_follow_each_labels_most_frequent_successors():
    # labels 0 B, 1 I, 2 O; sequences B I I O | B O | O B I
    labels = np.array([0, 1, 1, 2, 0, 2, 2, 0, 1], dtype=np.int32)
    seq_ptr = np.array([0, 4, 6, 9])
    # B is followed by I twice, O once; I by I, O and the end once each (a tie: the
    # lower id, I, first); O by the end twice, B once
    assert successor_states(labels, seq_ptr, 3, 2).tolist() == [0, 0, 1, 0, 1, 0, 1, 0, 1]
    # K = 3: the second most frequent successor gets state 1 (I after I: 0, O: 1, end: 2)
    assert successor_states(labels, seq_ptr, 3, 3).tolist() == [0, 0, 1, 0, 1, 0, 1, 0, 2]
    with_set = labels.copy()
    with_set[2] = -1  # a label set: that token and the one before it stay free
    states = successor_states(with_set, seq_ptr, 3, 2)
    assert states[1] == -1 and states[2] == -1 and states[3] == 0


def test_the_start_mask_allows_one_state_where_one_is_set():
    allowed = np.array([[1, 0, 0], [0, 1, 1]], dtype=bool)
    mask = start_mask(allowed, np.array([0, -1], dtype=np.int32), np.array([1, -1],
                                                                          dtype=np.int8), 2)
    assert mask.tolist() == [[0, 1, 0, 0, 0, 0], [0, 0, 1, 1, 1, 1]]


def started_corpus(K: int, seed: int):
    structure = Latent()
    structure.K = K
    seqs = random_corpus(seed, n_seqs=4, max_len=3)
    corpus = encode_training(TINY_PATTERNS, seqs, structure=structure)
    structure.attach(corpus, seqs, list(range(len(seqs))), {}, None, None)
    return corpus


def brute_started_loss(w, corpus, states, rho2):
    """sum_s log Z(x) - the score of the one state path the start sets, + the L2 term."""
    import itertools

    space, data, K = corpus.space, corpus.data, corpus.part.K
    f = 0.5 * rho2 * w @ w
    for s in range(data.n_seqs):
        t0, t1 = int(data.seq_ptr[s]), int(data.seq_ptr[s + 1])
        scores = [path_score(w, space, data, s, path)
                  for path in itertools.product(range(space.n_labels), repeat=t1 - t0)]
        gold = [int(data.labels[t]) * K + int(states[t]) for t in range(t0, t1)]
        f += np.logaddexp.reduce(scores) - path_score(w, space, data, s, gold)
    return f


@pytest.mark.parametrize("K", [2, 3])
def test_the_starting_objective_is_the_chain_over_the_set_states(K):
    corpus = started_corpus(K, seed=5)
    assert not np.any(corpus.x0)  # no random start: the first phase is convex
    states = successor_states(corpus.data.labels, corpus.data.seq_ptr, len(corpus.labels), K)
    assert np.all(states >= 0)
    starting = LatentPart(corpus.part.start, 1, corpus.part.lines)  # as the start clamps
    objective = LatentObjective(corpus.space, corpus.data, starting, 0.3)
    w = np.random.default_rng(3).normal(0, 0.5, corpus.space.n_weights)
    g = np.empty_like(w)
    assert objective(w, g) == pytest.approx(brute_started_loss(w, corpus, states, 0.3),
                                            rel=1e-9)
    h, scratch = 1e-6, np.empty_like(w)
    for i in [*np.random.default_rng(0).choice(len(w), 30, replace=False), len(w) - 1]:
        step = np.zeros_like(w)
        step[i] = h
        numeric = (objective(w + step, scratch) - objective(w - step, scratch)) / (2 * h)
        assert g[i] == pytest.approx(numeric, rel=1e-5, abs=1e-6), i
    free = LatentObjective(corpus.space, corpus.data, corpus.part, 0.3)
    assert free(w, np.empty_like(w)) != pytest.approx(objective(w, g))  # the states free


def test_training_starts_by_successors_then_frees_the_states(tmp_path):
    (tmp_path / "p.pat").write_text(PATTERNS)
    (tmp_path / "t.txt").write_text(CHUNK_TRAIN)
    models = []
    for _ in range(2):
        models.append(tmp_path / f"m{len(models)}")
        result = run("train", "--latent", 2, "-i", 40, "-p", tmp_path / "p.pat",
                     tmp_path / "t.txt", models[-1])
        assert result.exit_code == 0, result.stderr
    assert "hidden states set free after" in result.stderr
    # the second phase's progress lines go on counting iterations and seconds
    rows = re.findall(r"^\s*\[\s*(\d+)\].*time=\s*([\d.]+)s", result.stderr, re.M)
    assert len(rows) == Model.load(models[-1]).info["iterations"] > 0
    assert [int(i) for i, _ in rows] == list(range(1, len(rows) + 1))
    assert [float(t) for _, t in rows] == sorted(float(t) for _, t in rows)
    assert models[0].read_bytes() == models[1].read_bytes()  # deterministic: no seed
    model = Model.load(models[0])
    assert model.info["options"]["latent_start"] == "successors"
    # the set states were learnt: a label's two states differ in weight
    w = np.abs(model.weights[:model.space.n_u])
    mass = np.bincount(model.space.u_lab, weights=w, minlength=model.space.n_labels)
    assert np.all(mass[0::2] != mass[1::2])
    random = trained_model(tmp_path, PATTERNS, CHUNK_TRAIN, "-i", 40, "--latent", 2,
                           "--latent-start", "random", "--latent-seed", 3)
    info = Model.load(random).info["options"]
    assert info["latent_start"] == "random" and info["latent_seed"] == 3
    assert random.read_bytes() != models[0].read_bytes()


def test_an_iteration_limit_and_a_devel_stop_count_across_both_phases(tmp_path):
    (tmp_path / "p.pat").write_text(PATTERNS)
    (tmp_path / "t.txt").write_text(CHUNK_TRAIN)
    result = run("train", "--latent", 2, "-i", 3, "-p", tmp_path / "p.pat",
                 tmp_path / "t.txt", tmp_path / "m")
    assert result.exit_code == 0, result.stderr
    assert "set free" not in result.stderr  # the three iterations were the start's
    assert Model.load(tmp_path / "m").info["iterations"] == 3
    result = run("train", "--latent", 2, "-d", tmp_path / "t.txt", "--devel-patience", 2,
                 "-p", tmp_path / "p.pat", tmp_path / "t.txt", tmp_path / "m")
    assert result.exit_code == 0, result.stderr
    assert "no development F1 improvement" in result.stderr
    assert "set free" not in result.stderr  # the patience's stop ends the training


def test_tune_and_sgd_take_the_start(tmp_path):
    (tmp_path / "p.pat").write_text(PATTERNS)
    (tmp_path / "t.txt").write_text(CHUNK_TRAIN)
    result = run("tune", "--latent", 2, "--latent-start", "successors", "-2", "1,0.5",
                 "-i", 20, "-d", tmp_path / "t.txt", "-p", tmp_path / "p.pat",
                 tmp_path / "t.txt", tmp_path / "tuned")
    assert result.exit_code == 0, result.stderr
    assert Model.load(tmp_path / "tuned").space.K == 2
    result = run("train", "--latent", 2, "-a", "sgd-l1", "-i", 4, "-p", tmp_path / "p.pat",
                 tmp_path / "t.txt", tmp_path / "sgd")
    assert result.exit_code == 0, result.stderr
    result = run("train", "--latent-start", "bad", "--latent", 2, "-p", tmp_path / "p.pat",
                 tmp_path / "t.txt", tmp_path / "bad")
    assert result.exit_code != 0 and "--latent-start" in result.stderr
