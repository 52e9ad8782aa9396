"""crfkit eval --confusion / --report: token confusion and chunk error classes."""

from __future__ import annotations

import json

import numpy as np
import pytest

from crfkit.evaluation.confusion import chunk_errors, chunk_spans, confusion_matrix
from crfkit.evaluation.scoring import evaluate_tags
from tests.helpers import run

# Every chunk class once (None: a sentence break). Gold chunks: NP[0,2) correct,
# VP[3,4) predicted as NP (wrong type), NP[4,6) predicted as NP[4,5) (wrong
# boundary), PP[7,8) not predicted (missed), NP[9,10) correct; ADJP[10,11) is
# predicted over an O token (spurious).
GOLD = ["B-NP", "I-NP", "O", "B-VP", "B-NP", "I-NP", "O", "B-PP", None, "B-NP", "O"]
PRED = ["B-NP", "I-NP", "O", "B-NP", "B-NP", "O", "O", "O", None, "B-NP", "B-ADJP"]


def test_chunk_spans_follow_conlleval_rules() -> None:
    assert chunk_spans(GOLD) == [(0, 2, "NP"), (3, 4, "VP"), (4, 6, "NP"), (7, 8, "PP"),
                                 (9, 10, "NP")]
    # IOB1: I-X after O starts a chunk; a type change splits chunks
    assert chunk_spans(["I-NP", "I-NP", "I-VP", "O", "I-NP"]) == [
        (0, 2, "NP"), (2, 3, "VP"), (4, 5, "NP")]


def test_chunk_classes_of_the_hand_made_example() -> None:
    errors = chunk_errors(GOLD, PRED)
    assert errors.counts == {"correct": 2, "wrong_type": 1, "wrong_boundary": 1, "missed": 1,
                             "spurious": 1}
    assert (errors.gold, errors.found, errors.found_wrong_boundary) == (5, 5, 1)
    assert errors.type_confusions == {("VP", "NP"): 1}
    assert errors.by_type["NP"] == {"correct": 2, "wrong_type": 0, "wrong_boundary": 1,
                                    "missed": 0, "spurious": 0}
    assert errors.by_type["ADJP"]["spurious"] == 1
    assert errors.by_type["PP"]["missed"] == 1
    assert evaluate_tags(GOLD, PRED).overall.correct == errors.counts["correct"]


def test_token_confusion_matrix_of_the_hand_made_example() -> None:
    tags, matrix = confusion_matrix(evaluate_tags(GOLD, PRED))
    assert tags == ["B-ADJP", "B-NP", "B-PP", "B-VP", "I-NP", "O"]
    cell = {(g, p): int(matrix[tags.index(g), tags.index(p)]) for g in tags for p in tags}
    expected = {("B-NP", "B-NP"): 3, ("I-NP", "I-NP"): 1, ("O", "O"): 2, ("B-VP", "B-NP"): 1,
                ("I-NP", "O"): 1, ("B-PP", "O"): 1, ("O", "B-ADJP"): 1}
    assert {k: v for k, v in cell.items() if v} == expected
    assert matrix.sum() == 10  # tokens; the break is not one


def _random_iob2(rng: np.random.Generator, n: int) -> list[str | None]:
    tags: list[str | None] = []
    prev = "O"
    for _ in range(n):
        r = rng.random()
        if r < 0.1:
            tags.append(None)
            prev = "O"
            continue
        kind = str(rng.choice(["NP", "VP", "PP"]))
        if r < 0.35:
            tag = "O"
        elif r < 0.6 and prev != "O":
            tag = "I-" + prev[2:]
        else:
            tag = "B-" + kind
        tags.append(tag)
        prev = tag
    return tags


@pytest.mark.parametrize("seed", range(5))
def test_classes_add_up_and_correct_is_conllevals(seed: int) -> None:
    rng = np.random.default_rng(seed)
    gold = _random_iob2(rng, 300)
    pred = [None if g is None else (g if rng.random() < 0.7 else
                                    str(rng.choice(["O", "B-NP", "I-NP", "B-VP"])))
            for g in gold]
    errors = chunk_errors(gold, pred)
    report = evaluate_tags(gold, pred)
    c = errors.counts
    assert errors.gold == report.overall.support
    assert errors.found == report.overall.found
    assert c["correct"] + c["wrong_type"] + c["wrong_boundary"] + c["missed"] == errors.gold
    assert (c["correct"] + c["wrong_type"] + c["spurious"] + errors.found_wrong_boundary
            == errors.found)
    assert c["correct"] == report.overall.correct


def test_eval_confusion_text_and_json(tmp_path) -> None:
    path = tmp_path / "tags.txt"
    path.write_text("".join("\n" if g is None else f"w {g} {p}\n"
                            for g, p in zip(GOLD, PRED, strict=True)), encoding="utf-8")
    text = run("eval", "--confusion", path)
    assert text.exit_code == 0, text.stderr
    assert text.output.startswith("processed 10 tokens with 5 phrases; found: 5 phrases; "
                                  "correct: 2.\n")
    assert "  wrong type            1" in text.output
    assert "  spurious              1" in text.output
    assert "VP -> NP 1" in text.output
    doc = json.loads(run("eval", "--confusion", "--format", "json", path).output)
    assert doc["chunk_errors"]["missed"] == 1
    assert doc["chunk_errors"]["wrong_boundary"] == 1
    tags = doc["confusion"]["tags"]
    assert doc["confusion"]["matrix"][tags.index("B-VP")][tags.index("B-NP")] == 1
    assert "confusion" not in json.loads(run("eval", "--format", "json", path).output)
    refused = run("eval", "--confusion", "-l", path)
    assert refused.exit_code == 1 and "--confusion" in refused.stderr


def test_eval_report_draws_png(tmp_path) -> None:
    pytest.importorskip("matplotlib")
    path = tmp_path / "tags.txt"
    path.write_text("".join("\n" if g is None else f"w {g} {p}\n"
                            for g, p in zip(GOLD, PRED, strict=True)), encoding="utf-8")
    result = run("eval", "--report", tmp_path / "rep", path)
    assert result.exit_code == 0, result.stderr
    for name in ("confusion.png", "types.png"):
        assert (tmp_path / "rep" / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    csv_lines = (tmp_path / "rep" / "confusion.csv").read_text().splitlines()
    assert csv_lines[0] == "gold,B-ADJP,B-NP,B-PP,B-VP,I-NP,O"
    assert "B-VP,0,1,0,0,0,0" in csv_lines
    assert "data:image/png;base64," in (tmp_path / "rep" / "index.html").read_text()
