"""CRFsuite model files (``crfsuite learn``, python-crfsuite), read as crfkit models.

The file (little-endian)::

    header (48 bytes): b"lCRF", uint32 file size, b"FOMC", uint32 version (100),
        uint32 features (may be 0), labels, attributes, and the offsets of the
        feature table, the label database, the attribute database and the two
        reference tables
    feature table: b"FEAT", uint32 chunk size, uint32 count, then per feature
        uint32 type (0 state, 1 transition), uint32 source, uint32 target,
        float64 weight        (state: attribute -> label; transition: label -> label)
    label and attribute databases: CQDB chunks (b"CQDB", size, flags,
        byte-order mark, uint32 count, uint32 offset of the id -> record
        table); a record is uint32 id, uint32 size, the string and its NUL

CRFsuite attributes are free strings made by the user's feature code, so
the model alone does not say how to compute them from a column file: the
user names a pattern file that generates the same strings (each attribute
counts 1, as python-crfsuite's string attributes do), and each attribute
becomes an observation of every pattern that renders it. Transitions go to
the pattern file's constant bigram pattern (``B``), added if it has none.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

from crfkit.errors import ModelFormatError
from crfkit.features.patterns import Pattern, parse_pattern_line
from crfkit.foreign.build import ModelBuilder
from crfkit.model.model import Model

_HEADER = struct.Struct("<4sI4s9I")
_FEATURE = np.dtype([("type", "<u4"), ("src", "<u4"), ("dst", "<u4"), ("weight", "<f8")])
_CQDB = struct.Struct("<4sIIIII")
_CQDB_BYTEORDER = 0x62445371
_CQDB_TABLES = 256


def looks_like(head: bytes) -> bool:
    return head.startswith(b"lCRF") and head[8:12] == b"FOMC"


@dataclass
class Parsed:
    """A CRFsuite model's contents: labels and attributes in file order, its state features
    (attribute ``src`` -> label ``dst``) and its ``L x L`` transition weights."""

    version: int
    labels: list[str]
    attributes: list[str]
    src: np.ndarray
    dst: np.ndarray
    weight: np.ndarray
    transitions: np.ndarray
    has_transitions: bool


def parse(data: bytes, name: str, *, encoding: str = "utf-8") -> Parsed:
    """Read a CRFsuite model file's bytes; a damaged file is one :class:`ModelFormatError`."""
    def fail(message: str) -> ModelFormatError:
        return ModelFormatError(message, path=name)

    if len(data) < _HEADER.size:
        raise fail("truncated CRFsuite model (shorter than its header)")
    (magic, size, kind, version, _n_features, n_labels, n_attrs, off_features, off_labels,
     off_attrs, _off_lrefs, _off_arefs) = _HEADER.unpack_from(data)
    if magic != b"lCRF" or kind != b"FOMC":
        raise fail("not a CRFsuite CRF model (bad magic)")
    if version != 100:
        raise fail(f"unknown CRFsuite model version {version} (this crfkit reads 100)")
    if size != len(data):
        raise fail(f"truncated or padded CRFsuite model: its header says {size} bytes, the "
                   f"file has {len(data)}")
    labels = _cqdb(data, off_labels, n_labels, encoding, fail, "label")
    attrs = _cqdb(data, off_attrs, n_attrs, encoding, fail, "attribute")
    features = _features(data, off_features, fail)
    state = features["type"] == 0
    trans = features["type"] == 1
    if not (state | trans).all():
        raise fail("CRFsuite feature of unknown type (inconsistent model)")
    L = len(labels)
    src, dst = features["src"].astype(np.int64), features["dst"].astype(np.int64)
    if (dst >= L).any() or (src[trans] >= L).any() or (src[state] >= len(attrs)).any():
        raise fail("CRFsuite feature refers to a label or attribute that does not exist")
    transitions = np.zeros((L, L), dtype=np.float64)
    np.add.at(transitions, (src[trans], dst[trans]), features["weight"][trans])
    return Parsed(version, labels, attrs, src[state], dst[state],
                  features["weight"][state].astype(np.float64), transitions,
                  bool(trans.any()))


def read(data: bytes, name: str, patterns: list[Pattern] | None, *,
         encoding: str = "utf-8") -> Model:
    """A crfkit model from a CRFsuite model and the patterns that make its attributes."""
    parsed = parse(data, name, encoding=encoding)
    if patterns is None:
        raise ModelFormatError("a CRFsuite model does not say how its attributes are made: "
                               "name a pattern file that generates them (--patterns FILE)",
                               path=name)
    labels, attrs = parsed.labels, parsed.attributes
    blocks = np.zeros((len(attrs), len(labels)), dtype=np.float64)
    np.add.at(blocks, (parsed.src, parsed.dst), parsed.weight)
    used = np.flatnonzero(blocks.any(axis=1))
    patterns = _with_transitions(patterns)
    info = {"converted_from": {"format": "CRFsuite", "version": parsed.version, "path": name}}
    builder = ModelBuilder(labels=labels, patterns=patterns,
                           n_token_columns=_columns(patterns), source=name, info=info)
    builder.add_strings([attrs[a] for a in used.tolist()], [blocks[a] for a in used],
                        [None] * len(used), what="CRFsuite attribute")
    if parsed.has_transitions:
        builder.transitions = parsed.transitions
    return builder.build()


def _with_transitions(patterns: list[Pattern]) -> list[Pattern]:
    """The patterns, with a constant bigram ``B`` appended if none owns transitions."""
    if any(p.is_constant and p.has_bigram for p in patterns):
        return list(patterns)
    line = max((p.line for p in patterns), default=0) + 1
    return list(patterns) + [parse_pattern_line("B", lineno=line)]


def _columns(patterns: list[Pattern]) -> int:
    return max((c.column for p in patterns for c in p.commands), default=0) + 1


def _features(data: bytes, offset: int, fail) -> np.ndarray:
    if offset + 12 > len(data) or data[offset:offset + 4] != b"FEAT":
        raise fail("CRFsuite feature table not found (inconsistent model)")
    chunk_size, count = struct.unpack_from("<II", data, offset + 4)
    if chunk_size != 12 + _FEATURE.itemsize * count or offset + chunk_size > len(data):
        raise fail("CRFsuite feature table size does not match its count")
    return np.frombuffer(data, dtype=_FEATURE, count=count, offset=offset + 12)


def _cqdb(data: bytes, offset: int, count: int, encoding: str, fail, what: str) -> list[str]:
    """Strings 0..count-1 of the CQDB at ``offset``, through its id -> record table."""
    if offset + _CQDB.size > len(data):
        raise fail(f"truncated CRFsuite model (the {what} database)")
    magic, size, _flag, order, bwd_size, bwd_offset = _CQDB.unpack_from(data, offset)
    if magic != b"CQDB" or order != _CQDB_BYTEORDER or offset + size > len(data):
        raise fail(f"CRFsuite {what} database is damaged")
    if bwd_offset == 0 or bwd_size < count or bwd_offset + 4 * count > size:
        raise fail(f"CRFsuite {what} database has no id -> string table")
    chunk = data[offset:offset + size]
    records = np.frombuffer(chunk, dtype="<u4", count=count, offset=bwd_offset)
    out = []
    for i, at in enumerate(records.tolist()):
        if at < _CQDB.size or at + 8 > size:
            raise fail(f"CRFsuite {what} {i} is missing")
        rid, n = struct.unpack_from("<II", chunk, at)
        raw = chunk[at + 8:at + 8 + n]
        if rid != i or n == 0 or len(raw) != n or raw[-1:] != b"\0":
            raise fail(f"CRFsuite {what} {i} is damaged")
        try:
            out.append(raw[:-1].decode(encoding))
        except UnicodeDecodeError:
            raise fail(f"CRFsuite {what} {i} is not {encoding} (give the model's encoding "
                       "with --encoding)") from None
    return out
