"""Tests of scoring against partially labelled gold (``crfkit eval --partial``): the counts
of each mode worked out by hand, the skip mode against conlleval's own reading of the same
file with the partial lines made sentence breaks, the scheme check, errors and the CLI.

Chunks are listed as TYPE(words) in the comments.
"""

from __future__ import annotations

import io
import json

import pytest
from click.testing import CliRunner

from crfkit.cli import cli
from crfkit.evaluation.counts import EvalReport
from crfkit.evaluation.partial import PartialTagError, resolve_partial
from crfkit.evaluation.reading import read_eval_file
from crfkit.evaluation.scoring import check_scheme, evaluate, evaluate_tags
from tests.helpers import eval_counts as counts
from tests.helpers import eval_per_type as per_type
from tests.helpers import one_error_line

# gold: NP(a b) ?(c) NP(d e); pred: NP(a b) VP(c) NP(d)
ANY = "a B-NP B-NP\nb I-NP I-NP\nc ? B-VP\nd B-NP B-NP\ne I-NP O\n"

# gold sets: ORG|PER over a b (pred ORG: allowed), PER|LOC on d (pred MISC: not allowed)
SETS = ("a B-PER|B-ORG B-ORG\nb I-PER|I-ORG I-ORG\nc O O\n"
        "d B-PER|B-LOC B-MISC\n")


def score(text: str, **options) -> EvalReport:
    data = read_eval_file(io.BytesIO(text.encode("utf-8")))
    return evaluate_tags(data.gold, data.pred, **options)


def test_skip_leaves_the_token_out_and_breaks_the_sentence_there():
    # tokens a b d e (4), right a b d (3); gold NP(a b) NP(d e), pred NP(a b) NP(d):
    # the VP on c is gone with its token; NP(a b) is correct
    assert counts(score(ANY)) == (4, 3, 2, 2, 1)
    assert counts(score(ANY, partial="skip")) == (4, 3, 2, 2, 1)


def test_count_scores_the_token_as_right_when_its_set_allows_the_prediction():
    # c's gold ? takes the prediction B-VP: 5 tokens, 4 right (e wrong);
    # gold NP(a b) VP(c) NP(d e), pred NP(a b) VP(c) NP(d): 2 correct
    assert counts(score(ANY, partial="count")) == (5, 4, 3, 3, 2)
    assert per_type(score(ANY, partial="count")) == {"NP": (2, 2, 1), "VP": (1, 1, 1)}


def test_literal_reads_partial_tags_as_conlleval_does():
    # "?" is prefix "?" of the empty type: a one-word chunk of type "" on c, and it
    # ends NP(a b) and starts NP(d e) as any type change does; 3 right tags (a b d)
    report = score(ANY, partial="literal")
    assert counts(report) == (5, 3, 3, 3, 1)
    assert per_type(report) == {"": (1, 0, 0), "NP": (2, 2, 1), "VP": (0, 1, 0)}


def test_label_sets_in_count_mode():
    # a b take B-ORG I-ORG (allowed), d takes its first member B-PER (MISC is not in
    # its set): 4 tokens, 3 right; gold ORG(a b) PER(d), pred ORG(a b) MISC(d)
    report = score(SETS, partial="count")
    assert counts(report) == (4, 3, 2, 2, 1)
    assert per_type(report) == {"MISC": (0, 1, 0), "ORG": (1, 1, 1), "PER": (1, 0, 0)}


def test_label_sets_in_skip_mode():
    # only c is fully labelled: 1 token, right, no chunk on either side
    assert counts(score(SETS)) == (1, 1, 0, 0, 0)


def test_skip_is_conlleval_on_the_file_with_partial_lines_made_breaks():
    text = ("w B-NP B-NP\nx ? I-NP\ny I-NP I-NP\nz B-VP|O B-VP\n\n"
            "u O O\nv B-PP|B-NP B-NP\nt I-NP I-NP\ns B-VP B-VP\n")
    broken = "".join("\n" if ("?" in line or "|" in line) else line
                     for line in text.splitlines(keepends=True))
    assert "?" not in broken
    skipped = score(text)
    reference = score(broken, partial="literal")
    assert counts(skipped) == counts(reference)
    assert per_type(skipped) == per_type(reference)
    # by hand: tokens w y u t s (5), all right; gold NP(w) NP(y) NP(t) VP(s), pred the same
    assert counts(skipped) == (5, 5, 4, 4, 4)


def test_files_without_partial_tags_score_the_same_in_every_mode():
    text = "a B-NP B-NP\nb I-NP B-NP\nc O O\n\nd B-VP B-VP\ne I-VP O\n"
    reports = [score(text, partial=mode) for mode in ("skip", "count", "literal")]
    assert len({counts(r) for r in reports}) == 1
    assert counts(reports[0]) == (5, 3, 2, 3, 0)


def test_the_sequence_api_takes_the_mode():
    gold, pred = [["B-NP", "?", "O"]], [["B-NP", "I-NP", "O"]]
    assert evaluate(gold, pred).tokens == 2
    assert evaluate(gold, pred, partial="count").tokens == 3
    with pytest.raises(ValueError, match="unknown partial-label mode"):
        evaluate(gold, pred, partial="guess")


def test_a_malformed_set_names_its_position():
    with pytest.raises(PartialTagError) as err:
        resolve_partial(["O", "B-X||B-Y"], ["O", "B-X"], "count")
    assert err.value.index == 1 and "empty member" in str(err.value)


def test_the_scheme_check_does_not_judge_transitions_at_partial_gold_tags():
    text = "a B-NP B-NP\nb ? I-NP\nc E-NP E-NP\nd B-VP|S-VP S-VP\n"
    data = read_eval_file(io.BytesIO(text.encode("utf-8")))
    check_scheme(data, "iobes")  # B-NP ? E-NP: what ? stands for may close the chunk
    with pytest.raises(ValueError, match="not a tag of scheme"):
        check_scheme(data, "iobes", partial="literal")


def test_cli_partial_option_note_and_json(tmp_path):
    path = tmp_path / "out.txt"
    path.write_text(ANY, encoding="utf-8")
    runner = CliRunner()
    result = runner.invoke(cli, ["eval", str(path)])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("processed 4 tokens with 2 phrases; found: 2 phrases; "
                                    "correct: 1.\n")
    assert "1 tokens with a partial gold label left out (--partial skip)" in result.stderr
    result = runner.invoke(cli, ["eval", "--partial", "count", "--format", "json", str(path)])
    doc = json.loads(result.stdout)
    assert doc["partial"] == {"mode": "count", "tokens": 1}
    assert (doc["tokens"], doc["correct_tags"], doc["overall"]["correct"]) == (5, 4, 2)
    plain = tmp_path / "plain.txt"
    plain.write_text("a B-NP B-NP\n", encoding="utf-8")
    result = runner.invoke(cli, ["eval", "--format", "json", str(plain)])
    assert "partial" not in json.loads(result.stdout) and result.stderr == ""


def test_cli_malformed_set_is_one_error_line(tmp_path):
    path = tmp_path / "out.txt"
    path.write_text("a O O\nb B-X| B-X\n", encoding="utf-8")
    result = CliRunner().invoke(cli, ["eval", str(path)])
    one_error_line(result, f"{path}:2:", "empty member")
