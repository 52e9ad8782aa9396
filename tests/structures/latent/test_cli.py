"""``--latent`` and label sets through the command line, on a few tiny sentences."""

from __future__ import annotations

import re

import numpy as np
import pytest

from crfkit.model.model import Model
from tests.helpers import CHUNK_TRAIN, one_error_line, run, trained_model

PATTERNS = "U00:%x[0,0]\nU01:%x[0,1]\nU02:%x[-1,1]/%x[0,1]\nB\n"
PARTIAL = CHUNK_TRAIN.replace("cat NN I-NP", "cat NN ?").replace("ran VBD B-VP", "ran VBD B-VP|O")


def test_latent_1_with_full_labels_is_the_chain_model_bit_for_bit(tmp_path):
    chain = trained_model(tmp_path, PATTERNS, CHUNK_TRAIN, "-i", 20).read_bytes()
    latent = trained_model(tmp_path, PATTERNS, CHUNK_TRAIN, "-i", 20, "--latent", 1)
    assert chain == latent.read_bytes()


@pytest.mark.parametrize("K", [1, 2])
def test_label_sets_train_and_label(tmp_path, K):
    model = trained_model(tmp_path, PATTERNS, PARTIAL, "-i", 30, "--latent", K)
    loaded = Model.load(model)
    assert sorted(loaded.labels) == ["B-NP", "B-VP", "I-NP", "O"]
    assert getattr(loaded.space, "K", 1) == K
    out = run("label", "-m", model, tmp_path / "train.txt")
    assert out.exit_code == 0, out.stderr
    assert out.stdout.split("\n")[0].split()[-1] == "B-NP"


def test_label_sets_need_an_algorithm_that_sums_and_known_labels(tmp_path):
    (tmp_path / "p.pat").write_text(PATTERNS)
    (tmp_path / "t.txt").write_text(PARTIAL)
    result = run("train", "-a", "ap", "-p", tmp_path / "p.pat", tmp_path / "t.txt",
                 tmp_path / "m")
    one_error_line(result, "t.txt:2:", "-a ap", "label set")
    (tmp_path / "t.txt").write_text(PARTIAL.replace("B-VP|O", "B-VP||O"))
    result = run("train", "--latent", 2, "-p", tmp_path / "p.pat", tmp_path / "t.txt",
                 tmp_path / "m")
    one_error_line(result, "t.txt:10:", "'B-VP||O'")


def test_a_latent_model_labels_in_every_mode(tmp_path):
    model = trained_model(tmp_path, PATTERNS, CHUNK_TRAIN, "-i", 30, "--latent", 2)
    data = tmp_path / "train.txt"
    best = run("label", "-m", model, data).stdout
    for options in (["-n", 2, "-s"], ["--marginals"], ["-p"], ["--force"],
                    ["--constraints", "iob"], ["--latent-decode", "labels", "-n", 2]):
        result = run("label", "-m", model, *options, data)
        assert result.exit_code == 0, (options, result.stderr)
    marginals = run("label", "-m", model, "--marginals", data).stdout.split("\n")[0].split()
    assert sum(float(cell.rsplit("/", 1)[1]) for cell in marginals[4:]) == pytest.approx(
        1.0, abs=1e-3)
    assert best == run("label", "-m", model, "--latent-decode", "states", data).stdout
    info = run("info", model).stdout
    assert "states:" in info and "2 per label, 8 in all" in info
    assert re.search(r"^labels:\s+4: ", info, re.M)
    result = run("train", "-a", "ap", "-m", model, data, tmp_path / "again")
    one_error_line(result, "-a ap cannot train a latent-dynamic model")  # its K, unsaid
    assert "B-NP#1" in run("dump", model).stdout


def test_warm_start_keeps_the_states_and_refuses_others(tmp_path):
    model = trained_model(tmp_path, PATTERNS, CHUNK_TRAIN, "-i", 5, "--latent", 2)
    again = tmp_path / "again.model"
    result = run("train", "-q", "-m", model, "-i", 5, tmp_path / "train.txt", again)
    assert result.exit_code == 0, result.stderr
    first, second = Model.load(model), Model.load(again)
    assert second.space.K == 2 and second.space.n_weights == first.space.n_weights
    assert not np.array_equal(first.weights, second.weights)
    result = run("train", "-m", model, "--latent", 3, "-i", 5, tmp_path / "train.txt", again)
    one_error_line(result, "2 states per label", "--latent 3")


def test_refusals_are_one_line(tmp_path):
    (tmp_path / "p.pat").write_text(PATTERNS)
    (tmp_path / "t.txt").write_text(CHUNK_TRAIN)
    for options, needle in ((["-a", "ap"], "-a ap"), (["-T", "memm"], "memm"),
                            (["--latent", 0], "--latent must be >= 1")):
        result = run("train", "--latent", 2, *options, "-p", tmp_path / "p.pat",
                     tmp_path / "t.txt", tmp_path / "m")
        one_error_line(result, needle)
    (tmp_path / "p.pat").write_text("U00:%x[0,0]\nB01:%x[0,1]\n")
    result = run("train", "--latent", 2, "-p", tmp_path / "p.pat", tmp_path / "t.txt",
                 tmp_path / "m")
    one_error_line(result, "B01", "observation bigrams")


def test_latent_1_continues_a_chain_model_as_plain_training_does(tmp_path):
    chain = trained_model(tmp_path, PATTERNS, CHUNK_TRAIN, "-i", 5)
    (tmp_path / "t.txt").write_text(PARTIAL)
    models = []
    for data, latent in [(PARTIAL, []), (PARTIAL, ["--latent", 1]),
                         (CHUNK_TRAIN, []), (CHUNK_TRAIN, ["--latent", 1])]:
        (tmp_path / "t.txt").write_text(data)
        models.append(tmp_path / f"m{len(models)}")
        result = run("train", "-q", "-m", chain, "-i", 5, *latent, tmp_path / "t.txt",
                     models[-1])
        assert result.exit_code == 0, result.stderr
    assert models[0].read_bytes() == models[1].read_bytes()  # label sets: the same model
    assert models[2].read_bytes() == models[3].read_bytes()  # full labels: the chain's
    result = run("train", "-m", chain, "--latent", 2, tmp_path / "t.txt", tmp_path / "k2")
    one_error_line(result, "linear chain", "--latent 2", "--latent 1 can")


def test_training_and_labelling_share_one_compiled_clamped_kernel(tmp_path):
    """Training's weights are writable, a loaded model's read-only: both reach the clamped
    kernel as read-only views, so a first training and labelling compile it once."""
    from crfkit.structures.latent.clamped import clamped_block

    model = trained_model(tmp_path, PATTERNS, PARTIAL, "-i", 3, "--latent", 2)
    result = run("label", "-m", model, "--latent-decode", "labels", "-n", 2,
                 tmp_path / "train.txt")
    assert result.exit_code == 0, result.stderr
    assert len(clamped_block.signatures) == 1, clamped_block.signatures
