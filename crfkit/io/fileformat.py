"""The crfkit model container: a JSON header plus named numpy arrays, checksummed.

Models are shared between machines and kept for years, so the format must
be safe to open (no pickle: loading a model never executes code), must tell
a corrupted or truncated file from a valid one, and must say so clearly when
a newer crfkit wrote it.

Layout (all integers little-endian)::

    offset  size  content
    0       8     magic b"CRFKIT\\x00\\x1a"
    8       4     uint32 format version (FORMAT_VERSION)
    12      8     uint64 header length H
    20      H     header: UTF-8 JSON
    P       ...   array payloads, P = 20 + H rounded up to a multiple of 8
    end-4   4     uint32 CRC-32 (zlib.crc32) of every preceding byte

The header is ``{"meta": {...}, "arrays": [{"name", "dtype", "shape",
"offset", "nbytes"}, ...]}``: ``meta`` is the caller's JSON object,
``dtype`` one of :data:`ALLOWED_DTYPES` (numpy ``dtype.str`` spelling),
``offset`` is relative to P and a multiple of 8, and ``nbytes`` equals
``prod(shape) * itemsize``.  Arrays are stored C-contiguous in header order,
each starting at the next multiple of 8; the payload ends at the last array's
end rounded up to 8.  Padding bytes are zero.

:func:`loads` checks all of this before building any array and raises
:class:`ModelFormatError` with a one-line message otherwise.  The arrays it
returns are read-only, C-contiguous, native-byte-order views of the input
bytes (zero-copy on little-endian machines); copy one to modify it.
"""

from __future__ import annotations

import json
import math
import os
import struct
import sys
import zlib
from itertools import pairwise
from typing import Any

import numpy as np

from crfkit.errors import InputError, ModelFormatError
from crfkit.io.atomic import atomic_output
from crfkit.io.text_input import open_binary

__all__ = [
    "ALLOWED_DTYPES",
    "FORMAT_VERSION",
    "dumps",
    "loads",
    "pack_strings",
    "read_file",
    "unpack_strings",
    "write_file",
]

FORMAT_VERSION = 1
ALLOWED_DTYPES = frozenset(
    {"|i1", "<i2", "<i4", "<i8", "|u1", "<u2", "<u4", "<u8", "<f4", "<f8", "|b1"}
)
MAGIC = b"CRFKIT\x00\x1a"

_PREFIX = struct.Struct("<8sIQ")  # magic, version, header length
_CRC = struct.Struct("<I")
_ALIGN = 8
_MAX_NDIM = 32
_ENTRY_KEYS = frozenset({"name", "dtype", "shape", "offset", "nbytes"})


def dumps(meta: dict, arrays: dict[str, np.ndarray]) -> bytes:
    """Serialise ``meta`` (a JSON-able dict) and ``arrays`` into container bytes.

    Arrays are converted to little-endian; a dtype outside
    :data:`ALLOWED_DTYPES` (objects, strings, complex, ...) is a programming
    error and raises :class:`TypeError`.
    """
    out = bytearray()
    for piece in _pieces(meta, arrays):
        out += piece
    out += _CRC.pack(zlib.crc32(out))
    return bytes(out)


def _pieces(meta: dict, arrays: dict[str, np.ndarray]) -> list[memoryview]:
    """The container's bytes but its checksum, in pieces: the prefix and header, then each
    array's bytes (the array itself when already little-endian and contiguous) and its
    padding. Written one at a time, a model takes no second copy of its arrays."""
    if not isinstance(meta, dict):
        raise TypeError(f"meta must be a dict, not {type(meta).__name__}")
    entries: list[dict[str, Any]] = []
    payloads: list[memoryview] = []
    position = 0
    for name, value in arrays.items():
        if not isinstance(name, str):
            raise TypeError(f"array names must be strings, not {type(name).__name__}")
        array = np.asarray(value)
        dtype = array.dtype.newbyteorder("<") if array.dtype.byteorder != "|" else array.dtype
        if dtype.str not in ALLOWED_DTYPES:
            raise TypeError(f"array {name!r}: dtype {array.dtype} cannot be stored in a model")
        data = memoryview(np.ascontiguousarray(array, dtype=dtype).reshape(-1).view(np.uint8))
        entries.append(
            {
                "name": name,
                "dtype": dtype.str,
                "shape": list(array.shape),
                "offset": position,
                "nbytes": data.nbytes,
            }
        )
        payloads += [data, memoryview(bytes(_padding(data.nbytes)))]
        position += data.nbytes + _padding(data.nbytes)
    header = json.dumps({"meta": meta, "arrays": entries}, ensure_ascii=False).encode("utf-8")
    head = bytearray(_PREFIX.pack(MAGIC, FORMAT_VERSION, len(header)))
    head += header
    head += bytes(_padding(len(head)))
    return [memoryview(head), *payloads]


def loads(data: bytes, *, name: str = "<bytes>") -> tuple[dict, dict[str, np.ndarray]]:
    """Parse container bytes into ``(meta, arrays)``, validating everything first.

    ``name`` is the file name used in error messages.  Raises
    :class:`ModelFormatError` for anything that is not a well-formed model
    of a supported version.
    """
    data = bytes(data) if not isinstance(data, bytes) else data
    if not data or not data.startswith(MAGIC[: len(data)]):
        raise ModelFormatError("not a crfkit model file", path=name)
    if len(data) < _PREFIX.size + _CRC.size:
        raise ModelFormatError("truncated model file", path=name)
    _, version, header_length = _PREFIX.unpack_from(data)
    # The version comes before the checksum: a newer layout may put it elsewhere.
    if version > FORMAT_VERSION:
        raise ModelFormatError(
            f"model format version {version} is newer than this crfkit supports "
            f"({FORMAT_VERSION}); upgrade crfkit",
            path=name,
        )
    (stored_crc,) = _CRC.unpack_from(data, len(data) - _CRC.size)
    if zlib.crc32(memoryview(data)[: -_CRC.size]) != stored_crc:
        raise ModelFormatError(_damage(data, header_length), path=name)
    if version < 1:
        raise ModelFormatError(f"unknown model format version {version}", path=name)
    payload_start = _round_up(_PREFIX.size + header_length)
    if payload_start + _CRC.size > len(data):
        raise ModelFormatError("model header length exceeds the file size", path=name)
    header = _parse_header(data[_PREFIX.size : _PREFIX.size + header_length], name)
    payload = memoryview(data)[payload_start : len(data) - _CRC.size]
    entries = _check_entries(header["arrays"], len(payload), name)
    arrays = {entry["name"]: _view(payload, entry, name) for entry in entries}
    return header["meta"], arrays


def write_file(path: str | os.PathLike | None, meta: dict, arrays: dict[str, np.ndarray]) -> None:
    """Write a model atomically (``"-"`` is stdout; a ``.gz`` name is compressed)."""
    pieces = _pieces(meta, arrays)
    crc = 0
    with atomic_output(path, binary=True) as out:
        for piece in pieces:
            out.write(piece)
            crc = zlib.crc32(piece, crc)
        out.write(_CRC.pack(crc))


def read_file(path: str | os.PathLike | None) -> tuple[dict, dict[str, np.ndarray]]:
    """Read and validate a model file (``"-"`` is stdin; gzip is decompressed)."""
    stream, name = open_binary(path)
    try:
        data = stream.read()
    except (OSError, EOFError, zlib.error) as err:
        raise InputError(f"cannot read model file: {err}", path=name) from None
    finally:
        if stream is not sys.stdin.buffer:
            stream.close()
    return loads(data, name=name)


def pack_strings(strings: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Pack strings into ``(uint8 UTF-8 blob, int64 offsets of length n+1)``.

    String ``i`` is ``blob[offsets[i]:offsets[i+1]]``: no separator byte, so
    any string (tabs, newlines, NUL) round-trips, and a feature table of
    500k strings is two arrays instead of 500k JSON values.  The strings
    are encoded in one call; byte offsets are the character offsets shifted
    by the UTF-8 continuation bytes before them, found with numpy.
    """
    joined = "".join(strings)
    data = joined.encode("utf-8")
    blob = np.frombuffer(data, dtype=np.uint8)
    offsets = np.zeros(len(strings) + 1, dtype=np.int64)
    lengths = np.fromiter(map(len, strings), dtype=np.int64, count=len(strings))
    np.cumsum(lengths, out=offsets[1:])
    if len(data) != len(joined):  # not pure ASCII
        continuation = np.flatnonzero((blob & 0xC0) == 0x80)
        # The k-th continuation byte (0-based) belongs to character position - k - 1.
        owner = continuation - np.arange(1, continuation.size + 1)
        offsets += np.searchsorted(owner, offsets, side="left")
    return blob, offsets


def unpack_strings(blob: np.ndarray, offsets: np.ndarray) -> list[str]:
    """Inverse of :func:`pack_strings`; raises ModelFormatError on inconsistent input.

    The blob is decoded once (which validates it) and sliced by character
    offsets: byte offsets minus the continuation bytes before them.
    """
    blob = np.asarray(blob)
    offsets = np.asarray(offsets)
    if blob.ndim != 1 or blob.dtype != np.uint8:
        raise ModelFormatError("string table: the blob must be a 1-d uint8 array")
    if offsets.ndim != 1 or offsets.dtype.kind not in "iu" or offsets.size == 0:
        raise ModelFormatError("string table: offsets must be a non-empty 1-d integer array")
    offsets = offsets.astype(np.int64)
    if offsets[0] != 0 or offsets[-1] != blob.size or np.any(np.diff(offsets) < 0):
        raise ModelFormatError("string table: offsets are not increasing from 0 to the blob size")
    raw = blob.tobytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ModelFormatError(f"string table: invalid UTF-8 at byte {err.start}") from None
    if len(text) != len(raw):
        is_continuation = (blob & 0xC0) == 0x80
        if np.any(is_continuation[offsets[offsets < blob.size]]):
            raise ModelFormatError("string table: an offset splits a UTF-8 character")
        offsets = offsets - np.searchsorted(np.flatnonzero(is_continuation), offsets)
    bounds = offsets.tolist()
    return [text[start:end] for start, end in pairwise(bounds)]


def _padding(size: int) -> int:
    """Bytes needed after ``size`` bytes to reach the next multiple of 8."""
    return -size % _ALIGN


def _round_up(size: int) -> int:
    return size + _padding(size)


def _damage(data: bytes, header_length: int) -> str:
    """Tell truncation from corruption after a checksum mismatch.

    The (unverified) header is only used to choose the message: if it parses
    and announces more payload than the file holds, the file was cut short.
    """
    if _PREFIX.size + header_length + _CRC.size > len(data):
        return "truncated model file"
    try:
        header = json.loads(data[_PREFIX.size : _PREFIX.size + header_length])
        end = max((e["offset"] + e["nbytes"] for e in header["arrays"]), default=0)
        if _round_up(_PREFIX.size + header_length) + _round_up(end) + _CRC.size > len(data):
            return "truncated model file"
    except (ValueError, TypeError, KeyError, RecursionError):
        pass
    return "model file is corrupted (checksum mismatch)"


def _parse_header(raw: bytes, name: str) -> dict:
    """Decode and structurally check the JSON header (arrays are checked later)."""
    try:
        header = json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError) as err:  # UnicodeDecodeError is a ValueError
        raise ModelFormatError(f"model header is not valid JSON: {err}", path=name) from None
    if not isinstance(header, dict) or set(header) != {"meta", "arrays"}:
        raise ModelFormatError("model header must have exactly 'meta' and 'arrays'", path=name)
    if not isinstance(header["meta"], dict) or not isinstance(header["arrays"], list):
        raise ModelFormatError("model header: 'meta' must be an object, 'arrays' a list", path=name)
    try:  # JSON escapes can spell lone surrogates, which no UTF-8 output can hold
        json.dumps(header, ensure_ascii=False).encode("utf-8")
    except (UnicodeEncodeError, RecursionError):
        raise ModelFormatError("model header holds a string that is not valid Unicode",
                               path=name) from None
    return header


def _check_entries(entries: list, payload_size: int, name: str) -> list[dict]:
    """Validate every array entry against the payload: types, sizes, bounds, overlaps."""
    seen: set[str] = set()
    for index, entry in enumerate(entries):
        problem = _entry_problem(entry)
        if problem is None and entry["name"] in seen:
            problem = "duplicate name"
        if problem is not None:
            named = isinstance(entry, dict) and isinstance(entry.get("name"), str)
            label = repr(entry["name"]) if named else f"#{index}"
            raise ModelFormatError(f"model array {label}: {problem}", path=name)
        seen.add(entry["name"])
    ordered = sorted((e for e in entries if e["nbytes"]), key=lambda e: e["offset"])
    end = 0
    for entry in ordered:
        if entry["offset"] < end:
            raise ModelFormatError(f"model array {entry['name']!r} overlaps another", path=name)
        end = entry["offset"] + entry["nbytes"]
    largest = 0
    for entry in entries:
        largest = max(largest, entry["offset"] + entry["nbytes"])
        if largest > payload_size:
            raise ModelFormatError(f"model array {entry['name']!r} ends past the payload",
                                   path=name)
    if _round_up(largest) != payload_size:
        raise ModelFormatError("model file has unexplained bytes after its arrays", path=name)
    return entries


def _entry_problem(entry: Any) -> str | None:
    """What is wrong with one header entry, or None."""
    if not isinstance(entry, dict):
        return "not an object"
    if set(entry) != _ENTRY_KEYS or not isinstance(entry["name"], str):
        return "entry needs exactly the keys name, dtype, shape, offset, nbytes"
    if not isinstance(entry["dtype"], str) or entry["dtype"] not in ALLOWED_DTYPES:
        return f"dtype {entry['dtype']!r} is not allowed"
    shape = entry["shape"]
    if (
        not isinstance(shape, list)
        or len(shape) > _MAX_NDIM
        or not all(_is_count(n) for n in shape)
    ):
        return f"bad shape {shape!r}"
    if not _is_count(entry["offset"]) or entry["offset"] % _ALIGN:
        return f"bad offset {entry['offset']!r}"
    itemsize = int(entry["dtype"][2:])
    if not _is_count(entry["nbytes"]) or entry["nbytes"] != math.prod(shape) * itemsize:
        return f"nbytes {entry['nbytes']!r} does not match shape and dtype"
    return None


def _is_count(value: Any) -> bool:
    """A non-negative int that is not a bool (JSON true would pass ``isinstance int``)."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _view(payload: memoryview, entry: dict, name: str) -> np.ndarray:
    """Build one validated array as a read-only native-order view (or copy)."""
    dtype = np.dtype(entry["dtype"])  # from the allowed set only
    start = entry["offset"]
    array = np.frombuffer(payload[start : start + entry["nbytes"]], dtype=dtype)
    try:
        array = array.reshape(entry["shape"])
    except ValueError:  # e.g. an empty array with a dimension numpy cannot index
        raise ModelFormatError(f"model array {entry['name']!r}: bad shape {entry['shape']}",
                               path=name) from None
    if dtype.kind == "b" and array.size and array.view(np.uint8).max() > 1:
        raise ModelFormatError(f"model array {entry['name']!r}: bool values other than 0/1",
                               path=name)
    if not dtype.isnative or not array.flags.aligned:
        array = array.astype(dtype.newbyteorder("="))
        array.flags.writeable = False
    return array
