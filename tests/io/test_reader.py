"""Tests for crfkit.io.reader: column files in, Sequence objects out, precise errors."""

from __future__ import annotations

import gc
import gzip
import io
import os
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crfkit.errors import InputError, UsageError
from crfkit.io import text_input
from crfkit.io.reader import (
    PAUSE,
    DocStart,
    Sequence,
    is_live,
    open_binary,
    read_items,
    read_sequences,
)

HINT = "(is the file in another encoding? give it with --encoding)"


def read_bytes(data: bytes, **options) -> list[tuple[list[list[str]], list[int]]]:
    return [(s.rows, s.lines) for s in read_sequences(io.BytesIO(data), **options)]


def naive(data: bytes, sep: str = "auto", min_columns: int = 1):
    """Obviously-correct line-by-line reference: (sequences, error or None)."""
    text = data.decode("utf-8")
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    out, rows, numbers, ncols = [], [], [], 0
    for number, line in enumerate(lines, 1):
        if line.endswith("\r"):
            line = line[:-1]
        if not line.strip(" \t"):
            fields = []
        elif sep == "auto":
            fields = [f for f in line.replace("\t", " ").split(" ") if f]
        elif sep == "space":
            fields = [f for f in line.split(" ") if f]
        else:
            fields = line.split("\t")
        if not fields:
            if rows:
                out.append((rows, numbers))
                rows, numbers = [], []
            continue
        if not ncols:
            if len(fields) < min_columns:
                return out, ("min", number)
            ncols = len(fields)
        elif len(fields) != ncols:
            return out, (f"expected {ncols} columns, found {len(fields)}", number)
        rows.append(fields)
        numbers.append(number)
    if rows:
        out.append((rows, numbers))
    return out, None


def read_until_error(data: bytes, **options):
    """Our reader, in the same shape as :func:`naive`."""
    out = []
    try:
        for seq in read_sequences(io.BytesIO(data), **options):
            out.append((seq.rows, seq.lines))
    except InputError as err:
        message = "min" if err.message.startswith("expected at least") else err.message
        return out, (message, err.line)
    return out, None


# -- separators ---------------------------------------------------------------------


def test_tabs_spaces_and_mixed_separators():
    data = b"a b c\nd\te\tf\n  g \t h\t\ti  \n"
    assert read_bytes(data) == [
        ([["a", "b", "c"], ["d", "e", "f"], ["g", "h", "i"]], [1, 2, 3]),
    ]


def test_auto_keeps_ideographic_and_no_break_spaces_inside_tokens():
    data = "東京\u3000都 名詞\nA\u00a0B NNP\n".encode()
    assert read_bytes(data) == [([["東京\u3000都", "名詞"], ["A\u00a0B", "NNP"]], [1, 2])]


def test_tab_mode_keeps_spaces_and_empty_fields():
    data = b"New York\tNNP\tB-LOC\n\tX\t\n"
    rows = read_bytes(data, sep="tab")[0][0]
    assert rows == [["New York", "NNP", "B-LOC"], ["", "X", ""]]


def test_space_mode_keeps_tabs_inside_tokens():
    data = b"a\tb  c\n \t \nd\te f\n"
    assert read_bytes(data, sep="space") == [([["a\tb", "c"]], [1]), ([["d\te", "f"]], [3])]


def test_unknown_separator_is_a_usage_error():
    with pytest.raises(UsageError, match="separator"):
        read_sequences(io.BytesIO(b"a b\n"), sep="comma")


# -- line structure -----------------------------------------------------------------


def test_blank_lines_whitespace_lines_and_line_numbers():
    data = b"\n\n a b\nc d\n\n \t \n\n\ne f\n\n\n"
    assert read_bytes(data) == [([["a", "b"], ["c", "d"]], [3, 4]), ([["e", "f"]], [9])]


def test_crlf_line_ends_and_missing_final_newline():
    data = b"a b\r\nc d\r\n\r\ne f\r"
    assert read_bytes(data) == [([["a", "b"], ["c", "d"]], [1, 2]), ([["e", "f"]], [4])]


def test_utf8_bom_is_skipped_only_at_file_start():
    data = "\ufeffa b\n\ufeffc d\n".encode()
    assert read_bytes(data)[0][0] == [["a", "b"], ["\ufeffc", "d"]]


def test_empty_and_blank_only_files_have_no_sequences():
    assert read_bytes(b"") == []
    assert read_bytes(b"\n \n\t\n") == []


def test_line_longer_than_a_block(monkeypatch):
    monkeypatch.setattr(text_input, "_BLOCK_SIZE", 16)
    token = "x" * 1000
    data = f"{token} A\n\nb B\n".encode()
    assert read_bytes(data) == [([[token, "A"]], [1]), ([["b", "B"]], [3])]


@pytest.mark.parametrize("block_size", [1, 2, 3, 7, 64])
def test_tiny_blocks_give_the_same_result(monkeypatch, block_size):
    data = "\ufeffé a\r\n\r\nb  c\n\n\n\td\te\n東 f".encode()
    expected = read_bytes(data)
    monkeypatch.setattr(text_input, "_BLOCK_SIZE", block_size)
    assert read_bytes(data) == expected
    assert expected == naive(data)[0]


_ALPHABET = "ab \t\n\r\u3000é"


@settings(max_examples=300, deadline=None)
@given(
    text=st.text(alphabet=_ALPHABET, max_size=120),
    sep=st.sampled_from(["auto", "tab", "space"]),
    block_size=st.sampled_from([1, 3, 8, 65536]),
    min_columns=st.integers(1, 3),
)
def test_matches_naive_reference_on_random_text(text, sep, block_size, min_columns):
    data = text.encode()
    options = {"sep": sep, "min_columns": min_columns}
    original = text_input._BLOCK_SIZE
    text_input._BLOCK_SIZE = block_size
    try:
        assert read_until_error(data, **options) == naive(data, **options)
    finally:
        text_input._BLOCK_SIZE = original


@settings(max_examples=100, deadline=None)
@given(
    sequences=st.lists(
        st.lists(st.lists(st.text("xyé", min_size=1, max_size=3), min_size=2, max_size=2),
                 min_size=1, max_size=5),
        max_size=6,
    ),
    seps=st.lists(st.sampled_from([" ", "\t", "  ", " \t "]), min_size=1),
    blanks=st.lists(st.sampled_from(["\n", "\n\n", "\n \n", "\r\n\t\r\n"]), min_size=1),
)
def test_well_formed_files_round_trip(sequences, seps, blanks):
    parts = []
    for i, seq in enumerate(sequences):
        for j, row in enumerate(seq):
            parts.append(seps[(i + j) % len(seps)].join(row) + "\n")
        parts.append(blanks[i % len(blanks)])
    data = "".join(parts).encode()
    result = read_until_error(data)
    assert result == naive(data)
    assert [rows for rows, _ in result[0]] == [seq for seq in sequences if seq]


# -- column counts ------------------------------------------------------------------


def test_column_count_mismatch_reports_the_line():
    data = b"a b c\nd e f\n\ng h\n"
    with pytest.raises(InputError, match="expected 3 columns, found 2") as info:
        read_bytes(data, name="train.txt")
    assert (info.value.path, info.value.line) == ("train.txt", 4)
    assert str(info.value) == "train.txt:4: expected 3 columns, found 2"


def test_column_mismatch_far_into_the_file_has_the_right_line():
    data = b"a b\n" * 30000 + b"\n" + b"c d\n" * 5000 + b"e f g\n"
    with pytest.raises(InputError) as info:
        read_bytes(data)
    assert info.value.line == 35002


def test_sequences_before_a_bad_line_are_yielded_first():
    stream = read_sequences(io.BytesIO(b"a b\n\nc d\n\ne f g\n"))
    assert next(stream).rows == [["a", "b"]]
    assert next(stream).rows == [["c", "d"]]
    with pytest.raises(InputError) as info:
        next(stream)
    assert info.value.line == 5


def test_min_columns_requires_a_label_column():
    with pytest.raises(InputError) as info:
        read_bytes(b"\nword\nother\n", min_columns=2)
    assert info.value.line == 2
    assert info.value.message == "expected at least 2 columns (tokens and a label), found 1"
    assert read_bytes(b"w L\n", min_columns=2) == [([["w", "L"]], [1])]


def test_min_columns_below_one_is_a_usage_error():
    with pytest.raises(UsageError):
        read_sequences(io.BytesIO(b""), min_columns=0)


# -- encodings ----------------------------------------------------------------------


def test_invalid_utf8_reports_line_and_absolute_byte_offset():
    data = b"a b\n" * 30000 + b"\nc \xff\n"
    with pytest.raises(InputError) as info:
        read_bytes(data, name="x.txt")
    assert info.value.line == 30002
    assert info.value.message == f"cannot decode the data as utf-8 at byte offset 120003 {HINT}"


def test_decode_offset_counts_the_bom():
    data = b"\xef\xbb\xbfab \xc3\n"
    with pytest.raises(InputError, match="at byte offset 6 ") as info:
        read_bytes(data)
    assert info.value.line == 1


def test_latin1_file():
    data = "café NN\nnaïve JJ\n".encode("latin-1")
    assert read_bytes(data, encoding="latin-1")[0][0] == [["café", "NN"], ["naïve", "JJ"]]
    with pytest.raises(InputError, match="at byte offset 3 "):
        read_bytes(data)  # not UTF-8


@pytest.mark.parametrize("block_size", [1, 65536])
def test_euc_jp_file(monkeypatch, block_size):
    monkeypatch.setattr(text_input, "_BLOCK_SIZE", block_size)
    text = "東京 名詞 B-LOC\nに 助詞 O\n\n行く 動詞 O\n"
    rows = read_bytes(text.encode("euc_jp"), encoding="euc-jp")
    assert rows == [
        ([["東京", "名詞", "B-LOC"], ["に", "助詞", "O"]], [1, 2]),
        ([["行く", "動詞", "O"]], [4]),
    ]


def test_decode_errors_name_the_encoding_as_the_user_spelled_it():
    data = "東京 名詞\n".encode("euc_jp") + b"x \xa4\n"
    with pytest.raises(InputError) as info:
        read_bytes(data, encoding="EUC-JP")
    assert info.value.message == f"cannot decode the data as EUC-JP at byte offset 12 {HINT}"
    assert info.value.line == 2


def test_decode_errors_name_file_line_offset_and_the_option():
    data = b"a b\n\nc \xe9t\xe9\n"  # latin-1, read as UTF-8
    with pytest.raises(InputError) as info:
        read_bytes(data, name="corpus.txt")
    assert str(info.value) == ("corpus.txt:3: cannot decode the data as utf-8 at byte offset 7 "
                               + HINT)


def test_lone_surrogate_error_names_the_line_offset_and_the_option(monkeypatch):
    data = b"a b\n\nc +2D0-\n"  # UTF-7 for U+D83D alone
    for block_size in (1, 65536):
        monkeypatch.setattr(text_input, "_BLOCK_SIZE", block_size)
        with pytest.raises(InputError) as info:
            read_bytes(data, encoding="utf-7", name="c.txt")
        assert str(info.value) == ("c.txt:3: cannot decode the data as utf-7: it encodes a lone "
                                   f"surrogate U+D83D in the line at byte offset 5 {HINT}")


def test_unknown_and_ascii_incompatible_encodings_are_refused_up_front():
    with pytest.raises(UsageError, match="unknown encoding"):
        read_sequences(io.BytesIO(b""), encoding="no-such-codec")
    with pytest.raises(UsageError, match="ASCII-compatible"):
        read_sequences(io.BytesIO(b""), encoding="utf-16")
    with pytest.raises(UsageError):
        read_sequences(io.BytesIO(b""), encoding="rot13")


# -- sources ------------------------------------------------------------------------


def test_path_and_gzip_by_suffix_and_by_magic(tmp_path):
    data = b"a b\nc d\n\ne f\n"
    expected = read_bytes(data)
    plain = tmp_path / "plain.txt"
    plain.write_bytes(data)
    by_suffix = tmp_path / "data.txt.gz"
    by_suffix.write_bytes(gzip.compress(data))
    by_magic = tmp_path / "data.txt"
    by_magic.write_bytes(gzip.compress(data))
    for path in (plain, str(by_suffix), by_magic):
        assert [(s.rows, s.lines) for s in read_sequences(path)] == expected
    assert read_bytes(gzip.compress(data)) == expected  # a gzipped stream


def test_gz_name_without_gzip_content_is_an_error(tmp_path):
    path = tmp_path / "fake.gz"
    path.write_bytes(b"a b\n")
    with pytest.raises(InputError, match="not a gzip file"):
        list(read_sequences(path))


def test_truncated_gzip_is_an_input_error(tmp_path):
    path = tmp_path / "cut.gz"
    path.write_bytes(gzip.compress(b"a b\n" * 1000)[:-10])
    with pytest.raises(InputError, match="cannot read gzip data") as info:
        list(read_sequences(path))
    assert info.value.path == str(path)


def test_missing_file_is_an_input_error(tmp_path):
    missing = tmp_path / "missing.txt"
    with pytest.raises(InputError, match="cannot open: No such file") as info:
        list(read_sequences(missing))
    assert info.value.path == str(missing)


def test_stdin_is_read_for_dash_and_none_and_left_open(monkeypatch):
    for source in ("-", None):
        stdin = io.TextIOWrapper(io.BytesIO(gzip.compress(b"a b\n")))
        monkeypatch.setattr(sys, "stdin", stdin)
        sequences = list(read_sequences(source))
        assert sequences == [Sequence([["a", "b"]], [1])]
        assert not stdin.buffer.closed
    stream, name = open_binary("-")
    assert name == "<stdin>"


def test_caller_stream_is_not_closed_and_text_streams_are_refused():
    stream = io.BytesIO(b"a b\n")
    assert len(list(read_sequences(stream))) == 1
    assert not stream.closed
    with pytest.raises(UsageError, match="binary stream"):
        list(read_sequences(io.StringIO("a b\n")))


def test_errors_name_the_source():
    with pytest.raises(InputError) as info:
        read_bytes(b"a\nb c\n")
    assert info.value.path == "<stream>"
    with pytest.raises(InputError) as info:
        read_bytes(b"a\nb c\n", name="corpus.txt")
    assert info.value.path == "corpus.txt"


class Tripwire(io.BytesIO):
    """A stream that fails the test if it is read beyond ``limit`` bytes."""

    def __init__(self, data: bytes, limit: int) -> None:
        super().__init__(data)
        self.limit = limit

    def _check(self) -> None:
        if self.tell() >= self.limit:
            raise AssertionError("the reader read past the first sequences")

    def read(self, size=-1):
        self._check()
        return super().read(size)

    def read1(self, size=-1):
        self._check()
        return super().read1(size)


def test_reading_is_streaming():
    data = b"first A\nsecond B\n\n" + b"more C\n" * 500_000  # 3.5 MB
    stream = Tripwire(data, limit=256 * 1024)
    sequences = read_sequences(stream)
    assert next(sequences).rows == [["first", "A"], ["second", "B"]]
    assert stream.tell() < 256 * 1024


def test_garbage_collector_state_is_restored():
    assert gc.isenabled()
    with pytest.raises(InputError):
        read_bytes(b"a b\nc\n")
    assert gc.isenabled()
    gc.disable()
    try:
        read_bytes(b"a b\n")
        assert not gc.isenabled()
    finally:
        gc.enable()


# -- document markers ---------------------------------------------------------------


def items_of(data: bytes, **options) -> list:
    return list(read_items(io.BytesIO(data), **options))


def test_docstart_lines_are_document_markers_not_tokens():
    conll02 = b"-DOCSTART- -DOCSTART- O\nDe Art O\ntekst N O\n\nx Y O\n"
    conll03 = b"-DOCSTART- -X- -X- O\n\nEU NNP B-NP B-ORG\n\n-DOCSTART- -X- -X- O\n\n"
    assert items_of(conll02) == [
        DocStart(["-DOCSTART-", "-DOCSTART-", "O"], 1, blank_after=False),
        Sequence([["De", "Art", "O"], ["tekst", "N", "O"]], [2, 3]),
        Sequence([["x", "Y", "O"]], [5]),
    ]
    assert items_of(conll03) == [
        DocStart(["-DOCSTART-", "-X-", "-X-", "O"], 1, blank_after=True),
        Sequence([["EU", "NNP", "B-NP", "B-ORG"]], [3]),
        DocStart(["-DOCSTART-", "-X-", "-X-", "O"], 5, blank_after=True),
    ]
    # read_sequences (training, devel) drops them: no one-token -DOCSTART- sequences
    assert read_bytes(conll02) == [([["De", "Art", "O"], ["tekst", "N", "O"]], [2, 3]),
                                   ([["x", "Y", "O"]], [5])]
    assert read_bytes(conll03) == [([["EU", "NNP", "B-NP", "B-ORG"]], [3])]


def test_docstart_ends_a_sequence_and_escapes_the_column_check():
    data = b"a A\nb B\n-DOCSTART-\nc C\n-DOCSTART- x y z\n"
    assert items_of(data, min_columns=2) == [
        Sequence([["a", "A"], ["b", "B"]], [1, 2]),
        DocStart(["-DOCSTART-"], 3),
        Sequence([["c", "C"]], [4]),
        DocStart(["-DOCSTART-", "x", "y", "z"], 5),
    ]
    assert items_of(b"-DOCSTART-\n\na b\n", min_columns=2)[1] == Sequence([["a", "b"]], [3])
    assert items_of(b"-DOCSTART-\tO\n", sep="tab") == [DocStart(["-DOCSTART-", "O"], 1)]
    assert read_bytes(b"x-DOCSTART- O\n-DOCSTART-x O\n") == [
        ([["x-DOCSTART-", "O"], ["-DOCSTART-x", "O"]], [1, 2])]  # only a whole first field


def naive_items(data: bytes) -> list:
    """Line-by-line reference for read_items (auto separator, well-formed input)."""
    lines = data.decode().split("\n")
    if lines[-1] == "":
        lines.pop()
    out, rows, numbers = [], [], []
    for number, line in enumerate(lines, 1):
        fields = line.split()
        if (not fields or fields[0] == "-DOCSTART-") and rows:
            out.append(Sequence(rows, numbers))
            rows, numbers = [], []
        if fields and fields[0] == "-DOCSTART-":
            blank = number < len(lines) and not lines[number].split()
            out.append(DocStart(fields, number, blank_after=blank))
        elif fields:
            rows.append(fields)
            numbers.append(number)
    if rows:
        out.append(Sequence(rows, numbers))
    return out


@settings(max_examples=200, deadline=None)
@given(
    lines=st.lists(st.sampled_from(["a A", "b  B", "", " ", "-DOCSTART- -X- O",
                                    "-DOCSTART-", "\t-DOCSTART- O"]), max_size=25),
    end=st.sampled_from(["", "\n"]),
    block_size=st.sampled_from([1, 3, 8, 65536]),
)
def test_markers_match_a_line_by_line_reference(lines, end, block_size):
    data = ("\n".join(lines) + end).encode()
    original = text_input._BLOCK_SIZE
    text_input._BLOCK_SIZE = block_size
    try:
        assert items_of(data) == naive_items(data)
        assert read_bytes(data) == [(i.rows, i.lines) for i in naive_items(data)
                                    if isinstance(i, Sequence)]
    finally:
        text_input._BLOCK_SIZE = original


# -- live input ---------------------------------------------------------------------


def test_is_live(tmp_path, monkeypatch):
    path = tmp_path / "f.txt"
    path.write_bytes(b"a b\n")
    read_end, write_end = os.pipe()
    try:
        with open(path, "rb") as regular, os.fdopen(os.dup(read_end), "rb") as pipe:
            assert not is_live(path) and not is_live(regular)
            assert not is_live(io.BytesIO(b""))  # in memory: nothing to wait for
            assert is_live(pipe)
            monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(pipe))
            assert is_live("-")
            monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(regular))
            assert not is_live("-")
    finally:
        os.close(read_end)
        os.close(write_end)


def test_pipe_input_pauses_instead_of_waiting_for_a_full_block():
    """Every complete sequence comes out before the reader waits for more input.

    (An unbuffered pipe: a buffered one may show one extra pause after the
    gzip check has buffered the first bytes.)
    """
    read_end, write_end = os.pipe()
    with os.fdopen(read_end, "rb", buffering=0) as stream, ThreadPoolExecutor(1) as pool:
        items = read_items(stream, pauses=True)

        def until_pause(timeout: float = 30) -> list:
            got = []
            while (item := pool.submit(next, items).result(timeout=timeout)) is not PAUSE:
                got.append(item)
            return got

        try:
            assert until_pause() == []  # nothing written yet: a pause before the first read
            os.write(write_end, b"a A\nb B\n\nc C\n")
            assert until_pause() == [Sequence([["a", "A"], ["b", "B"]], [1, 2])]
            os.write(write_end, b"\n-DOCSTART- O\n\n")
            assert until_pause() == [Sequence([["c", "C"]], [4]),
                                     DocStart(["-DOCSTART-", "O"], 6, blank_after=True)]
            os.write(write_end, b"d D\n")
        finally:
            os.close(write_end)
        assert [item for item in items if item is not PAUSE] == [Sequence([["d", "D"]], [8])]
