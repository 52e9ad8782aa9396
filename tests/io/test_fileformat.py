"""Tests for crfkit.io.fileformat: round trips, and refusal of every kind of bad file."""

from __future__ import annotations

import gzip
import io
import json
import pickle
import struct
import sys
import zlib

import numpy as np
import pytest

from crfkit.errors import InputError, ModelFormatError
from crfkit.io import fileformat
from crfkit.io.fileformat import (
    ALLOWED_DTYPES,
    FORMAT_VERSION,
    dumps,
    loads,
    pack_strings,
    read_file,
    unpack_strings,
    write_file,
)


def sample_arrays() -> dict[str, np.ndarray]:
    arrays = {}
    for code in sorted(ALLOWED_DTYPES):
        dtype = np.dtype(code)
        arrays[f"m{code}"] = (np.arange(6) % 2 if dtype.kind == "b" else np.arange(6)).astype(
            dtype
        ).reshape(2, 3)
        arrays[f"e{code}"] = np.zeros((0, 4), dtype=dtype)
        arrays[f"s{code}"] = np.array(1, dtype=dtype)  # 0-d
    arrays["weights"] = np.linspace(-1, 1, 101)
    return arrays


def sample() -> bytes:
    return dumps({"kind": "test", "labels": ["B-NP", "é"], "n": 3}, sample_arrays())


def build(header, payload: bytes = b"", version: int = FORMAT_VERSION) -> bytes:
    """A container with any header, and a valid checksum, to test structural checks."""
    raw = header if isinstance(header, bytes) else json.dumps(header).encode()
    out = fileformat.MAGIC + struct.pack("<IQ", version, len(raw)) + raw
    out += bytes(-len(out) % 8) + payload
    return out + struct.pack("<I", zlib.crc32(out))


def entry(name="a", dtype="<i4", shape=(2,), offset=0, nbytes=8) -> dict:
    return {"name": name, "dtype": dtype, "shape": list(shape), "offset": offset, "nbytes": nbytes}


# -- round trips --------------------------------------------------------------------


def test_round_trip_of_every_allowed_dtype_and_shape():
    arrays = sample_arrays()
    meta, loaded = loads(sample())
    assert meta == {"kind": "test", "labels": ["B-NP", "é"], "n": 3}
    assert list(loaded) == list(arrays)
    for name, array in arrays.items():
        got = loaded[name]
        assert got.dtype == array.dtype and got.shape == array.shape, name
        assert np.array_equal(got, array), name
        assert got.flags.c_contiguous and got.dtype.isnative
        assert not got.flags.writeable


def test_dumps_is_deterministic_and_aligned():
    data = sample()
    assert data == sample()
    header_length = struct.unpack_from("<Q", data, 12)[0]
    payload_start = 20 + header_length + (-(20 + header_length) % 8)
    header = json.loads(data[20 : 20 + header_length])
    assert all(e["offset"] % 8 == 0 for e in header["arrays"])
    assert (len(data) - 4 - payload_start) % 8 == 0


def test_big_endian_and_non_contiguous_inputs_are_normalised():
    big = np.arange(5, dtype=">i4")
    strided = np.arange(12, dtype=np.float64).reshape(3, 4).T
    _, loaded = loads(dumps({}, {"big": big, "strided": strided}))
    assert loaded["big"].dtype == np.dtype("<i4") and loaded["big"].tolist() == big.tolist()
    assert np.array_equal(loaded["strided"], strided)


@pytest.mark.parametrize(
    "bad", [np.array(["a"]), np.array([object()]), np.zeros(2, np.float16), np.zeros(1, complex)]
)
def test_dumps_refuses_other_dtypes(bad):
    with pytest.raises(TypeError, match="cannot be stored"):
        dumps({}, {"x": bad})


def test_write_and_read_file_plain_gzip_and_stdin(tmp_path, monkeypatch):
    arrays = {"w": np.arange(10, dtype=np.float32)}
    for name in ("model.crf", "model.crf.gz"):
        path = tmp_path / name
        write_file(path, {"v": 1}, arrays)
        meta, loaded = read_file(path)
        assert meta == {"v": 1} and np.array_equal(loaded["w"], arrays["w"])
    assert (tmp_path / "model.crf.gz").read_bytes()[:2] == b"\x1f\x8b"
    stdin = io.TextIOWrapper(io.BytesIO(dumps({"v": 2}, arrays)))
    monkeypatch.setattr(sys, "stdin", stdin)
    assert read_file("-")[0] == {"v": 2}


def test_read_file_missing_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="cannot open"):
        read_file(tmp_path / "missing.crf")


def test_read_file_names_the_path_in_format_errors(tmp_path):
    path = tmp_path / "model.crf"
    path.write_bytes(sample()[:-1])
    with pytest.raises(ModelFormatError) as info:
        read_file(path)
    assert info.value.path == str(path)


# -- damaged files ------------------------------------------------------------------


def offsets_across(size: int) -> list[int]:
    """At least 20 distinct offsets: every field of the prefix, spread payload, the CRC."""
    spread = np.linspace(21, size - 5, 16, dtype=int)
    return sorted({0, 1, 8, 12, 19, 20, size - 4, size - 1, *spread.tolist()})


def test_truncation_is_always_detected():
    data = sample()
    cuts = offsets_across(len(data))
    assert len(cuts) >= 20
    for cut in cuts:
        with pytest.raises(ModelFormatError):
            loads(data[:cut])


def test_every_cut_and_every_bit_flip_of_a_small_model_is_detected():
    data = dumps({"labels": ["O", "B-NP"]}, {"w": np.arange(20.0), "ids": np.arange(7)})
    for cut in range(len(data)):
        with pytest.raises(ModelFormatError):
            loads(data[:cut])
    for position in range(len(data)):
        for bit in (0x01, 0x80):
            damaged = bytearray(data)
            damaged[position] ^= bit
            with pytest.raises(ModelFormatError):
                loads(bytes(damaged))


def test_truncated_payload_is_called_truncated():
    data = sample()
    with pytest.raises(ModelFormatError) as info:
        loads(data[: len(data) - 100])
    assert info.value.message == "truncated model file"


def test_any_flipped_byte_is_detected():
    data = sample()
    positions = offsets_across(len(data))
    assert len(positions) >= 20
    for position in positions:
        damaged = bytearray(data)
        damaged[position] ^= 0x40
        with pytest.raises(ModelFormatError):
            loads(bytes(damaged))


def test_flipped_payload_byte_is_a_checksum_mismatch():
    damaged = bytearray(sample())
    damaged[-20] ^= 1
    with pytest.raises(ModelFormatError, match=r"corrupted \(checksum mismatch\)"):
        loads(bytes(damaged), name="m.crf")


def test_newer_version_is_refused_with_both_numbers():
    future = build({"meta": {}, "arrays": []}, version=FORMAT_VERSION + 6)
    with pytest.raises(ModelFormatError) as info:
        loads(future, name="new.crf")
    message = str(info.value)
    assert f"version {FORMAT_VERSION + 6} is newer" in message
    assert f"({FORMAT_VERSION}); upgrade crfkit" in message
    assert message.startswith("new.crf: ")


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(40),
        b"Confidence NN B-NP\nin IN B-PP\n",
        pickle.dumps({"weights": [1.0, 2.0]}),
        gzip.compress(b"not a model"),
    ],
    ids=["empty", "png", "text", "pickle", "gzip"],
)
def test_foreign_files_are_not_models(data):
    with pytest.raises(ModelFormatError) as info:
        loads(data)
    assert info.value.message == "not a crfkit model file"


def test_magic_prefix_alone_is_truncated():
    with pytest.raises(ModelFormatError, match="truncated"):
        loads(fileformat.MAGIC[:5])


# -- structurally bad headers (with a valid checksum) ---------------------------------


@pytest.mark.parametrize(
    ("header", "payload", "message"),
    [
        (b"\xff\xfe", b"", "not valid JSON"),
        (b"{not json", b"", "not valid JSON"),
        (b"[" * 100_000, b"", "not valid JSON"),
        ([], b"", "exactly 'meta' and 'arrays'"),
        ({"meta": {}}, b"", "exactly 'meta' and 'arrays'"),
        ({"meta": [], "arrays": []}, b"", "'meta' must be an object"),
        ({"meta": {}, "arrays": [5]}, b"", "#0: not an object"),
        ({"meta": {}, "arrays": [{"name": "a"}]}, b"", "exactly the keys"),
        ({"meta": {}, "arrays": [entry(dtype="|O")]}, bytes(8), "'|O' is not allowed"),
        ({"meta": {}, "arrays": [entry(dtype=">i4")]}, bytes(8), "is not allowed"),
        ({"meta": {}, "arrays": [entry(dtype=["<i4"])]}, bytes(8), "is not allowed"),
        ({"meta": {}, "arrays": [entry(shape=(-2,))]}, bytes(8), "bad shape"),
        ({"meta": {}, "arrays": [entry(shape=(2.0,))]}, bytes(8), "bad shape"),
        ({"meta": {}, "arrays": [entry(shape=(True, 2))]}, bytes(8), "bad shape"),
        ({"meta": {}, "arrays": [entry(shape=[1] * 40, nbytes=4)]}, bytes(8), "bad shape"),
        ({"meta": {}, "arrays": [entry(offset=4)]}, bytes(16), "bad offset"),
        ({"meta": {}, "arrays": [entry(offset=-8)]}, bytes(8), "bad offset"),
        ({"meta": {}, "arrays": [entry(nbytes=12)]}, bytes(16), "does not match"),
        ({"meta": {}, "arrays": [entry(offset=8)]}, bytes(8), "ends past the payload"),
        ({"meta": {}, "arrays": [entry(), entry()]}, bytes(8), "duplicate name"),
        (
            {"meta": {}, "arrays": [entry(shape=(4,), nbytes=16), entry("b", offset=8)]},
            bytes(16),
            "overlaps",
        ),
        ({"meta": {}, "arrays": [entry()]}, bytes(16), "unexplained bytes"),
        ({"meta": {}, "arrays": [entry(dtype="|b1", shape=(1,), nbytes=1)]}, b"\x02" + bytes(7),
         "bool values"),
        ({"meta": {}, "arrays": [entry(shape=(0, 2**70), nbytes=0)]}, b"", "bad shape"),
    ],
)
def test_bad_headers_are_refused(header, payload, message):
    with pytest.raises(ModelFormatError, match=message) as info:
        loads(build(header, payload), name="bad.crf")
    assert info.value.path == "bad.crf"
    assert "\n" not in str(info.value)


def test_well_formed_handmade_file_loads():
    data = build({"meta": {"x": 1}, "arrays": [entry()]}, struct.pack("<2i", 7, -7))
    meta, arrays = loads(data)
    assert meta == {"x": 1} and arrays["a"].tolist() == [7, -7]


# -- string tables ------------------------------------------------------------------


STRINGS = [
    "", "word", "u:b", "w[-1]=a/b", "100%", "#", "\t", "tab\tinside", "new\nline",
    "", "東京", "café", "😀", "ÿ", "\x00", " ", "",
]


def test_strings_round_trip():
    blob, offsets = pack_strings(STRINGS)
    assert blob.dtype == np.uint8 and offsets.dtype == np.int64
    assert offsets.tolist()[0] == 0 and len(offsets) == len(STRINGS) + 1
    assert np.diff(offsets).tolist() == [len(s.encode()) for s in STRINGS]
    assert unpack_strings(blob, offsets) == STRINGS
    _, arrays = loads(dumps({}, {"blob": blob, "offsets": offsets}))
    assert unpack_strings(arrays["blob"], arrays["offsets"]) == STRINGS


def test_empty_and_ascii_string_lists():
    for strings in ([], [""], ["a", "bc", ""]):
        assert unpack_strings(*pack_strings(strings)) == strings


@pytest.mark.parametrize(
    ("blob", "offsets", "message"),
    [
        (b"abc", [0, 2, 1, 3], "not increasing"),
        (b"abc", [1, 3], "not increasing"),
        (b"abc", [0, 2], "not increasing"),
        (b"abc", [0, 4], "not increasing"),
        (b"abc", [], "non-empty"),
        ("é".encode(), [0, 1, 2], "splits a UTF-8 character"),
        (b"a\xffb", [0, 3], "invalid UTF-8 at byte 1"),
    ],
)
def test_unpack_strings_validates(blob, offsets, message):
    with pytest.raises(ModelFormatError, match=message):
        unpack_strings(np.frombuffer(blob, np.uint8), np.array(offsets, dtype=np.int64))


def test_unpack_strings_checks_array_types():
    with pytest.raises(ModelFormatError, match="uint8"):
        unpack_strings(np.zeros(3, np.int32), np.array([0, 3]))
    with pytest.raises(ModelFormatError, match="integer"):
        unpack_strings(np.zeros(3, np.uint8), np.array([0.0, 3.0]))


def test_write_file_writes_the_bytes_of_dumps(tmp_path):
    arrays = {**sample_arrays(), "big": np.arange(5, dtype=">i4"),
              "strided": np.arange(12, dtype=np.float64).reshape(3, 4).T}
    meta = {"kind": "test", "labels": ["é"]}
    write_file(tmp_path / "m", meta, arrays)
    write_file(tmp_path / "m.gz", meta, arrays)
    assert (tmp_path / "m").read_bytes() == dumps(meta, arrays)
    assert gzip.decompress((tmp_path / "m.gz").read_bytes()) == dumps(meta, arrays)


def test_write_file_takes_no_copy_of_the_arrays(tmp_path):
    """A model is written an array at a time: no copy of a 16 MB weight vector (dumps
    would hold its bytes, the container and the result at once)."""
    import tracemalloc

    weights = np.linspace(-1.0, 1.0, 1 << 21)
    tracemalloc.start()
    write_file(tmp_path / "m", {"v": 1}, {"weights": weights, "ids": np.arange(9)})
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < weights.nbytes // 8
    assert np.array_equal(read_file(tmp_path / "m")[1]["weights"], weights)
