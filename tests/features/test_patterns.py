"""The pattern language, table-driven: every command and regex feature on a tiny
sequence, with the expected observation strings written by hand.

Every case is checked on BOTH paths so that they cannot drift apart:

* the slow reference, :func:`crfkit.features.explain.apply_pattern`;
* the vectorised extractor, :class:`crfkit.features.extract.Featurizer` (training
  path: ``components(grow=True)`` + ``build_vocab`` + ``observation_strings``;
  and the frozen labelling path: ``components(grow=False)`` + ``observations``).

Then: parse errors with their exact ``line:column``, pattern-file details,
``check_columns``, the ``crfkit patterns`` command, and the shipped
``patterns/chunking-rich.pat``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from crfkit.errors import PatternError
from crfkit.features import extract
from crfkit.features.explain import apply_pattern
from crfkit.features.extract import Featurizer
from crfkit.features.patterns import (
    check_columns,
    parse_pattern_line,
    parse_patterns,
    read_patterns,
)
from crfkit.io.reader import Sequence
from tests.helpers import one_error_line, run

ROOT = Path(__file__).resolve().parents[2]


def seq(*tokens: str) -> list[list[str]]:
    """Rows from "word/POS" strings (a token without '/' gets POS 'X')."""
    rows = []
    for token in tokens:
        word, _, pos = token.rpartition("/") if "/" in token[1:] else (token, "", "X")
        rows.append([word, pos])
    return rows


THREE = seq("The/DT", "Café/NNP", "opens/VBZ")
TWELVE = seq(*[f"t{i}/P{i}" for i in range(12)])

# (id, pattern line, rows, expected observation at each position)
CASES = [
    # --- %x: token text, offsets, padding per side and distance -----------------
    ("x-current", "u:w=%x[0,0]", THREE, ["u:w=The", "u:w=Café", "u:w=opens"]),
    ("x-previous", "U01:%x[-1,0]", THREE, ["U01:_B-1", "U01:The", "U01:Café"]),
    ("x-next-pos", "U02:%x[1,1]", THREE, ["U02:NNP", "U02:VBZ", "U02:_B+1"]),
    ("x-plus-sign", "U02:%x[+1,1]", THREE, ["U02:NNP", "U02:VBZ", "U02:_B+1"]),
    ("x-padding-both-sides", "U03:%x[-2,0]/%x[2,0]", THREE,
     ["U03:_B-2/opens", "U03:_B-1/_B+1", "U03:The/_B+2"]),
    ("x-far-padding", "u:%x[-3,0]|%x[3,1]", THREE,
     ["u:_B-3|_B+1", "u:_B-2|_B+2", "u:_B-1|_B+3"]),
    ("x-one-token", "u:%x[-1,0]/%x[0,0]/%x[1,0]", seq("solo/NN"), ["u:_B-1/solo/_B+1"]),
    # --- spaces inside the brackets ------------------------------------------------
    ("spaces", "u:%x[ -1, 0]", THREE, ["u:_B-1", "u:The", "u:Café"]),
    ("spaces-everywhere", "u:%x[  +1 ,  1  ]", THREE, ["u:NNP", "u:VBZ", "u:_B+1"]),
    ("spaces-absolute", "u:%x[ @-1 , 0 ]", THREE, ["u:opens"] * 3),
    ("spaces-regex", 'u:%t[ 0 , 0 , "^\\u" ]', THREE, ["u:true", "u:true", "u:false"]),
    # --- multi-digit offsets on a 12-token sequence ----------------------------------
    ("offset+10", "u:%x[10,0]", TWELVE,
     ["u:t10", "u:t11"] + [f"u:_B+{d}" for d in range(1, 11)]),
    ("offset-10", "u:%x[-10,1]", TWELVE,
     [f"u:_B-{d}" for d in range(10, 0, -1)] + ["u:P0", "u:P1"]),
    ("offset+11", "u:%x[11,0]", TWELVE, ["u:t11"] + [f"u:_B+{d}" for d in range(1, 12)]),
    ("offset-11-and+11", "u:%x[-11,0]/%x[11,0]", TWELVE,
     ["u:_B-11/t11"] + [f"u:_B-{11 - i}/_B+{i}" for i in range(1, 11)] + ["u:t0/_B+11"]),
    # --- absolute positions: 1-based from the start, negative from the end ---------------
    ("absolute-first", "u:%x[@1,0]", THREE, ["u:The"] * 3),
    ("absolute-last", "u:%x[@-1,1]", THREE, ["u:VBZ"] * 3),
    ("absolute-second", "u:%x[@2,0]/%x[@-2,0]", THREE, ["u:Café/Café"] * 3),
    ("absolute-beyond-end", "u:%x[@5,0]", THREE, ["u:_B+2"] * 3),
    ("absolute-before-start", "u:%x[@-5,0]", THREE, ["u:_B-2"] * 3),
    ("absolute-12", "u:%x[@12,0]/%x[@-12,1]", TWELVE, ["u:t11/P0"] * 12),
    ("absolute-one-token", "u:%x[@2,0]/%x[@-2,0]/%x[@1,0]", seq("solo/NN"),
     ["u:_B+1/_B-1/solo"]),
    ("absolute-regex", 'u:%t[@1,0,"^\\u"]/%m[@-1,0,"..$"]', THREE, ["u:true/ns"] * 3),
    # --- %X: case folded (str.casefold), padding unchanged ---------------------------------
    ("X-ascii", "u:%X[0,0]", THREE, ["u:the", "u:café", "u:opens"]),
    ("X-unicode", "u:%X[0,0]", seq("ÉCOLE", "Straße", "ΟΔΟΣ", "İ"),
     ["u:école", "u:strasse", "u:οδοσ", "u:i\u0307"]),
    ("X-padding", "u:%X[-1,0]/%X[1,0]", seq("AB"), ["u:_B-1/_B+1"]),
    # --- %t / %T ----------------------------------------------------------------
    ("t-cap", 'u:cap=%t[0,0,"^\\u"]', seq("The", "café", "Élan", "ΟΔΟΣ"),
     ["u:cap=true", "u:cap=false", "u:cap=true", "u:cap=true"]),
    ("t-padding", 'u:%t[-1,0,"."]/%t[1,0,""]', seq("a", "b"),
     ["u:false/true", "u:true/false"]),
    ("T-ignore-case", 'u:%T[0,0,"^the$"]', seq("The", "THE", "them", "tHe"),
     ["u:true", "u:true", "u:false", "u:true"]),
    ("t-case-sensitive", 'u:%t[0,0,"^the$"]', seq("The", "the"), ["u:false", "u:true"]),
    ("T-unicode", 'u:%T[0,0,"é"]/%T[0,0,"σ"]', seq("CAFÉ", "ΟΔΟΣ", "cafe"),
     ["u:true/false", "u:false/true", "u:false/false"]),
    ("T-classes-keep-meaning", 'u:%T[0,0,"^\\u"]', seq("Abc", "abc"), ["u:true", "u:false"]),
    ("T-padding", 'u:%T[2,0,"."]', seq("a", "b", "c"), ["u:true", "u:false", "u:false"]),
    # --- %m / %M --------------------------------------------------------------------
    ("m-suffix", 'u:s=%m[0,0,"..$"]', seq("a", "ab", "Café"), ["u:s=", "u:s=ab", "u:s=fé"]),
    ("m-up-to-3", 'u:%m[0,0,".?.?.$"]', seq("a", "ab", "abcd"), ["u:a", "u:ab", "u:bcd"]),
    ("m-prefix", 'u:%m[0,0,"^..."]', seq("Straße", "ab"), ["u:Str", "u:"]),
    ("m-padding", 'u:[%m[-1,0,"."]][%m[1,0,"."]]', seq("x", "y"), ["u:[][y]", "u:[x][]"]),
    ("M-folds-match", 'u:%M[0,0,"^c."]', seq("Café", "CAFÉ", "bar"), ["u:ca", "u:ca", "u:"]),
    ("M-suffix-unicode", 'u:%M[0,0,"..$"]', seq("CAFÉ", "STRAẞE", "ΟΔΟΣ"),
     ["u:fé", "u:sse", "u:οσ"]),
    ("M-literal-ignores-case", 'u:%M[0,0,"ss"]', seq("PASS", "Boss", "pa"),
     ["u:ss", "u:ss", "u:"]),
    ("M-padding", 'u:%M[-1,0,"."]', seq("A", "B"), ["u:", "u:a"]),
    # --- regex dialect: classes (Unicode), anchors, escapes, greedy * and ? ------------
    ("re-digit-unicode", 'u:%m[0,0,"\\d\\d*"]', seq("a12b", "x٣٤y", "７", "²"),
     ["u:12", "u:٣٤", "u:７", "u:"]),
    ("re-letter-unicode", 'u:%m[0,0,"\\a\\a*"]', seq("12straße!", "--Жук", "中文3", "_²"),
     ["u:straße", "u:Жук", "u:中文", "u:"]),
    ("re-word", 'u:%m[0,0,"\\w\\w*"]', seq("__ab12_", "-é9"), ["u:ab12", "u:é9"]),
    ("re-upper-lower", 'u:%m[0,0,"\\u\\l*"]', seq("xxÉcole", "abc", "ÀB"),
     ["u:École", "u:", "u:À"]),
    ("re-punct", 'u:%m[0,0,"\\p"]/%t[0,0,"^\\p\\p*$"]', seq("a«b", "...", "$5", "ab"),
     ["u:«/false", "u:./true", "u:$/false", "u:/false"]),
    ("re-space", 'u:%t[0,0,"\\s"]', seq("New York", "York"), ["u:true", "u:false"]),
    ("re-negated", 'u:%m[0,0,"\\D\\D*"]/%m[0,0,"\\A"]', seq("12ab3", "abc"),
     ["u:ab/1", "u:abc/"]),
    ("re-negated-upper", 'u:%m[0,0,"\\L\\L*"]/%m[0,0,"\\U"]', seq("abCD1e", "ABC"),
     ["u:CD1/a", "u:ABC/"]),
    ("re-negated-word-space-punct", 'u:%m[0,0,"\\W"]/%m[0,0,"\\S"]/%m[0,0,"\\P"]',
     seq("a-b", " !x"), ["u:-/a/a", "u: /!/ "]),
    ("re-dot-any", 'u:%m[0,0,"a.c"]', seq("xa-cy", "a\u00e9c", "ac"), ["u:a-c", "u:aéc", "u:"]),
    ("re-anchors", 'u:%t[0,0,"^ab"]/%t[0,0,"ab$"]/%t[0,0,"^ab$"]', seq("ab", "abc", "cab"),
     ["u:true/true/true", "u:true/false/false", "u:false/true/false"]),
    ("re-literal-caret-dollar", 'u:%m[0,0,"a^b"]/%m[0,0,"$a"]', seq("xa^b$a"), ["u:a^b/$a"]),
    ("re-escapes", 'u:%m[0,0,"\\."]/%m[0,0,"a\\*"]/%m[0,0,"\\\\"]', seq("U.S.", "a*b\\"),
     ["u:.//", "u:/a*/\\"]),
    ("re-escaped-letters-literal", 'u:%m[0,0,"\\n\\t"]', seq("ant", "a\tb"), ["u:nt", "u:"]),
    ("re-escaped-quote", 'u:%m[0,0,"\\"\\a*\\""]', seq('x"ab"y', "ab"), ['u:"ab"', "u:"]),
    ("re-greedy-star", 'u:%m[0,0,"\\d*"]/%m[0,0,"a\\d*"]', seq("123abc", "xa12y"),
     ["u:123/a", "u:/a12"]),
    ("re-greedy-question", 'u:%m[0,0,"ab?"]/%m[0,0,"colou?r"]', seq("abb", "color", "colour"),
     ["u:ab/", "u:/color", "u:/colour"]),
    ("re-leftmost", 'u:%m[0,0,"b*c"]', seq("abbcbc"), ["u:bbc"]),
    ("re-empty", 'u:%t[0,0,""]/%m[0,0,""]|', seq("x"), ["u:true/|"]),
    # --- several commands, literal text, names, kinds -------------------------------------
    ("many-commands", 'u:a=%x[0,0]&b=%x[0,1]!%t[0,0,"\\d"]<%m[-1,0,"^."]>end', THREE,
     ["u:a=The&b=DT!false<>end", "u:a=Café&b=NNP!false<T>end",
      "u:a=opens&b=VBZ!false<C>end"]),
    ("adjacent-commands", "u:%x[0,0]%x[0,1]%X[0,0]", seq("Ab/NN"), ["u:AbNNab"]),
    ("no-name", "u%x[0,1]", THREE, ["uDT", "uNNP", "uVBZ"]),
    ("unicode-name", "u:wörd→%x[0,0]…", seq("ñ"), ["u:wörd→ñ…"]),
    ("hash-inside", "U00:#%x[0,0]#", seq("a"), ["U00:#a#"]),
    ("literal-brackets", "u:[%x[0,0]]", seq("a"), ["u:[a]"]),
    ("literal-percent-free-text", "u:w[x]=%x[0,1]", seq("a/NN"), ["u:w[x]=NN"]),
    ("bigram-kind", "b:pos=%x[0,1]", THREE, ["b:pos=DT", "b:pos=NNP", "b:pos=VBZ"]),
    ("both-kind", "*:w=%X[0,0]", THREE, ["*:w=the", "*:w=café", "*:w=opens"]),
    ("CRF++-B-with-command", "B01:%x[-1,1]", THREE, ["B01:_B-1", "B01:DT", "B01:NNP"]),
    ("constant-both", "*", THREE, ["*"] * 3),
    ("constant-unigram", "U99", THREE, ["U99"] * 3),
]


def frozen_observations(featurizer, components, *, by_code: bool):
    """Labelling's ids, looking small value spaces up by code (the default) or all by hash."""
    if by_code:
        return featurizer.observations(components)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(extract, "_CODE_SLOTS_PER_TOKEN", 0)
        patch.setattr(extract, "_CODE_MIN_SLOTS", 0)
        return featurizer.observations(components)


def vectorised(patterns, sequences):
    """Observation strings from the vectorised path, [seq][pos][listed pattern]."""
    featurizer = Featurizer(patterns)
    pos, components = featurizer.components(sequences, grow=True)
    obs = featurizer.build_vocab(components)
    strings = featurizer.observation_strings()
    # The frozen (labelling) path must give the very same ids, whether it looks
    # tuples up by their mixed-radix code (small value spaces) or by hashing.
    _, frozen = featurizer.components(sequences, grow=False)
    for by_code in (True, False):
        assert (frozen_observations(featurizer, frozen, by_code=by_code) == obs).all()
    out = []
    for s in range(len(sequences)):
        start = int(pos.seq_ptr[s])
        out.append([[strings[i] for i in obs[start + t]] for t in range(len(sequences[s].rows))])
    return featurizer.listed, out


def sequence(rows):
    return Sequence(rows=rows, lines=list(range(1, len(rows) + 1)))


@pytest.mark.parametrize("line,rows,expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_observations(line, rows, expected):
    pattern = parse_pattern_line(line, lineno=1)
    assert [apply_pattern(pattern, rows, i) for i in range(len(rows))] == expected
    listed, got = vectorised([pattern], [sequence(rows)])
    assert listed == [0]
    assert [position[0] for position in got[0]] == expected


def test_frozen_lookups_by_code_and_by_hash_agree_on_unseen_values():
    """Labelling finds ids by mixed-radix code (small value spaces) or by hashed key; both
    give the training id of every seen observation and -1 for tuples with unseen values."""
    lines = ["u:w=%x[0,0]", "u:wp=%x[-1,0]/%x[0,1]", "u:ppp=%x[-1,1]/%x[0,1]/%x[1,1]", "U9"]
    patterns = [parse_pattern_line(line, lineno=i) for i, line in enumerate(lines, start=1)]
    train = [sequence([["the", "DT"], ["cat", "NN"], ["sat", "VBD"]]),
             sequence([["a", "DT"], ["dog", "NN"]])]
    test = [sequence([["the", "DT"], ["dog", "NN"], ["barked", "VBD"], ["a", "XX"]])]
    featurizer = Featurizer(patterns)
    _, components = featurizer.components(train, grow=True)
    featurizer.build_vocab(components)
    index = {text: i for i, text in enumerate(featurizer.observation_strings())}
    rows = test[0].rows
    expected = np.array([[index.get(apply_pattern(p, rows, t), -1) for p in patterns]
                         for t in range(len(rows))])
    assert (expected >= 0).any() and (expected < 0).any()
    _, frozen = featurizer.components(test, grow=False)
    for by_code in (True, False):
        assert (frozen_observations(featurizer, frozen, by_code=by_code) == expected).all()


def test_all_cases_in_one_batch():
    """All patterns over all sequences at once: shared transform tables, padding ids
    and sequence boundaries (absolute positions are per sequence)."""
    patterns = [parse_pattern_line(c[1], lineno=i) for i, c in enumerate(CASES, start=1)]
    rows_list = [c[2] for c in CASES]
    sequences = [sequence(rows) for rows in rows_list]
    listed, got = vectorised(patterns, sequences)
    assert listed == list(range(len(patterns)))
    for s, rows in enumerate(rows_list):
        for t in range(len(rows)):
            assert got[s][t] == [apply_pattern(p, rows, t) for p in patterns]
        # and the hand-written expectation of its own case
        assert [got[s][t][s] for t in range(len(rows))] == CASES[s][3]


def test_constant_bigram_is_transitions_only():
    patterns = parse_patterns("u:%x[0,0]\nB\nb\n*\n")
    assert [(p.kind, p.is_constant) for p in patterns] == [
        ("u", False), ("b", True), ("b", True), ("*", True)]
    assert [apply_pattern(p, THREE, 0) for p in patterns] == ["u:The", "B", "b", "*"]
    listed, got = vectorised(patterns, [sequence(THREE)])
    assert listed == [0, 3]  # bare B/b never appear in per-token lists
    assert got[0][1] == ["u:Café", "*"]


def test_kinds_and_names():
    lines = ["U00:%x[0,0]", "u:w0=%x[0,0]", "B01:%x[0,1]", "b:%x[0,1]", "*:both=%X[0,0]",
             "*", "B", "U", "u%x[0,0]"]
    patterns = [parse_pattern_line(line) for line in lines]
    assert [p.kind for p in patterns] == ["u", "u", "b", "b", "*", "*", "b", "u", "u"]
    assert [p.name for p in patterns] == ["U00", "u", "B01", "b", "*", "*", "B", "U", "u"]
    assert [p.has_unigram for p in patterns] == [True, True, False, False, True, True, False,
                                                 True, True]
    assert [p.has_bigram for p in patterns] == [False, False, True, True, True, True, True,
                                                False, False]
    # two patterns that differ only by name are different observations
    a, b = parse_patterns("U00:%x[0,0]\nU01:%x[0,0]\n")
    assert apply_pattern(a, THREE, 0) != apply_pattern(b, THREE, 0)


def test_parsed_structure():
    p = parse_pattern_line('u:a=%x[ -1 ,0]/%T[@2,1,"^\\u"]!', lineno=7)
    assert p.literals == ("u:a=", "/", "!")
    assert [(c.letter, c.offset, c.absolute, c.column, c.regex, c.source_column)
            for c in p.commands] == [("x", -1, False, 0, None, 5), ("T", 2, True, 1, "^\\u", 16)]
    assert [c.spelling for c in p.commands] == ["%x[-1,0]", '%T[@2,1,"^\\u"]']
    assert p.line == 7
    assert p.commands[1].describe() == (
        '%T[@2,1,"^\\u"]  true/false: does "^\\u" match ignoring case, column 1, '
        "absolute @2 (token 2 from the start)")


# --- errors: one PatternError naming the file, line and column ---------------------------
ERRORS = [
    # (pattern line, 1-based column, part of the message)
    ("X00:%x[0,0]", 1, "starts with u, b, * or s"),
    ("U00:%y[0,0]", 6, "unknown command %y"),
    ("U00:%x[0,0]/%q[0,0]", 14, "unknown command %q"),
    ("U00:%", 5, "'%' at end"),
    ("U00:% x[0,0]", 6, "unknown command % "),
    ("U00:%x0,0]", 7, "expected '['"),
    ("U00:%x[0,0", 11, "expected ']'"),
    ("U00:%x[0,0/%x[1,0]", 11, "expected ']'"),
    ("U00:%x[0,0]]", 12, "unbalanced ']'"),
    ("U00:x]%x[0,0]", 6, "unbalanced ']'"),
    ("U00:[%x[0,0]", 5, "unbalanced '['"),
    ("U00:%x[0]", 9, "expected ','"),
    ("U00:%x[0 0]", 10, "expected ','"),
    ("U00:%x[a,0]", 8, "expected an integer offset"),
    ("U00:%x[,0]", 8, "expected an integer offset"),
    ("U00:%x[- 1,0]", 8, "expected an integer offset"),
    ("U00:%x[٣,0]", 8, "expected an integer offset"),
    ("U00:%x[0,b]", 10, "expected an integer column"),
    ("U00:%x[0,]", 10, "expected an integer column"),
    ("U00:%x[0,-1]", 5, "negative column -1"),
    ("U00:%x[@0,0]", 9, "@0 does not exist"),
    ("U00:%x[@,0]", 9, "expected an integer offset"),
    ("U00:%x[0,0]/%x[-1001,0]", 16, "out of range"),
    ("U00:%x[@1001,0]", 9, "out of range"),
    ('U00:%x[0,0,"a"]', 11, "%x takes no regex"),
    ('U00:%X[0,0 ,"a"]', 12, "%X takes no regex"),
    ("U00:%t[0,0]", 11, "%t needs a regex"),
    ("U00:%m[0,0,a]", 12, "%m needs a quoted regex"),
    ("U00:%M[0,0,]", 12, "%M needs a quoted regex"),
    ('U00:%t[0,0,"abc]', 12, "unbalanced quote"),
    ('U00:%t[0,0,"abc', 12, "unbalanced quote"),
    ('U00:%t[0,0,"abc\\"]', 16, "dangling '\\'"),
    ('U00:%t[0,0,"\\"]', 13, "dangling '\\'"),
    ('U00:%t[0,0,"a"b]', 15, "expected ']'"),
    ('U00:%m[0,0,"*a"]', 13, "nothing to repeat"),
    ('U00:%m[0,0,"?"]', 13, "nothing to repeat"),
    ('U00:%T[0,0,"^*"]', 14, "'^' anchor cannot be repeated"),
    ('U00:%m[0,0,"a**"]', 15, "'*' cannot be followed by '*'"),
    ('U00:%m[0,0,"a*?"]', 15, "'*' cannot be followed by '?'"),
    ('U00:%m[0,0,"\\"**"]', 16, "cannot be followed"),  # columns count \" as written
    ('u:café=%y[0,0]', 9, "unknown command %y"),  # columns are characters, not bytes
    ('u:é=%t[0,0,"é?*"]', 15, "cannot be followed"),
]


@pytest.mark.parametrize("line,column,message", ERRORS, ids=[e[0] for e in ERRORS])
def test_parse_errors(line, column, message):
    text = f"U00:%x[0,0]\n\n# comment\n{line}\nU01:%x[1,0]\n"
    with pytest.raises(PatternError) as info:
        parse_patterns(text, path="my.pat")
    err = info.value
    assert (err.path, err.line, err.column) == ("my.pat", 4, column)
    assert message in err.message
    assert str(err).startswith(f"my.pat:4:{column}: ")
    assert "\n" not in str(err)


def test_error_columns_count_the_indentation():
    with pytest.raises(PatternError) as info:
        parse_patterns("u:%x[0,0]\n   \tU00:%x[0,0\n", path="p")
    assert (info.value.line, info.value.column) == (2, 15)


def test_pattern_file_details(tmp_path):
    path = tmp_path / "p.pat"
    path.write_bytes("\ufeffu:%x[0,0]\r\n\r\n  # indented comment\r\n#\r\n*:%x[0,1] # tail\r\n"
                     .encode())
    patterns = read_patterns(path)
    assert [p.text for p in patterns] == ["u:%x[0,0]", "*:%x[0,1] # tail"]
    assert [p.line for p in patterns] == [1, 5]
    assert patterns[1].literals == ("*:", " # tail")
    path.write_text("# only comments\n\n")
    with pytest.raises(PatternError, match="no patterns"):
        read_patterns(path)
    path.write_bytes(b"u:\xff%x[0,0]\n")
    with pytest.raises(PatternError, match="cannot decode"):
        read_patterns(path)
    with pytest.raises(PatternError, match="cannot read"):
        read_patterns(tmp_path / "missing.pat")


def test_check_columns():
    patterns = parse_patterns("u:%x[0,0]\n\n  u:%x[0,1]/%m[0,3,\"a\"]\n", path="p.pat")
    check_columns(patterns, 4, label_column=False)
    with pytest.raises(PatternError) as info:
        check_columns(patterns, 3, label_column=True)
    assert (info.value.path, info.value.line, info.value.column) == ("p.pat", 3, 13)
    assert "column 3" in info.value.message and "label" in info.value.message


# --- crfkit patterns -------------------------------------------------------------

@pytest.fixture
def pat(tmp_path):
    path = tmp_path / "p.pat"
    path.write_text('# demo\nU01:%x[-1,0]/%x[0,1]\nu:cap=%t[0,0,"^\\u"]\nb:%X[@1,0]\n\nB\n')
    return path


@pytest.fixture
def data(tmp_path):
    path = tmp_path / "d.txt"
    path.write_text("The DT B-NP\ncat NN I-NP\n\nDogs NNS B-NP\nrun VBP B-VP\nFast RB B-ADVP\n")
    return path


def test_patterns_command_describes(pat):
    result = run("patterns", str(pat))
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines() == [
        "pattern 1, line 2: U01:%x[-1,0]/%x[0,1]",
        '  kind u (unigram), name "U01", literals "U01:" "/" ""',
        "  1. %x[-1,0]  the token, column 0, offset -1 (1 before)",
        "  2. %x[0,1]  the token, column 1, current token",
        'pattern 2, line 3: u:cap=%t[0,0,"^\\u"]',
        '  kind u (unigram), name "u", literals "u:cap=" ""',
        '  1. %t[0,0,"^\\u"]  true/false: does "^\\u" match, column 0, current token',
        "pattern 3, line 4: b:%X[@1,0]",
        '  kind b (bigram), name "b", literals "b:" ""',
        "  1. %X[@1,0]  the token case folded, column 0, absolute @1 (first token)",
        "pattern 4, line 6: B",
        '  kind b (bigram), name "B", literals "B"',
        "  no command: label transitions only",
    ]


def test_patterns_command_with_data(pat, data):
    result = run("patterns", str(pat), str(data))
    assert result.exit_code == 0, result.stderr
    tail = result.stdout.split("\n\n", 1)[1]
    assert tail.splitlines() == [
        f"sequence 1 of {data}: 2 token(s), lines 1-2",
        "position 1, line 1: The DT B-NP",
        "  2 u U01:_B-1/DT",
        "  3 u u:cap=true",
        "  4 b b:the   (unused here: no previous label)",
        "  6 b B   (unused here: no previous label)",
        "position 2, line 2: cat NN I-NP",
        "  2 u U01:The/NN",
        "  3 u u:cap=false",
        "  4 b b:the",
        "  6 b B",
    ]


def test_patterns_command_picks_a_sequence(pat, data):
    result = run("patterns", "--sequence", "2", str(pat), str(data))
    assert result.exit_code == 0, result.stderr
    tail = result.stdout.split("\n\n", 1)[1].splitlines()
    assert tail[0] == f"sequence 2 of {data}: 3 token(s), lines 4-6"
    assert tail[-5:] == ["position 3, line 6: Fast RB B-ADVP", "  2 u U01:run/RB",
                         "  3 u u:cap=true", "  4 b b:dogs", "  6 b B"]
    one_error_line(run("patterns", "--sequence", "3", str(pat), str(data)),
                   str(data), "only 2 sequence(s)")
    assert run("patterns", "--sequence", "0", str(pat), str(data)).exit_code == 2


def test_patterns_command_stdin_sep_and_encoding(tmp_path):
    pat = tmp_path / "p.pat"
    pat.write_text("u:%x[0,0]|%x[0,1]\n")
    result = run("patterns", "--sep", "tab", str(pat), "-", input="New York\tNNP\n")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "  1 u u:New York|NNP"
    assert "sequence 1 of <stdin>" in result.stdout
    data = tmp_path / "latin.txt"
    data.write_bytes("café NN\n".encode("latin-1"))
    result = run("patterns", "--encoding", "latin-1", str(pat), str(data))
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "  1 u u:café|NN"
    one_error_line(run("patterns", str(pat), str(data)), str(data))  # not UTF-8


@pytest.mark.parametrize("line,column", [
    ("U00:%x[0,0", 11), ('U00:%m[0,0,"?a"]', 13), ("U00:%z[0,0]", 6), ('u:%t[0,0,"\\"]', 11),
    ("U00:%x[0,0]]", 12), ("U00:%x[0,-2]", 5),
])
def test_patterns_command_bad_pattern(tmp_path, data, line, column):
    pat = tmp_path / "bad.pat"
    pat.write_text(f"u:%x[0,0]\n{line}\n")
    one_error_line(run("patterns", str(pat)), f"{pat}:2:{column}: ")
    one_error_line(run("patterns", str(pat), str(data)), f"{pat}:2:{column}: ")
    # the same one-line error from train
    one_error_line(run("train", "-p", str(pat), str(data), str(tmp_path / "m")),
                   f"{pat}:2:{column}: ")


def test_patterns_command_column_beyond_data(tmp_path, data):
    pat = tmp_path / "p.pat"
    pat.write_text('u:%x[0,0]\n\nu:%x[0,1]/%m[-1,3,"a"]\n')
    one_error_line(run("patterns", str(pat), str(data)), f"{pat}:3:", "column 3")
    # train: the label column (2) cannot be read either
    pat.write_text("u:%x[0,0]\nu:%x[0,2]\n")
    one_error_line(run("train", "-p", str(pat), str(data), str(tmp_path / "m")),
                   f"{pat}:2:", "column 2", "label")
    assert run("patterns", str(pat), str(data)).exit_code == 0  # DATA may be unlabelled


def test_patterns_command_missing_file(tmp_path):
    result = run("patterns", str(tmp_path / "nope.pat"))
    assert result.exit_code == 2
    assert "Traceback" not in result.output


# --- the shipped rich pattern file -----------------------------------------------
def test_chunking_rich_pattern_file():
    patterns = read_patterns(ROOT / "patterns/chunking-rich.pat")
    assert len(patterns) >= 30
    letters = {c.letter for p in patterns for c in p.commands}
    assert letters == set("xXtTmM")
    assert any(p.is_constant and p.has_bigram for p in patterns)  # transitions
    assert any(p.kind == "*" and not p.is_constant for p in patterns)
    rows = seq("Confidence/NN", "in/IN", "U.S.-based/NNP", "1,000/CD", ",/,")
    observations = {apply_pattern(p, rows, 2) for p in patterns}
    assert {"u:s4=ased", "u:pre3=u.s", "u:hyphen-tail=-based", "u:cap=true",
            "u:midcap=true", "u:w0/p0=u.s.-based/NNP", "*:p-1/p0=IN/NNP",
            "u:c-1/c0/c+1=IN/NN/CD", "u:w-2=confidence"} <= observations
    check_columns(patterns, 2, label_column=True)
    listed, got = vectorised(patterns, [sequence(rows)])
    for t in range(len(rows)):
        assert got[0][t] == [apply_pattern(patterns[p], rows, t) for p in listed]


# --- transforms: the dots-only fast path equals the regex engine ------------------------
def test_dot_affix_fast_path_matches_the_regex_engine():
    import itertools

    from crfkit.features.transforms import dot_affix, transform_values
    from crfkit.features.wregex import compile_regex

    tokens = ["", "a", "É", "ab", "aBc", "ﬁx", "İst", "a\nb", "Straße", "abcdef", "中文字"]
    atoms = [".", ".?", ".*"]
    sources = set()
    for n in range(4):
        for body in itertools.product(atoms, repeat=n):
            for start, end in itertools.product(("", "^"), ("", "$")):
                sources.add(start + "".join(body) + end)
    for source in sorted(sources):
        assert dot_affix(source) is not None, source
        for letter in "tTmM":
            regex = compile_regex(source, ignore_case=letter.isupper())
            found = [regex.search(token) for token in tokens]
            if letter in "tT":
                want = ["false" if f is None else "true" for f in found]
            else:
                want = ["" if f is None else f for f in found]
                if letter == "M":
                    want = [w.casefold() for w in want]
            assert transform_values((letter, 0, source), tokens) == want, (letter, source)
    for source in ("a.", ".\\.", "\\..", ".+", "..$.", "^^.", ".$$", "\\d.$"):
        assert dot_affix(source) is None, source


def test_required_char_prefilter_matches_the_regex_engine():
    import random

    from crfkit.features.transforms import required_char, transform_values
    from crfkit.features.wregex import RegexSyntaxError, compile_regex

    assert required_char("\\w-\\w", False) == "-"
    assert required_char("^and$", False) in "and"
    assert required_char("^and$", True) is None
    assert required_char("a\\.b", True) == "."
    assert required_char("a*b?\\d", False) is None
    assert required_char("x\\$", False) == "$" and required_char("x$", False) == "x"
    rng = random.Random(4)
    atoms = ["a", "A", "é", "É", "-", "1", "$", "^", ".", "\\d", "\\u", "\\.", "\\$", "\\\\",
             "\\-", "ß", "*", "?"]
    tokens = ["", "a", "A-1", "é$", "É.", "a\\b", "^a$", "--aa", "ßẞ", "1.5", "AaÉé-$", "a*?"]
    checked = 0
    while checked < 400:
        source = "".join(rng.choice(atoms) for _ in range(rng.randint(1, 5)))
        for letter in "tTmM":
            try:
                regex = compile_regex(source, ignore_case=letter.isupper())
            except RegexSyntaxError:
                break
            found = [regex.search(token) for token in tokens]
            if letter in "tT":
                want = ["false" if f is None else "true" for f in found]
            else:
                want = ["" if f is None else (f.casefold() if letter == "M" else f)
                        for f in found]
            assert transform_values((letter, 0, source), tokens) == want, (letter, source)
            checked += 1


def test_patterns_command_on_the_rich_file(tmp_path):
    data = tmp_path / "conll.txt"
    data.write_text("He PRP B-NP\nreckons VBZ B-VP\nthe DT B-NP\ncurrent JJ I-NP\n"
                    "account NN I-NP\ndeficit NN I-NP\n")
    result = run("patterns", str(ROOT / "patterns/chunking-rich.pat"), str(data))
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "position 2, line 2: reckons VBZ B-VP" in lines
    assert any(line.endswith(" u u:s3=ons") for line in lines)
    assert any(line.endswith(" * *:p-1/p0=PRP/VBZ") for line in lines)
    assert any(line.endswith(" u u:w+2=_B+2") for line in lines)
