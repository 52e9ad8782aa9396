"""The training progress line's errors where the objective does not count them (label sets,
latent states): the training file decoded as ``label`` decodes it."""

from __future__ import annotations

import re

import pytest

from tests.helpers import CHUNK_TRAIN, run

PATTERNS = "U00:%x[0,0]\nU01:%x[0,1]\nB\n"
# the same words twice with other labels: some error is bound to stay; ? and sets left out
PARTIAL = (CHUNK_TRAIN.replace("cat NN I-NP", "cat NN ?").replace("ran VBD B-VP", "ran VBD B-VP|O")
           + "\nbig JJ O\ndogs NNS B-NP\nbark VBP ?\n"
           + "\nbig JJ B-NP|O\ndogs NNS I-NP|B-NP\nbark VBP B-VP\n")


def _errors_by_labelling(model, data) -> tuple[float, float]:
    """Token and sequence error (%) of the model's labels at the tokens with one gold label,
    counted from ``crfkit label``'s output."""
    out = run("label", "-m", model, data)
    assert out.exit_code == 0, out.stderr
    tokens = wrong = wrong_sequences = 0
    for block in out.stdout.strip().split("\n\n"):
        rows = [line.split() for line in block.splitlines()]
        single = [(r[-2], r[-1]) for r in rows if r[-2] != "?" and "|" not in r[-2]]
        tokens += len(single)
        misses = sum(gold != predicted for gold, predicted in single)
        wrong += misses
        wrong_sequences += misses > 0
    return 100.0 * wrong / tokens, 100.0 * wrong_sequences / (PARTIAL.count("\n\n") + 1)


@pytest.mark.parametrize("options", [["--latent", "1"], ["--latent", "2"],
                                     ["--latent", "2", "-a", "sgd-l1"]])
def test_progress_errors_are_those_of_labelling_the_training_file(tmp_path, options):
    (tmp_path / "p.pat").write_text(PATTERNS)
    data = tmp_path / "train.txt"
    data.write_text(PARTIAL)
    model = tmp_path / "m.model"
    result = run("train", "-p", tmp_path / "p.pat", "-i", 3, *options, data, model)
    assert result.exit_code == 0, result.stderr
    last = [line for line in result.stderr.splitlines() if "tok-err=" in line][-1]
    printed = re.search(r"tok-err=\s*([\d.]+)% seq-err=\s*([\d.]+)%", last).groups()
    token_error, sequence_error = _errors_by_labelling(model, data)
    assert token_error > 0  # the conflicting sentences leave an error to count
    assert printed == (f"{token_error:.2f}", f"{sequence_error:.2f}")
