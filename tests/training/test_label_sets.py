"""Training on label sets (? and A|B) without --latent: the plain crf over them, unasked."""

from __future__ import annotations

import pytest

from crfkit.model.model import Model
from crfkit.training.train import ALGORITHMS
from tests.helpers import CHUNK_TRAIN, one_error_line, run

PATTERNS = "U00:%x[0,0]\nU01:%x[0,1]\nB\n"
PARTIAL = CHUNK_TRAIN.replace("cat NN I-NP", "cat NN ?").replace("ran VBD B-VP", "ran VBD B-VP|O")


@pytest.mark.parametrize("algo", [["-i", 5], ["-i", 5, "-1", 0.1], ["-a", "sgd-l1", "-i", 3],
                                  ["-a", "rprop", "-i", 3]])
def test_a_plain_training_on_label_sets_is_latent_1_byte_for_byte(tmp_path, algo):
    (tmp_path / "p.pat").write_text(PATTERNS)
    (tmp_path / "t.txt").write_text(PARTIAL)
    models, said = [], []
    for latent in ([], ["--latent", 1]):
        models.append(tmp_path / f"m{len(models)}.model")
        result = run("train", "-p", tmp_path / "p.pat", *algo, *latent, tmp_path / "t.txt",
                     models[-1])
        assert result.exit_code == 0, result.stderr
        said.append("* label sets" in result.stderr)
    assert said == [True, False]  # the unasked run says why it sums
    assert models[0].read_bytes() == models[1].read_bytes()


@pytest.mark.parametrize("options, needle", [(["-a", "bcd"], "-a bcd"),
                                             (["-a", "pa"], "-a pa"),
                                             (["-T", "memm"], "memm")])
def test_what_cannot_sum_over_label_sets_is_refused_at_the_first(tmp_path, options, needle):
    (tmp_path / "p.pat").write_text(PATTERNS)
    (tmp_path / "t.txt").write_text(PARTIAL)
    result = run("train", *options, "-p", tmp_path / "p.pat", tmp_path / "t.txt",
                 tmp_path / "m")
    one_error_line(result, "t.txt:2:", needle, "label set")
    assert not (tmp_path / "m").exists()


# what sums over the labellings a set allows: the objective's minimisers and sgd-l1
SUMMING = {"l-bfgs", "sgd-l1", "rprop", "rprop+", "rprop-"}
GOLD_PATH = ["ap", "l2sgd", "pa", "arow", "mira", "bcd"]  # a gold path, or a chain's counts


def test_every_algorithm_is_sorted_into_those_that_sum_and_those_that_cannot():
    assert SUMMING | set(GOLD_PATH) == set(ALGORITHMS)


@pytest.mark.parametrize("algo", GOLD_PATH)
def test_an_algorithm_that_cannot_sum_is_refused_with_or_without_latent(tmp_path, algo):
    (tmp_path / "p.pat").write_text(PATTERNS)
    (tmp_path / "t.txt").write_text(PARTIAL)
    for latent in ([], ["--latent", 1]):  # at the first label set's line, the same words
        result = run("train", "-a", algo, *latent, "-p", tmp_path / "p.pat",
                     tmp_path / "t.txt", tmp_path / "m")
        one_error_line(result, "t.txt:2:", f"-a {algo} cannot train from label sets")
    result = run("train", "-a", algo, "--latent", 2, "-p", tmp_path / "p.pat",
                 tmp_path / "t.txt", tmp_path / "m")
    one_error_line(result, f"-a {algo} cannot train a latent-dynamic model")
    assert not (tmp_path / "m").exists()


def test_rprop_trains_hidden_states_from_label_sets(tmp_path):
    (tmp_path / "p.pat").write_text(PATTERNS)
    (tmp_path / "t.txt").write_text(PARTIAL)
    result = run("train", "-a", "rprop-", "--latent", 2, "-i", 3, "-p", tmp_path / "p.pat",
                 tmp_path / "t.txt", tmp_path / "m")
    assert result.exit_code == 0, result.stderr
    assert Model.load(tmp_path / "m").space.K == 2


def test_a_label_only_sets_name_is_named_and_learnt(tmp_path):
    # C is no token's label alone, but the intersection of the sets on z: z is C
    data = "a A\nb B\n\nd D\na A\n\nz B|C\n\nz C|D\n\nx ?\nz C|D\n"
    (tmp_path / "p.pat").write_text("U00:%x[0,0]\nB\n")
    (tmp_path / "t.txt").write_text(data)
    model = tmp_path / "m.model"
    result = run("train", "-p", tmp_path / "p.pat", "-i", 30, tmp_path / "t.txt", model)
    assert result.exit_code == 0, result.stderr
    warnings = [line for line in result.stderr.splitlines() if "warning" in line]
    assert len(warnings) == 1 and "'C'" in warnings[0]
    labelled = run("label", "-m", model, input="z\na\nb\n")
    assert labelled.exit_code == 0, labelled.stderr
    assert [line.split()[-1] for line in labelled.stdout.splitlines() if line] == ["C", "A", "B"]
