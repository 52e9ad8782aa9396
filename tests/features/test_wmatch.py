"""The wapiti regex mode: Wapiti 1.5's matcher, bug for bug.

Every expectation below was derived by hand, stepping through Wapiti's
``rex_match``/``rex_matchme``/``rex_matchit`` (src/pattern.c) on paper.
"""

from __future__ import annotations

import pytest

from crfkit.features.patterns import parse_patterns, with_regex_mode
from crfkit.features.transforms import padding_result, transform_value, transform_values
from crfkit.features.wmatch import WapitiMatcher, padding_text

# (regex, token, (start, counted length) or None, the %m value)
CASES = [
    # x* tries zero repetitions first: the shortest match that lets the rest match
    (r"\d*", "123", (0, 0), ""),
    (r"^.*", "abc", (0, 0), ""),
    (r"^.*$", "abc", (0, 3), "abc"),
    (r".*$", "abc", (0, 3), "abc"),
    (r"\d*$", "a123", (1, 3), "123"),
    (r"\a*-", "ab-c", (0, 3), "ab-"),
    # x? is greedy; a dots-only affix is what a slice gives
    (r"^.?.?", "a", (0, 1), "a"),
    (r".?.?$", "abc", (1, 2), "bc"),
    (r".?$", "abc", (2, 1), "c"),
    (r"\d?", "x5", (0, 0), ""),
    # the counter keeps what a failed x?-taken branch counted
    (r"\d?\d", "42", (0, 2), "42"),
    (r"\d?\d", "a5b", (1, 2), "5b"),
    (r"x?xy", "xyz", (0, 3), "xyz"),
    # ... also past the end of the token: the value stops at the token's end
    (r"\d?\d", "5", (0, 2), "5"),
    (r"x?xy", "xy", (0, 3), "xy"),
    # a failed star inside a failed x? branch leaves one more count
    (r"a?b*c", "ac", (0, 2), "ac"),
    (r"a?b*cd", "acd", (0, 3), "acd"),
    (r"a?b*ab", "ab", (0, 4), "ab"),
    # anchors and literals
    (r"a$", "ab", None, ""),
    (r"a$", "ba", (1, 1), "a"),
    (r"a\$", "a$b", (0, 2), "a$"),
    (r"a^", "ba^", (1, 2), "a^"),
    (r"^b", "ab", None, ""),
    (r"\n", "n", (0, 1), "n"),
    ("", "abc", (0, 0), ""),
    (r"$", "abc", (3, 0), ""),
    # C-locale classes: ASCII only
    (r"\a", "é", None, ""),
    (r"\A", "é", (0, 1), "é"),
    (r"\d", "٣", None, ""),
    (r"\p", "«", None, ""),
    (r"\p", "_", (0, 1), "_"),
    (r"\s", "\x1c", None, ""),
    (r"\u\l*", "Hello", (0, 1), "H"),
    (r"\W\w", "a-b", (1, 2), "-b"),
]


@pytest.mark.parametrize(("regex", "token", "found", "value"), CASES)
def test_matcher_follows_wapiti_step_by_step(regex, token, found, value):
    matcher = WapitiMatcher(regex)
    assert matcher.find(token) == found
    assert matcher.value(token) == value
    assert matcher.test(token) == (found is not None)


def _transform(line: str, mode: str = "wapiti"):
    pattern = with_regex_mode(parse_patterns(line), mode)[0]
    return pattern.commands[0].transform


def test_wapiti_mode_differs_from_the_default_only_where_wapiti_does():
    star = 'u:%m[0,0,"\\d*"]'
    assert transform_value(_transform(star), "123") == ""
    assert transform_value(_transform(star, "crfkit"), "123") == "123"
    assert transform_values(_transform(star), ["123", "x"]) == ["", ""]
    # dots with a star are not the default mode's slices
    assert transform_values(_transform('u:%m[0,0,"^.*"]'), ["abc"]) == [""]
    assert transform_values(_transform('u:%m[0,0,"^.*"]', "crfkit"), ["abc"]) == ["abc"]


def test_upper_case_commands_match_case_sensitively_and_lower_ascii_only():
    assert transform_value(_transform('u:%T[0,0,"a"]'), "A") == "false"
    assert transform_value(_transform('u:%T[0,0,"a"]', "crfkit"), "A") == "true"
    assert transform_value(_transform('u:%M[0,0,".*$"]'), "ÀBc") == "Àbc"
    assert transform_value(_transform('u:%M[0,0,"\\u\\a*"]'), "HeLLo") == "h"


def test_regexes_read_wapitis_padding_tokens():
    assert [padding_text(d) for d in (-1, -4, -5, 2, 9)] == \
        ["_x-1", "_x-4", "_x-#", "_x+2", "_x+#"]
    assert padding_result(_transform('u:%t[-1,0,"\\d"]'), -1) == "true"
    assert padding_result(_transform('u:%t[-1,0,"\\u"]'), -1) == "false"
    assert padding_result(_transform('u:%t[-1,0,"\\p"]'), -1) == "true"
    assert padding_result(_transform('u:%m[-6,0,".$"]'), -6) == "#"
    assert padding_result(_transform('u:%m[-1,0,"\\a*-"]'), -1) == "x-"
    assert padding_result(_transform('u:%t[-1,0,"\\d"]', "crfkit"), -1) == "false"
    # %x keeps crfkit's padding spelling in either mode
    assert padding_result(_transform('u:%x[-1,0]'), -1) == "_B-1"


def test_the_mode_is_part_of_the_transform_so_tables_stay_apart():
    assert _transform('u:%m[0,0,"a"]') != _transform('u:%m[0,0,"a"]', "crfkit")
    assert _transform('u:%x[0,0]') == _transform('u:%x[0,0]', "crfkit")
    with pytest.raises(ValueError, match="regex mode"):
        with_regex_mode(parse_patterns("u:%x[0,0]"), "perl")


# --- train --regex wapiti: recorded in the model, used by label ---------------------------
def _first_token_corpus() -> str:
    """Label F on each sentence's first token, O elsewhere; no token holds a digit, so
    only Wapiti's padding token ``_x-1`` makes ``%t[-1,0,"\\d"]`` tell them apart."""
    words = ["alpha", "beta", "gamma", "delta"]
    sentences = []
    for s in range(12):
        rows = [f"{words[(s + i) % 4]} {'F' if i == 0 else 'O'}" for i in range(3)]
        sentences.append("\n".join(rows) + "\n")
    return "\n".join(sentences)


def test_train_with_wapiti_regexes_records_the_mode_and_label_uses_it(tmp_path):
    from crfkit.model.model import Model
    from tests.helpers import run

    corpus = tmp_path / "train.txt"
    corpus.write_text(_first_token_corpus())
    pat = tmp_path / "p.txt"
    pat.write_text('u:p=%t[-1,0,"\\d"]\nu:s=%m[0,0,"a?al"]\n')  # no label transitions
    gold = [line.split()[-1] for line in corpus.read_text().splitlines() if line]
    for mode, separable in (("wapiti", True), ("crfkit", False)):
        model = tmp_path / f"{mode}.model"
        result = run("train", "-q", "--regex", mode, "-p", pat, corpus, model)
        assert result.exit_code == 0, result.stderr
        loaded = Model.load(model)
        assert [p.regex_mode for p in loaded.patterns] == [mode, mode]
        assert (b'"regex"' in model.read_bytes()) == (mode == "wapiti")
        strings = set(loaded.featurizer.observation_strings())
        # "a?al" on "alpha": the failed a-taken branch leaves a count behind (3 for "al")
        assert ("u:s=alp" in strings) == (mode == "wapiti")
        assert ("u:s=al" in strings) == (mode == "crfkit")
        labelled = run("label", "-m", model, "-l", corpus)
        assert (labelled.stdout.split() == gold) == separable


def test_wapiti_regexes_are_refused_on_dask_with_one_line(tmp_path):
    from tests.helpers import one_error_line, run

    corpus = tmp_path / "train.txt"
    corpus.write_text(_first_token_corpus())
    pat = tmp_path / "p.txt"
    pat.write_text('u:p=%t[-1,0,"\\d"]\n')
    result = run("train", "--regex", "wapiti", "--dask", "local:1", "-p", pat, corpus,
                 tmp_path / "m.model")
    one_error_line(result, "--regex wapiti", "--dask")


def test_continuing_a_model_needs_its_regex_mode(tmp_path):
    from tests.helpers import one_error_line, run

    corpus = tmp_path / "train.txt"
    corpus.write_text(_first_token_corpus())
    pat = tmp_path / "p.txt"
    pat.write_text('u:p=%t[-1,0,"\\d"]\n')
    model = tmp_path / "m.model"
    assert run("train", "-q", "--regex", "wapiti", "-p", pat, corpus, model).exit_code == 0
    result = run("train", "-q", "-m", model, "-p", pat, corpus, tmp_path / "again.model")
    one_error_line(result, "--regex wapiti")
    again = run("train", "-q", "--regex", "wapiti", "-m", model, "-p", pat, corpus,
                tmp_path / "again.model")
    assert again.exit_code == 0, again.stderr


def test_dot_affixes_take_the_slice_path_with_wapitis_results():
    # The transform slices "." / ".?" affixes instead of running the matcher:
    # compare both on every such regex up to five atoms and tokens up to 7 long.
    import itertools

    tokens = ["abcdefg"[:n] for n in range(8)]
    for k in range(6):
        for atoms in itertools.product([".", ".?"], repeat=k):
            for head, tail in itertools.product(("", "^"), ("", "$")):
                source = head + "".join(atoms) + tail
                matcher = WapitiMatcher(source)
                line = f'u:%m[0,0,"{source}"]/%t[0,0,"{source}"]'
                m, t = (c.transform for c in
                        with_regex_mode(parse_patterns(line), "wapiti")[0].commands)
                assert transform_values(m, tokens) == [matcher.value(x) for x in tokens]
                assert transform_values(t, tokens) == \
                    ["true" if matcher.test(x) else "false" for x in tokens]
