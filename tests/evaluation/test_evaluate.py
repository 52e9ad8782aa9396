"""Tests of crfkit.evaluation (scoring, reading, formatting): conlleval's counts on
hand-counted examples, its output format (byte for byte where we know it), the
JSON/--tokens extras, input errors and the CLI.

The differential check against conlleval.pl itself is scripts/conlleval_diff.py; nothing
here needs perl. Each example's counts are worked out by hand in the comments, with
"gold:"/"pred:" listing chunks as TYPE(words).
"""

from __future__ import annotations

import io
import json
import random
import re
import subprocess
import sys

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from crfkit.cli import cli
from crfkit.errors import InputError, UsageError
from crfkit.evaluation.counts import EvalReport
from crfkit.evaluation.formatting import (
    format_conlleval,
    format_json,
    format_latex,
    format_token_table,
)
from crfkit.evaluation.reading import EvalInput, read_eval_file
from crfkit.evaluation.run_eval import run_eval_command
from crfkit.evaluation.scoring import check_scheme, evaluate, evaluate_tags
from tests.helpers import eval_counts as counts
from tests.helpers import eval_per_type as per_type
from tests.helpers import one_error_line, run


def report_of(text: str, *, delimiter: str | None = None, **options) -> EvalReport:
    """Score a conlleval file given as text."""
    data = read_eval_file(io.BytesIO(text.encode("utf-8")), delimiter=delimiter)
    return evaluate_tags(data.gold, data.pred, **options)


def run_cli(args: list[str], stdin: str | None = None):
    result = CliRunner().invoke(cli, args, input=stdin)
    return result


# ---------------------------------------------------------------------------
# Chunk rules


def test_b_i_chains():
    text = (
        "a B-NP B-NP\n"
        "b I-NP I-NP\n"
        "c B-VP B-VP\n"
        "d B-NP B-NP\n"
        "e I-NP O\n"
    )
    # gold: NP(a b) VP(c) NP(d e) -> 3;  pred: NP(a b) VP(c) NP(d) -> 3
    # correct: NP(a b), VP(c); NP(d) ends before gold NP(d e) does -> 2
    # tags: all equal but e -> 4 of 5
    r = report_of(text)
    assert counts(r) == (5, 4, 3, 3, 2)
    assert per_type(r) == {"NP": (2, 2, 1), "VP": (1, 1, 1)}
    assert r.accuracy == pytest.approx(80.0)
    assert r.precision == pytest.approx(200 / 3)
    assert r.recall == pytest.approx(200 / 3)
    assert r.f1 == pytest.approx(200 / 3)
    assert format_conlleval(r) == (
        "processed 5 tokens with 3 phrases; found: 3 phrases; correct: 2.\n"
        "accuracy:  80.00%; precision:  66.67%; recall:  66.67%; FB1:  66.67\n"
        "               NP: precision:  50.00%; recall:  50.00%; FB1:  50.00  2\n"
        "               VP: precision: 100.00%; recall: 100.00%; FB1: 100.00  1\n"
    )


def test_i_after_o_starts_a_chunk():
    text = (
        "a O O\n"
        "b I-NP I-NP\n"   # O -> I starts a chunk (IOB1) on both sides
        "c I-NP I-NP\n"
        "d O I-NP\n"      # gold ends at c, pred runs on to d
        "e I-NP B-NP\n"   # gold: O -> I starts NP(e); pred: I -> B starts NP(e)
    )
    # gold: NP(b c) NP(e) -> 2;  pred: NP(b c d) NP(e) -> 2
    # correct: NP(e) only (NP(b c) vs NP(b c d) end differently) -> 1
    # tags equal on a b c -> 3 of 5
    r = report_of(text)
    assert counts(r) == (5, 3, 2, 2, 1)


def test_type_change_splits_a_chunk():
    text = "a B-NP B-NP\nb I-VP I-NP\nc I-VP I-VP\n"
    # gold: I-VP after B-NP is a type change -> NP(a) VP(b c) -> 2
    # pred: NP(a b) VP(c) -> 2; no chunk has the same span on both sides -> 0 correct
    # tags equal on a, c -> 2
    r = report_of(text)
    assert counts(r) == (3, 2, 2, 2, 0)
    assert per_type(r) == {"NP": (1, 1, 0), "VP": (1, 1, 0)}


def test_e_and_s_tags_read_as_conlleval_does():
    text = (
        "a B-PER B-PER\n"
        "b E-PER E-PER\n"   # B -> E: neither an end nor a start rule: PER(a b) goes on
        "c S-LOC S-LOC\n"   # type change PER -> LOC: PER ends, LOC starts
        "d S-LOC B-LOC\n"   # gold S -> S: no rule, same type: conlleval merges it into LOC(c d)
        "e O O\n"           # pred S -> B: no rule either, so pred is LOC(c d) too
    )
    # conlleval: gold PER(a b) LOC(c d); pred PER(a b) LOC(c d) -> 2, 2, 2 correct
    # tags differ on d only -> 4 of 5
    r = report_of(text)
    assert counts(r) == (5, 4, 2, 2, 2)
    # --scheme iobes: S always starts and ends a chunk, B always starts one:
    # gold PER(a b) LOC(c) LOC(d); pred PER(a b) LOC(c) LOC(d ...) which B-LOC opens and
    # O ends -> LOC(d) too: 3, 3, 3 correct
    r = report_of(text, scheme="iobes")
    assert counts(r) == (5, 4, 3, 3, 3)


def test_e_before_b_merges_same_type_chunks_without_iobes():
    text = "a B-X B-X\nb E-X E-X\nc B-X B-X\nd E-X I-X\n"
    # conlleval has no E -> B rule: gold is one chunk X(a b c d); pred likewise ->1 1 1
    assert counts(report_of(text)) == (4, 3, 1, 1, 1)
    # iobes: gold X(a b) X(c d); pred X(a b) X(c d...) (I-X at d continues) -> 2 2 2
    assert counts(report_of(text, scheme="iobes")) == (4, 3, 2, 2, 2)


def test_ioe1_e_tags():
    text = "a I-NP I-NP\nb E-NP I-NP\nc I-NP I-NP\nd O O\n"
    # gold: NP(a b) then E -> I ends and starts: NP(c) -> 2
    # pred: NP(a b c) -> 1; correct 0 (pred's chunk ends at c, gold's first at b)
    assert counts(report_of(text)) == (4, 3, 2, 1, 0)


def test_bracket_tags_are_one_word_chunks():
    text = "a [-NP [-NP\nb ]-NP ]-NP\nc [ O\n"
    # gold: a '[' starts NP; b: previous '[' ends it, ']' starts NP(b); c: ']' ends it,
    #       '[' starts a chunk of the empty type -> NP(a) NP(b) ""(c) = 3
    # pred: NP(a) NP(b); c is O -> 2;  correct NP(a), NP(b) -> 2
    # tags: c differs -> 2 of 3
    r = report_of(text)
    assert counts(r) == (3, 2, 3, 2, 2)
    assert per_type(r) == {"": (1, 0, 0), "NP": (2, 2, 2)}
    # the empty type sorts first and is printed padded to 17 columns
    assert format_conlleval(r).splitlines()[2] == (
        " " * 17 + ": precision:   0.00%; recall:   0.00%; FB1:   0.00  0")


def test_hyphenated_types_split_at_the_first_hyphen():
    text = "a B-DATE-TIME B-DATE-TIME\nb I-DATE-TIME I-DATE\n"
    # gold: DATE-TIME(a b) -> 1; pred: DATE-TIME(a), then I-DATE is a type change: DATE(b) -> 2
    # correct 0; tags differ on b -> 1 of 2
    r = report_of(text)
    assert counts(r) == (2, 1, 1, 2, 0)
    assert list(r.types) == ["DATE", "DATE-TIME"]
    assert per_type(r) == {"DATE": (0, 1, 0), "DATE-TIME": (1, 1, 0)}


def test_untyped_tags_and_the_doubled_empty_type_line():
    text = "a B-X B-X\nb NONE NONE\n"
    # b: prefix NONE, empty type; the type change X -> "" ends X(a) and starts ""(b)
    # on both sides -> 2, 2, 2 correct. Without -r the outside tag (-o) is not used.
    for options in ({}, {"outside": "NONE"}):
        r = report_of(text, **options)
        assert counts(r) == (2, 2, 2, 2, 2)
    # conlleval lists "" once for the gold side and once for the found side
    lines = format_conlleval(r).splitlines()
    assert lines[2] == lines[3] == (
        " " * 17 + ": precision: 100.00%; recall: 100.00%; FB1: 100.00  1")
    assert lines[4].startswith("                X: ")
    assert r.listed_types() == ["", "", "X"]


def test_zero_type_is_the_empty_type():
    # Perl treats the string "0" as false, so conlleval turns type "0" into ""
    r = report_of("a B-0 B-0\nb B- B-\n")
    # a: O -> B starts ""; b: B -> B ends and starts "" -> 2 chunks each side, 2 correct
    assert counts(r) == (2, 2, 2, 2, 2)
    assert list(r.types) == [""]


def test_raw_mode():
    text = "a PER PER\nb PER PER\nc O LOC\nd NONE O\n"
    # -r: every tag but O becomes B-tag.
    # gold: PER(a) PER(b) NONE(d) -> 3; pred: PER(a) PER(b) LOC(c) -> 3; correct PER, PER -> 2
    # tags equal on a b -> 2 of 4
    r = report_of(text, raw=True)
    assert counts(r) == (4, 2, 3, 3, 2)
    assert per_type(r) == {"LOC": (0, 1, 0), "NONE": (1, 0, 0), "PER": (2, 2, 2)}
    # -r -o NONE: NONE is outside too -> gold PER(a) PER(b) only; d: NONE~O, an equal tag
    r = report_of(text, raw=True, outside="NONE")
    assert counts(r) == (4, 3, 2, 3, 2)
    # without -r these tags have no prefix and no type: no chunks at all
    assert counts(report_of(text)) == (4, 2, 0, 0, 0)


def test_sentence_breaks_end_chunks():
    joined = "a B-NP B-NP\nb I-NP I-NP\n"
    # one chunk NP(a b)
    assert counts(report_of(joined)) == (2, 2, 1, 1, 1)
    # a blank line, a -X- line (whatever its tags) end NP(a); I-NP after the break starts NP(b)
    for brk in ("\n", "-X- B-NP B-NP\n", "-X- -X- -X-\n"):
        text = "a B-NP B-NP\n" + brk + "b I-NP I-NP\n"
        assert counts(report_of(text)) == (2, 2, 2, 2, 2), brk


def test_docstart_lines_are_tokens():
    text = "-DOCSTART- -X- O O\n\na NNP B-PER B-PER\nb NNP I-PER O\n"
    # -DOCSTART- is an ordinary O/O token (its first field is not -X-): 3 tokens
    # gold PER(a b), pred PER(a): 1, 1, 0 correct; tags differ on b -> 2 of 3
    assert counts(report_of(text)) == (3, 2, 1, 1, 0)


def test_chunk_open_at_end_of_input():
    # no final newline, no final blank line: the open chunk is still counted as correct
    assert counts(report_of("a B-NP B-NP\nb I-NP I-NP")) == (2, 2, 1, 1, 1)


def test_empty_input():
    for text in ("", "\n\n\n"):
        r = report_of(text)
        assert counts(r) == (0, 0, 0, 0, 0)
        assert r.accuracy == r.precision == r.recall == r.f1 == 0.0
        assert format_conlleval(r) == (
            "processed 0 tokens with 0 phrases; found: 0 phrases; correct: 0.\n")
        assert format_latex(r) == (
            "        & Precision &  Recall  & F$_{\\beta=1} \\\\\\hline\\hline\n"
            "Overall &    0.00\\% &   0.00\\% &   0.00 \\\\\\hline\n")
        assert json.loads(format_json(r))["overall"]["f1"] == 0.0


def test_no_chunks():
    r = report_of("a O O\nb O O\n")
    assert format_conlleval(r) == (
        "processed 2 tokens with 0 phrases; found: 0 phrases; correct: 0.\n"
        "accuracy: 100.00%; precision:   0.00%; recall:   0.00%; FB1:   0.00\n")


def test_two_column_files():
    # no word column: the two fields are the tags
    assert counts(report_of("B-NP B-NP\nI-NP O\n")) == (2, 1, 1, 1, 0)


def test_printf_rounding_matches_c():
    # 100 * 1 / 800 = 0.125 exactly; C's printf and Python both round the tie to even
    gold = [["B-X"] * 800]  # 800 one-word chunks
    pred = [["B-X"] + ["O"] * 799]  # only the first found: 1 correct of 800 -> recall 0.125
    r = evaluate(gold, pred)
    assert r.recall == 0.125
    assert "recall:   0.12%" in format_conlleval(r)


def test_byte_width_padding_for_non_ascii_types():
    # conlleval pads type names by bytes: "ÄÖ" is 4 bytes in UTF-8 -> 13 spaces
    r = report_of("a B-ÄÖ B-ÄÖ\n")
    assert format_conlleval(r).splitlines()[2].startswith(" " * 13 + "ÄÖ: ")


# ---------------------------------------------------------------------------
# Delimiters and errors


def test_delimiters():
    plain = "a B-NP B-NP\nb I-NP O\n"
    expected = counts(report_of(plain))
    assert counts(report_of(plain.replace(" ", "\t"), delimiter="\t")) == expected
    assert counts(report_of(plain.replace(" ", "\t"), delimiter="\\t")) == expected  # regex
    assert counts(report_of(plain.replace(" ", "|"), delimiter="|")) == expected  # literal
    assert counts(report_of(plain.replace(" ", "  "))) == expected  # any whitespace
    # conlleval's single-space split sees an empty field between two spaces
    with pytest.raises(InputError):
        report_of("a  B-NP B-NP\nb I-NP O\n", delimiter=" ")
    with pytest.raises(UsageError):
        report_of(plain, delimiter="[ ")  # longer than one character: a (bad) regex


def test_varying_field_count_is_an_error():
    with pytest.raises(InputError) as info:
        report_of("a X B-NP B-NP\nb I-NP I-NP\n")
    assert info.value.line == 2
    assert "expected 4 like line 1" in info.value.message


def test_one_field_lines_are_errors():
    with pytest.raises(InputError) as info:
        report_of("a B-NP B-NP\n\nb\n")
    assert info.value.line == 3
    # a first line of one field is not a count mismatch, but still too short
    with pytest.raises(InputError) as info:
        report_of("\nfoo\n")
    assert info.value.line == 2
    assert "at least two fields" in info.value.message
    # a one-field -X- line is a sentence break, fine when all lines have one field
    assert counts(report_of("-X-\n-X-\n")) == (0, 0, 0, 0, 0)


def test_read_errors_name_the_file(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"a B-NP B-NP\nb \xff-NP O\n")
    with pytest.raises(InputError) as info:  # strict with --encoding (the default reads bytes)
        read_eval_file(bad, encoding="utf-8")
    assert (info.value.path, info.value.line) == (str(bad), 2)
    with pytest.raises(InputError) as info:
        read_eval_file(tmp_path / "missing.txt")
    assert info.value.path == str(tmp_path / "missing.txt")
    # the same bytes read fine as Latin-1
    assert len(read_eval_file(bad, encoding="latin-1").gold) == 2


def test_scheme_option(tmp_path):
    path = tmp_path / "tags.txt"
    path.write_text("a B-NP B-NP\nb E-NP E-NP\n", encoding="utf-8")
    out = io.StringIO()

    def run(**options):
        options = {"delimiter": None, "outside": "O", "raw": False, "latex": False,
                   "fmt": "text", "tokens": False, "scheme": None, "encoding": "utf-8",
                   **options}
        run_eval_command(str(path), out=out, **options)

    # E- tags do not belong to IOB2: the file was probably tagged in another scheme
    with pytest.raises(InputError) as info:
        run(scheme="iob2")
    assert info.value.line == 2 and "E-NP" in info.value.message
    run(scheme="iobes")
    assert out.getvalue().startswith("processed 2 tokens with 1 phrases; found: 1 phrases; "
                                     "correct: 1.\n")
    with pytest.raises(UsageError):
        run(scheme="iob2", raw=True)
    with pytest.raises(UsageError):
        run(latex=True, fmt="json")


# ---------------------------------------------------------------------------
# Output formats


SMALL = "a B-NP B-NP\nb I-NP I-NP\nc O B-VP\n\n"
# gold NP(a b); pred NP(a b) VP(c): 1 gold, 2 found, 1 correct; tags 2 of 3


def test_latex_output():
    assert format_latex(report_of(SMALL)) == (
        "        & Precision &  Recall  & F$_{\\beta=1} \\\\\\hline\n"
        "NP      &  100.00\\% & 100.00\\% & 100.00 \\\\\n"
        "VP      &    0.00\\% &   0.00\\% &   0.00 \\\\\\hline\n"
        "Overall &   50.00\\% & 100.00\\% &  66.67 \\\\\\hline\n")


def test_json_keys():
    doc = json.loads(format_json(report_of(SMALL)))
    assert list(doc) == ["format", "options", "tokens", "correct_tags", "accuracy",
                         "overall", "types", "labels"]
    assert doc["format"] == "crfkit-eval/1"
    assert doc["options"] == {"outside": "O", "raw": False, "scheme": None}
    assert (doc["tokens"], doc["correct_tags"]) == (3, 2)
    assert doc["accuracy"] == pytest.approx(200 / 3)
    score_keys = ["precision", "recall", "f1", "support", "found", "correct"]
    assert list(doc["overall"]) == score_keys
    assert doc["overall"] == {"precision": 50.0, "recall": 100.0,
                              "f1": pytest.approx(200 / 3), "support": 1, "found": 2,
                              "correct": 1}
    assert list(doc["types"]) == ["NP", "VP"]
    assert doc["types"]["VP"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0,
                                  "support": 0, "found": 1, "correct": 0}
    # token level, per full tag: O is gold once (c) and never predicted
    assert list(doc["labels"]) == ["B-NP", "B-VP", "I-NP", "O"]
    assert doc["labels"]["O"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0,
                                  "support": 1, "found": 0, "correct": 0}
    assert all(list(v) == score_keys for v in doc["labels"].values())


def test_token_table():
    r = report_of(SMALL)
    table = format_token_table(r)
    lines = table.splitlines()
    assert lines[0] == "token-level scores per tag: 3 tokens; correct: 2; accuracy:  66.67%"
    assert lines[1].split() == ["tag", "precision", "recall", "F1", "gold", "found", "correct"]
    rows = {line.split()[0]: line.split()[1:] for line in lines[2:]}
    assert rows["B-NP"] == ["100.00%", "100.00%", "100.00", "1", "1", "1"]
    assert rows["B-VP"] == ["0.00%", "0.00%", "0.00", "0", "1", "0"]
    assert rows["O"] == ["0.00%", "0.00%", "0.00", "1", "0", "0"]
    # conlleval parsers must not mistake these rows for chunk-type lines
    assert not any(re.search(r": precision:", line) for line in lines)
    labels = r.labels()
    assert (labels["I-NP"].support, labels["I-NP"].found, labels["I-NP"].correct) == (1, 1, 1)


def test_text_output_parses_like_downstream_scripts_expect():
    rng = random.Random(5)
    tags = ["O", "B-NP", "I-NP", "B-VP", "I-VP", "B-PP"]
    lines = [f"w{i} {rng.choice(tags)} {rng.choice(tags)}" if i % 17 else "" for i in range(500)]
    r = report_of("\n".join(lines) + "\n")
    text = format_conlleval(r)
    first, second, *rest = text.splitlines()
    m = re.match(r"processed (\d+) tokens with (\d+) phrases; found: (\d+) phrases; "
                 r"correct: (\d+)\.$", first)
    assert m and tuple(map(int, m.groups())) == (r.tokens, r.overall.support,
                                                  r.overall.found, r.overall.correct)
    m = re.match(r"accuracy:\s*([\d.]+)%; precision:\s*([\d.]+)%; recall:\s*([\d.]+)%; "
                 r"FB1:\s*([\d.]+)$", second)
    assert m
    acc, p, rc, f = map(float, m.groups())
    assert (acc, p, rc, f) == tuple(round(x, 2) for x in (r.accuracy, r.precision,
                                                            r.recall, r.f1))
    types = {}
    for line in rest:
        m = re.match(r"^\s*(\S+): precision:\s*([\d.]+)%; recall:\s*([\d.]+)%; "
                     r"FB1:\s*([\d.]+)\s+(\d+)$", line)
        assert m, line
        types[m.group(1)] = (float(m.group(4)), int(m.group(5)))
    assert list(types) == ["NP", "PP", "VP"]
    assert types["NP"] == (round(r.types["NP"].f1, 2), r.types["NP"].found)


# ---------------------------------------------------------------------------
# Python API


def test_evaluate_api_matches_file_reading():
    gold = [["B-NP", "I-NP", "O"], ["B-VP", "I-VP"]]
    pred = [["B-NP", "I-NP", "B-VP"], ["I-VP", "O"]]
    text = "\n\n".join("\n".join(f"w {g} {p}" for g, p in zip(gs, ps, strict=True))
                       for gs, ps in zip(gold, pred, strict=True)) + "\n\n"
    api = evaluate(gold, pred)
    assert counts(api) == counts(report_of(text))
    # gold NP(1 2) VP(4 5); pred NP(1 2) VP(3) VP(4) (I after the break starts a chunk)
    # -> 2, 3, 1 correct (VP(4) ends before gold VP(4 5)); tags equal on 1 2 only -> 2 of 5
    assert counts(api) == (5, 2, 2, 3, 1)
    with pytest.raises(ValueError):
        evaluate(gold, pred[:1])
    with pytest.raises(ValueError):
        evaluate([["O"]], [["O", "O"]])


# A direct, token-by-token reading of conlleval's rules (module docstring), to check the
# vectorised implementation against on random input.
_END = {("B", "B"), ("B", "O"), ("I", "B"), ("I", "O"), ("E", "E"), ("E", "I"), ("E", "O")}
_START = {("B", "B"), ("I", "B"), ("O", "B"), ("O", "I"), ("E", "E"), ("E", "I"), ("O", "E")}


def reference(lines: list[tuple[str, str] | None]) -> tuple[int, int, int, int, int]:
    def split(tag):
        prefix, _, kind = tag.partition("-")
        return prefix, "" if kind == "0" else kind

    def end(p, c, pt, ct):
        return (p, c) in _END or p in ("[", "]") or (p not in ("O", ".") and pt != ct)

    def start(p, c, pt, ct):
        return (p, c) in _START or c in ("[", "]") or (c not in ("O", ".") and pt != ct)

    tokens = tags_ok = support = found = correct = 0
    lg, lgt, lp, lpt = "O", "", "O", ""
    inside = False
    for item in lines:
        (g, gt), (p, pt) = (("O", ""), ("O", "")) if item is None else map(split, item)
        eg, ep = end(lg, g, lgt, gt), end(lp, p, lpt, pt)
        sg, sp = start(lg, g, lgt, gt), start(lp, p, lpt, pt)
        if inside:
            if eg and ep and lgt == lpt:
                correct += 1
                inside = False
            elif eg != ep or gt != pt:
                inside = False
        if sg and sp and gt == pt:
            inside = True
        support += sg
        found += sp
        if item is not None:
            tokens += 1
            tags_ok += (g, gt) == (p, pt)
        lg, lgt, lp, lpt = g, gt, p, pt
    correct += inside
    return tokens, tags_ok, support, found, correct


_ALPHABET = ["O", "B-A", "I-A", "E-A", "S-A", "B-B", "I-B", "[-A", "]-A", "[", "]", ".",
             ".-A", "A", "B", "B-A-B", "-A", "B-", "B-0", "X-A"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.none(), st.tuples(st.sampled_from(_ALPHABET),
                                               st.sampled_from(_ALPHABET))), max_size=60))
def test_vectorised_scoring_matches_reference(lines):
    gold = [None if x is None else x[0] for x in lines]
    pred = [None if x is None else x[1] for x in lines]
    assert counts(evaluate_tags(gold, pred)) == reference(lines)


# ---------------------------------------------------------------------------
# Command line


def test_cli_success(tmp_path):
    path = tmp_path / "out.txt"
    path.write_text(SMALL, encoding="utf-8")
    result = run_cli(["eval", str(path)])
    assert result.exit_code == 0, result.output
    assert result.output == format_conlleval(report_of(SMALL))
    # stdin by default; low scores are not an error
    result = run_cli(["eval"], stdin="a B-NP O\nb I-NP O\n")
    assert result.exit_code == 0
    assert result.output.startswith("processed 2 tokens with 1 phrases; found: 0 phrases")
    result = run_cli(["eval", "--format", "json", str(path)])
    assert result.exit_code == 0 and json.loads(result.output)["overall"]["found"] == 2
    result = run_cli(["eval", "--tokens", str(path)])
    assert result.exit_code == 0 and "token-level scores per tag" in result.output
    result = run_cli(["eval", "-l", str(path)])
    assert result.exit_code == 0 and result.output.endswith("\\hline\n")
    result = run_cli(["eval", "-r", "-o", "NONE", "-d", " ", str(path)])
    assert result.exit_code == 0


def test_cli_bad_file_reports_one_line(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("a B-NP B-NP\nb I-NP\n", encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "crfkit.cli", "eval", str(bad)],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 1
    assert proc.stdout == ""
    err_lines = proc.stderr.strip().splitlines()
    assert len(err_lines) == 1, proc.stderr
    assert f"{bad}:2:" in err_lines[0]
    assert "Traceback" not in proc.stderr
    missing = tmp_path / "missing.txt"
    proc = subprocess.run([sys.executable, "-m", "crfkit.cli", "eval", str(missing)],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and str(missing) in proc.stderr


# ---------------------------------------------------------------------------
# --scheme: transitions per scheme, both columns, the first bad line, -o (issue #13)


def scheme_error(text: str, scheme: str, *, outside: str = "O") -> InputError | None:
    """The error check_scheme raises for a conlleval file given as text, or None."""
    data = read_eval_file(io.BytesIO(text.encode("utf-8")), encoding="utf-8")
    try:
        check_scheme(data, scheme, outside=outside)
    except InputError as err:
        return err
    return None


def test_iob2_rejects_i_after_outside_and_at_a_sequence_start():
    err = scheme_error("a O O\nb I-LOC I-LOC\n", "iob2")
    assert err is not None and err.line == 2 and "gold" in err.message
    assert "I-LOC" in err.message
    assert scheme_error("a I-LOC I-LOC\n", "iob2").line == 1
    assert scheme_error("a B-PER B-PER\nb I-LOC I-LOC\n", "iob2").line == 2  # type change
    assert scheme_error("a B-LOC B-LOC\nb I-LOC I-LOC\nc I-LOC I-LOC\n", "iob2") is None
    # IOB1 allows all of these: I-X starts a chunk there
    for text in ("a O O\nb I-LOC I-LOC\n", "a I-PER I-PER\nb I-LOC I-LOC\n"):
        assert scheme_error(text, "iob1") is None


def test_iob1_allows_b_only_directly_after_the_same_type():
    assert scheme_error("a I-X I-X\nb B-X B-X\nc I-X I-X\n", "iob1") is None
    for text, line in (("a O O\nb B-X B-X\n", 2), ("a B-X B-X\n", 1),
                       ("a I-Y I-Y\nb B-X B-X\n", 2), ("a I-X I-X\n\nb B-X B-X\n", 3)):
        err = scheme_error(text, "iob1")
        assert err is not None and err.line == line, text
    for text in ("a O O\nb B-X B-X\n", "a B-X B-X\n", "a B-Y B-Y\nb B-X B-X\n"):
        assert scheme_error(text, "iob2") is None, text  # B-X after anything is IOB2


def test_iobes_chunks_must_be_closed():
    assert scheme_error("a B-X B-X\nb I-X I-X\nc E-X E-X\nd S-X S-X\ne O O\n", "iobes") is None
    # after B-X / I-X only I-X or E-X: not O, not another type, not S-X or B-X
    for text in ("a I-PER I-PER\n", "a B-PER B-PER\nb I-PER I-PER\nc O O\n",
                 "a B-PER B-PER\nb E-LOC E-LOC\n", "a B-PER B-PER\nb S-PER S-PER\n"):
        assert scheme_error(text, "iobes") is not None, text
    err = scheme_error("w B-PER B-PER\nx I-PER I-PER\ny O O\n", "iobes")
    assert err.line == 3 and "'O' after 'I-PER'" in err.message
    # a blank line, a -X- line or the end of the file does not close B-X / I-X:
    # the error names the line of the open tag
    for text in ("a B-PER B-PER\n\nb O O\n", "a O O\nb B-PER B-PER\n-X- x x\n",
                 "a O O\nb B-PER B-PER\n"):
        err = scheme_error(text, "iobes")
        assert err is not None and err.line == text.count("\n", 0, text.index("B-PER")) + 1
        assert "ends a sequence" in err.message
    # E-X / I-X only after B-X / I-X of the same type
    for text in ("a O O\nb E-X E-X\n", "a S-X S-X\nb I-X I-X\nc E-X E-X\n"):
        assert scheme_error(text, "iobes").line == 2, text


def test_scheme_checks_both_columns_and_reports_the_first_bad_line():
    text = "a B-X B-X\nb I-X O\nc O O\nd I-Y I-Y\n"
    err = scheme_error(text, "iobes")  # predicted 'O' after 'B-X' (line 2) comes first
    assert err.line == 2 and err.message.startswith("predicted tag 'O' after 'B-X'")
    err = scheme_error(text, "iob2")  # gold and predicted I-Y after O, line 4
    assert err.line == 4 and err.message.startswith("gold ")
    err = scheme_error("a O O\nb O E-NP\nc E-NP O\n", "iob2")
    assert err.line == 2 and err.message.startswith("predicted tag 'E-NP' is not a tag")


def test_sentence_breaks_reset_the_previous_tag():
    for brk in ("\n", "-X- -X- -X-\n"):
        err = scheme_error("a B-X B-X\n" + brk + "b I-X I-X\n", "iob2")
        assert err is not None and err.line == 3, brk


def test_scheme_honours_the_outside_tag(tmp_path):
    text = "a B-X B-X\nb I-X I-X\nc NONE NONE\nd B-Y NONE\n"
    assert scheme_error(text, "iob2", outside="NONE") is None
    assert scheme_error(text, "iob2") is not None  # NONE is no tag when O is outside
    err = scheme_error("a O O\n", "iob2", outside="NONE")  # nor O when NONE is
    assert err is not None and "expected 'NONE' or B/I-TYPE" in err.message
    assert scheme_error("a NONE NONE\nb I-X I-X\n", "iob2", outside="NONE").line == 2
    # and the -o tag is outside when scoring with a scheme: the same counts as with O
    path, plain = tmp_path / "none.txt", tmp_path / "o.txt"
    path.write_text(text)
    plain.write_text(text.replace("NONE", "O"))
    with_none = run_cli(["eval", "--scheme", "iob2", "-o", "NONE", str(path)])
    assert with_none.exit_code == 0, with_none.output
    assert with_none.output == run_cli(["eval", "--scheme", "iob2", str(plain)]).output
    assert with_none.output.startswith("processed 4 tokens with 2 phrases; found: 1 phrases")


def scheme_reference(lines: list[tuple[str, str] | None], scheme: str,
                     outside: str) -> tuple[int, str] | None:
    """(line, column) of the first tag breaking the scheme, token by token."""
    prefixes = {"iob1": "BI", "iob2": "BI", "iobes": "BIES"}[scheme]

    def parts(tag):
        if tag is None or tag == outside:
            return "O", ""
        prefix, hyphen, kind = tag.partition("-")
        return (prefix, kind) if hyphen and kind and prefix in prefixes else None

    def allowed(prev, cur):
        inside_same = prev[0] in ("B", "I") and prev[1] == cur[1]
        if scheme == "iob1":
            return cur[0] != "B" or inside_same
        if scheme == "iob2":
            return cur[0] != "I" or inside_same
        if prev[0] in ("B", "I"):
            return cur[0] in ("I", "E") and inside_same
        return cur[0] not in ("I", "E")

    found = []
    for column, side in ((0, "gold"), (1, "predicted")):
        prev = ("O", "")
        for number, item in enumerate([*lines, None], 1):
            tag = None if item is None else item[column]
            cur = parts(tag)
            if cur is None:
                found.append((number, side))
                break
            if not allowed(prev, cur):
                found.append((number - 1 if tag is None else number, side))
                break
            prev = cur
    return min(found, key=lambda f: f[0]) if found else None


_SCHEME_ALPHABET = ["O", "NONE", "B-A", "I-A", "E-A", "S-A", "B-B", "I-B", "E-B", "S-B",
                    "B-", "A", "X-A"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.none(), st.tuples(st.sampled_from(_SCHEME_ALPHABET),
                                               st.sampled_from(_SCHEME_ALPHABET))),
                max_size=12),
       st.sampled_from(["iob1", "iob2", "iobes"]), st.sampled_from(["O", "NONE"]))
def test_scheme_check_matches_reference(lines, scheme, outside):
    data = EvalInput([None if x is None else x[0] for x in lines],
                     [None if x is None else x[1] for x in lines], "f")
    expected = scheme_reference(lines, scheme, outside)
    try:
        check_scheme(data, scheme, outside=outside)
        got = None
    except InputError as err:
        got = (err.line, err.message.split(" ")[0])
    assert got == expected


# ---------------------------------------------------------------------------
# Encodings: byte-transparent by default, strict with --encoding (issue #13)


LABEL_PATTERNS = "U00:%x[0,0]\nU01:%x[-1,0]/%x[0,0]\nU02:%x[0,1]\nB\n"
LABEL_TRAIN = ("the DT B-NP\ncat NN I-NP\nsat VBD B-VP\nin IN O\nMünchen NE B-ÖRT\n\n"
               "a DT B-NP\ndog NN I-NP\nran VBD B-VP\n\nbig JJ B-NP\ndogs NNS I-NP\n"
               "bark VBP B-VP\nin IN O\nWien NE B-ÖRT\n")
LABEL_TEST = ("the DT B-NP\ndog NN I-NP\nran VBD B-VP\nin IN O\nWien NE B-ÖRT\n\n"
              "big JJ B-NP\ncat NN I-NP\nsat VBD B-VP\n")


@pytest.fixture(scope="module")
def labelled(tmp_path_factory):
    """A tiny model and its test file (UTF-8 and Latin-1): real `crfkit label` output."""
    tmp = tmp_path_factory.mktemp("eval-label")
    (tmp / "p.pat").write_text(LABEL_PATTERNS)
    (tmp / "train.txt").write_text(LABEL_TRAIN, encoding="utf-8")
    (tmp / "test.txt").write_text(LABEL_TEST, encoding="utf-8")
    (tmp / "test-latin1.txt").write_bytes(LABEL_TEST.encode("latin-1"))
    result = CliRunner().invoke(cli, ["train", "-q", "-p", str(tmp / "p.pat"),
                                      str(tmp / "train.txt"), str(tmp / "m.model")])
    assert result.exit_code == 0, result.output
    return tmp


def label_output(tmp, *options: str, test: str = "test.txt") -> bytes:
    result = CliRunner().invoke(cli, ["label", "-m", str(tmp / "m.model"), "-c", *options,
                                      str(tmp / test)])
    assert result.exit_code == 0, result.output
    return result.stdout_bytes


def eval_bytes(data: bytes, *options: str):
    return CliRunner().invoke(cli, ["eval", *options], input=data)


LATIN1 = "Ça B-PERSÖN B-PERSÖN\nété I-PERSÖN O\nü B-ÄÖ B-ÄÖ\n".encode("latin-1")


def test_latin1_input_is_read_and_written_back_byte_for_byte():
    result = eval_bytes(LATIN1)
    assert result.exit_code == 0, result.output
    lines = result.stdout_bytes.split(b"\n")
    assert lines[0] == b"processed 3 tokens with 2 phrases; found: 2 phrases; correct: 1."
    # the type names are the input's bytes, padded to 17 bytes as conlleval's printf does
    assert lines[2].startswith(b" " * 11 + "PERSÖN".encode("latin-1") + b": ")
    assert lines[3].startswith(b" " * 15 + "ÄÖ".encode("latin-1") + b": ")
    # the same as naming the encoding; UTF-8 input round-trips as UTF-8
    assert eval_bytes(LATIN1, "--encoding", "latin-1").stdout_bytes == result.stdout_bytes
    utf8 = eval_bytes(LATIN1.decode("latin-1").encode("utf-8"))
    assert utf8.stdout_bytes.split(b"\n")[3].startswith(b" " * 13 + "ÄÖ".encode() + b": ")
    # JSON is UTF-8 text whatever the input's bytes
    doc = json.loads(eval_bytes(LATIN1, "--format", "json").stdout_bytes.decode("utf-8"))
    assert list(doc["types"]) == ["PERSÖN", "ÄÖ"]


def test_label_latin1_output_needs_no_encoding_option(labelled):
    output = label_output(labelled, "--encoding", "latin-1", test="test-latin1.txt")
    assert "B-ÖRT".encode("latin-1") in output
    result = eval_bytes(output)
    assert result.exit_code == 0, result.output
    assert b"\n" + b" " * 14 + "ÖRT".encode("latin-1") + b": precision: 100.00%" \
        in result.stdout_bytes


def test_decode_errors_name_line_byte_offset_and_the_option(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"a B-NP B-NP\nb \xff-NP O\n")
    result = run_cli(["eval", "--encoding", "utf-8", str(bad)])
    line = one_error_line(result, f"{bad}:2:", "byte offset 14", "--encoding")
    assert "utf-8" in line
    assert run_cli(["eval", str(bad)]).exit_code == 0  # without --encoding: bytes
    # a lone surrogate (UTF-7 can spell one): the offset of its line
    bad.write_bytes(b"w O O\nw B-+2AA- O\n")
    one_error_line(run_cli(["eval", "--encoding", "utf-7", str(bad)]), f"{bad}:2:",
                   "byte offset 6", "lone surrogate", "--encoding")


def test_regex_delimiters_use_ascii_rules_as_perl_on_bytes():
    # U+00A0 is two bytes in UTF-8 that Perl's \s does not match: part of the token
    text = "a\u00a0b B-X B-X\nc I-X I-X\n"
    assert counts(report_of(text, delimiter="\\s+")) == (2, 2, 1, 1, 1)


def test_eval_help_names_the_defaults():
    help_text = " ".join(run_cli(["eval", "--help"]).output.split())
    assert "FILE defaults to stdin" in help_text
    assert "Latin-1" in help_text and "-DOCSTART-" in help_text


# ---------------------------------------------------------------------------
# Output of `crfkit label -s` and the outputs that cannot be scored (issue #13)


SCORED = ("# -3.1416\na NN B-NP B-NP/0.9876\nb NN I-NP O/0.5100\n\n"
          "# -0.0012\nc VB B-VP B-VP/1.0000\n")
UNSCORED = "a NN B-NP B-NP\nb NN I-NP O\n\nc VB B-VP B-VP\n"


def test_score_lines_and_probabilities_are_ignored_in_label_s_output():
    assert counts(report_of(SCORED)) == counts(report_of(UNSCORED)) == (3, 2, 2, 2, 1)
    data = read_eval_file(io.BytesIO(SCORED.encode()))
    assert data.pred == [None, "B-NP", "O", None, None, "B-VP"]  # one entry per line
    # tab-separated (label --sep tab), read with -d '\t': the score line has a space
    tabbed = "\n".join(line if line.startswith("#") else line.replace(" ", "\t")
                       for line in SCORED.split("\n"))
    assert "# -3.1416\na\tNN\tB-NP\tB-NP/0.9876\n" in tabbed
    assert counts(report_of(tabbed, delimiter="\\t")) == counts(report_of(UNSCORED))
    with pytest.raises(InputError) as info:  # -s output with a short line names that line
        report_of(SCORED.replace("b NN I-NP", "b I-NP"))
    assert info.value.line == 3 and "found 3 fields, expected 4" in info.value.message


def test_hash_tokens_and_slashes_in_tags_are_kept():
    # CoNLL-2000's '#' token, and tags with '/': no score lines, nothing removed
    conll = "# # B-NP B-NP\n$ $ I-NP I-NP/0.5000\n"
    assert read_eval_file(io.BytesIO(conll.encode())).pred == ["B-NP", "I-NP/0.5000"]
    # a score-shaped first line, but not every prediction has a probability: not -s
    # output, so nothing is removed (the '# -1.5000' line is a token of a 2-field file)
    mixed = "# -1.5000\nB-NP B-NP/0.9000\nI-NP I-NP\n"
    assert read_eval_file(io.BytesIO(mixed.encode())).pred == ["-1.5000", "B-NP/0.9000",
                                                              "I-NP"]


@pytest.mark.parametrize("text,drop", [
    ("# 0 -0.4132\na B-NP B-NP\n\n# 1 -1.7000\na B-NP I-NP\n", "without -n"),
    ("a B-NP B-NP B-NP/0.9000 I-NP/0.1000\n", "without --marginals"),
    ("# -0.4132\na B-NP B-NP/0.9000 B-NP/0.9000 I-NP/0.1000\n", "without --marginals"),
    ("# -0.4132 -1.7896\na B-NP B-NP/0.9000 I-NP/0.1000\n", "without -n and --nbest-columns"),
])
def test_label_outputs_that_cannot_be_scored_are_one_error(tmp_path, text, drop):
    path = tmp_path / "out.txt"
    path.write_text(text)
    result = run("eval", path)  # the message, in this process (exceptions propagate)
    assert result.exit_code == 1 and result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert f"{path}:" in lines[0] and "crfkit label" in lines[0] and drop in lines[0]


def test_eval_reads_real_label_s_output(labelled):
    plain = eval_bytes(label_output(labelled))
    assert plain.exit_code == 0 and plain.output.startswith("processed 8 tokens")
    scored_output = label_output(labelled, "-s")
    assert scored_output.startswith(b"# -") and b"/" in scored_output
    scored = eval_bytes(scored_output)
    assert scored.exit_code == 0, scored.output
    assert scored.stdout_bytes == plain.stdout_bytes
    for options, drop in ((["-n", "2"], "-n"), (["--marginals"], "--marginals"),
                          (["-s", "--marginals"], "--marginals"),
                          (["-s", "-n", "2", "--nbest-columns"], "-n and --nbest-columns")):
        result = eval_bytes(label_output(labelled, *options))
        assert result.exit_code == 1, options
        assert f"without {drop}" in one_error_line(result, "<stdin>:"), options


# ---------------------------------------------------------------------------
# -DOCSTART- lines with another field count are document boundaries (issue #13)


def test_bare_docstart_lines_are_document_boundaries():
    text = ("-DOCSTART-\n\na NNP B-PER B-PER\nb NNP I-PER I-PER\n-DOCSTART-\n"
            "c NNP I-PER I-PER\n")
    # a boundary, not a token: PER(a b) ends at it, I-PER starts PER(c): 3 tokens, 2 chunks
    assert counts(report_of(text)) == (3, 3, 2, 2, 2)
    data = read_eval_file(io.BytesIO(text.encode()))
    assert data.gold == [None, None, "B-PER", "I-PER", None, "I-PER"]
    # one with the file's field count, even before the first other line, is a token
    text = "-DOCSTART- -X- O O\n-DOCSTART-\n\na NNP B-PER B-PER\n"
    assert counts(report_of(text)) == (2, 2, 1, 1, 1)
    # a file of -DOCSTART- lines only: the first fixes the count, as in conlleval
    assert counts(report_of("-DOCSTART- O O\n-DOCSTART-\n")) == (1, 1, 0, 0, 0)
    # other lines with another count are still errors
    with pytest.raises(InputError) as info:
        report_of("-DOCSTART-\na NNP B-PER B-PER\nb B-PER B-PER\n")
    assert info.value.line == 3
