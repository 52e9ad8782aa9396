"""Reading by column blocks (crfkit.io.columnar) gives read_items' sequences, markers and errors."""

from __future__ import annotations

import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crfkit.errors import InputError
from crfkit.io import columnar, text_input
from crfkit.io.columnar import TokenBlock, read_token_blocks
from crfkit.io.reader import Sequence, read_items
from tests.io.test_reader import naive


def as_items(blocks) -> list:
    """Blocks as the sequences they hold (other items as they are); each token line checked
    against its fields."""
    out = []
    for item in blocks:
        if not isinstance(item, TokenBlock):
            out.append(item)
            continue
        n, t = item.n_columns, 0
        assert len(item.fields) == n * item.n_tokens
        for length in item.lengths.tolist():
            rows = [item.fields[(t + i) * n:(t + i + 1) * n] for i in range(length)]
            out.append(Sequence(rows, item.lines[t:t + length].tolist()))
            t += length
    return out


def until_error(read, data: bytes, sep: str) -> tuple[list, tuple | None]:
    out = []
    try:
        for item in read(io.BytesIO(data), sep=sep):
            out.append(item)
    except InputError as err:
        return out, (err.message, err.line)
    return out, None


def texts_match(blocks, sep: str) -> bool:
    joiner = "\t" if sep == "tab" else " "
    return all(item.texts[t] == joiner.join(item.fields[t * item.n_columns:
                                                         (t + 1) * item.n_columns])
               for item in blocks if isinstance(item, TokenBlock)
               for t in range(item.n_tokens))


_LINES = st.one_of(
    st.sampled_from(["", " ", "\t", "-DOCSTART- x", "a b c d"]),
    st.lists(st.sampled_from(["a", "é", "b\u3000c"]), min_size=3, max_size=3).map(" ".join),
    st.lists(st.sampled_from(["a", "b"]), min_size=3, max_size=3).map("\t".join),
    st.lists(st.sampled_from(["a", "b"]), min_size=3, max_size=3).map("  ".join),
)


@settings(max_examples=100, deadline=None)
@given(lines=st.lists(_LINES, max_size=40), end=st.sampled_from(["", "\n", "\r\n"]),
       sep=st.sampled_from(["auto", "tab", "space"]), block_size=st.sampled_from([5, 16, 1 << 16]),
       longest_tail=st.sampled_from([2, 1 << 14]))
def test_the_items_of_read_items(lines, end, sep, block_size, longest_tail):
    data = ("\n".join(lines) + end).encode()
    saved = text_input._BLOCK_SIZE, columnar.LONGEST_TAIL
    text_input._BLOCK_SIZE, columnar.LONGEST_TAIL = block_size, longest_tail
    try:
        expected = until_error(read_items, data, sep)
        blocks, error = until_error(read_token_blocks, data, sep)
    finally:
        text_input._BLOCK_SIZE, columnar.LONGEST_TAIL = saved
    assert (as_items(blocks), error) == expected
    assert texts_match(blocks, sep)


@pytest.mark.parametrize("block_size", [4, 9, 1 << 16])
def test_regular_text_is_all_blocks_with_their_line_numbers(monkeypatch, block_size):
    monkeypatch.setattr(text_input, "_BLOCK_SIZE", block_size)
    data = b"a  X\nb\tY\n\n\nc Z\n \nd W\ne V"
    blocks = list(read_token_blocks(io.BytesIO(data)))
    assert all(isinstance(block, TokenBlock) for block in blocks)
    sequences = [(seq.rows, seq.lines) for seq in as_items(blocks)]
    assert sequences == naive(data)[0] == [([["a", "X"], ["b", "Y"]], [1, 2]),
                                           ([["c", "Z"]], [5]), ([["d", "W"], ["e", "V"]], [7, 8])]
    assert texts_match(blocks, "auto")


def test_a_marker_hands_the_rest_to_the_row_reader(monkeypatch):
    monkeypatch.setattr(text_input, "_BLOCK_SIZE", 9)  # the first block: the first sequence
    data = b"a X\nb Y\n\n-DOCSTART- -X-\n\nc Z\n"
    items = list(read_token_blocks(io.BytesIO(data)))
    assert isinstance(items[0], TokenBlock)
    assert items[1:] == list(read_items(io.BytesIO(data)))[1:]


def test_a_column_error_names_its_line_after_blocks_were_read(monkeypatch):
    monkeypatch.setattr(text_input, "_BLOCK_SIZE", 8)
    data = b"a X\n\nb Y\n\nc Y\nd E F\n"
    blocks, error = until_error(read_token_blocks, data, "auto")
    assert error == ("expected 2 columns, found 3", 6)
    assert as_items(blocks) == [Sequence([["a", "X"]], [1]), Sequence([["b", "Y"]], [3])]


def test_splitting_a_block_after_whole_sequences():
    block = next(read_token_blocks(io.BytesIO(b"a X\nb Y\n\nc Z\n\nd W\ne V\nf U\n\n")))
    head, rest = block.split(2)
    assert head.lengths.tolist() == [2] and head.texts == ["a X", "b Y"]
    assert rest.lengths.tolist() == [1, 3] and rest.fields[:2] == ["c", "Z"]
    assert rest.lines.tolist() == [4, 6, 7, 8]
    assert block.split(3)[0].lengths.tolist() == [2, 1]  # the sequence reaching the count ends it
    assert block.split(6) == (block, None)
