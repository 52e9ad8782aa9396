"""CRF++ model files (``crf_learn`` 0.5x), binary and text (``-t``), read as crfkit models.

Both forms hold the same things: a version, the cost factor, ``maxid``
(the weight count), ``xsize`` (token columns), the labels, the templates,
each feature string's offset in the weight vector, and the weights. A
``U`` string owns L weights (``alpha[id + label]``), a ``B`` string L x L
(``alpha[id + previous * L + label]``); the bare ``B`` template's string
``B`` is the label-transition block.

The binary file (little-endian)::

    uint32 version | int32 type | float64 cost factor | uint32 maxid | uint32 xsize
    uint32 trie bytes | uint32 n, n bytes: labels, NUL-terminated
    uint32 n, n bytes: templates, NUL-terminated
    the double-array trie (units of int32 base, uint32 check)
    float32 weights[maxid]                      (and nothing after them)

The trie maps each feature string to its offset: from a node whose base
is ``b``, byte ``c`` leads to unit ``b + c + 1`` if that unit's check is
``b``; a key ends at unit ``b`` (check ``b``, base ``-offset - 1``). Every
key is recovered without searching: each used unit names its parent's
base in its check, so keys are rebuilt from the leaves up, one trie level
per numpy step.

``crf_test`` scores a token as ``cost_factor * sum(weights)``; the
conversion multiplies the weights by the cost factor, so scores,
probabilities and best paths are the tool's own.
"""

from __future__ import annotations

import struct

import numpy as np

from crfkit.errors import ModelFormatError
from crfkit.features.patterns import Pattern, parse_pattern_line
from crfkit.foreign.build import ModelBuilder
from crfkit.model.model import Model

_HEAD = struct.Struct("<IidIIII")  # version, type, cost factor, maxid, xsize, trie size, n
_UNIT = np.dtype([("base", "<i4"), ("check", "<u4")])
_MAX_DEPTH = 1 << 16


def looks_binary(head: bytes) -> bool:
    """A CRF++ binary model: a small version number, type 0, a positive cost factor.

    Any version is recognised here, so that an unknown one is named as such.
    """
    if len(head) < _HEAD.size:
        return False
    version, kind, cost, maxid, xsize, *_ = _HEAD.unpack_from(head)
    return 0 < version < 10_000 and kind == 0 and 0.0 < cost < 1e10 and maxid > 0 \
        and 0 < xsize < 100_000


def looks_text(head: bytes) -> bool:
    return head.startswith(b"version: ")


def read_binary(data: bytes, name: str, *, encoding: str = "utf-8") -> Model:
    """A crfkit model from the bytes of a CRF++ binary model file."""
    fail = _failer(name)
    if len(data) < _HEAD.size:
        raise fail("truncated CRF++ model (shorter than its header)")
    version, _kind, cost, maxid, xsize, dsize, n_labels_bytes = _HEAD.unpack_from(data)
    _check_version(version, fail)
    pos = _HEAD.size
    labels_raw, pos = _take(data, pos, n_labels_bytes, fail, "labels")
    if pos + 4 > len(data):
        raise fail("truncated CRF++ model (in the templates)")
    (n_templates_bytes,) = struct.unpack_from("<I", data, pos)
    templates_raw, pos = _take(data, pos + 4, n_templates_bytes, fail, "templates")
    if dsize % _UNIT.itemsize:
        raise fail(f"CRF++ trie size {dsize} is not a whole number of units")
    trie_raw, pos = _take(data, pos, dsize, fail, "feature trie")
    alpha_raw, pos = _take(data, pos, 4 * maxid, fail, "weights")
    if pos != len(data):
        raise fail(f"CRF++ model has {len(data) - pos} bytes after its weights "
                   "(inconsistent sizes)")
    labels = _strings(labels_raw, encoding, fail, "labels")
    templates = _strings(templates_raw, encoding, fail, "templates")
    keys, offsets = trie_keys(np.frombuffer(trie_raw, dtype=_UNIT), fail)
    strings = _decode_all(keys, encoding, fail)
    alpha = np.frombuffer(alpha_raw, dtype="<f4").astype(np.float64)
    return _build(labels, templates, strings, offsets, alpha, cost, xsize, name, fail,
                  {"format": "CRF++ binary", "version": version})


def read_text(data: bytes, name: str, *, encoding: str = "utf-8") -> Model:
    """A crfkit model from a CRF++ text model (``crf_learn -t`` writes MODEL.txt)."""
    fail = _failer(name)
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as err:
        raise fail(f"cannot decode the CRF++ model as {encoding} at byte {err.start} "
                   "(give its encoding with --encoding)") from None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    sections, pos = [], 0
    for _ in range(4):  # header, labels, templates, feature strings: each ends at a blank
        try:
            end = lines.index("", pos)
        except ValueError:
            raise fail("truncated CRF++ text model (a section is not closed by a blank "
                       "line)") from None
        sections.append(lines[pos:end])
        pos = end + 1
    header = {}
    for line in sections[0]:
        key, _, value = line.partition(":")
        header[key.strip()] = value.strip()
    try:
        version, maxid, xsize = (int(header[k]) for k in ("version", "maxid", "xsize"))
        cost = float(header.get("cost-factor", "1"))
    except (KeyError, ValueError):
        raise fail("CRF++ text model header lacks version, maxid or xsize") from None
    _check_version(version, fail)
    strings, offsets = [], []
    for k, line in enumerate(sections[3]):
        number, _, feature = line.partition(" ")
        if not number.isdigit() or not feature:
            raise fail(f"bad feature line {pos - len(sections[3]) + k:d} in CRF++ text model: "
                       f"{line[:60]!r}")
        strings.append(feature)
        offsets.append(int(number))
    weights = lines[pos:]
    if len(weights) != maxid:
        raise fail(f"CRF++ text model has {len(weights)} weights, its header says {maxid}")
    try:
        alpha = np.array(weights, dtype=np.float64)
    except ValueError:
        raise fail("CRF++ text model has a weight that is not a number") from None
    return _build(sections[1], sections[2], strings, np.array(offsets, dtype=np.int64), alpha,
                  cost, xsize, name, fail, {"format": "CRF++ text", "version": version})


def _build(labels: list[str], templates: list[str], strings: list[str], offsets: np.ndarray,
           alpha: np.ndarray, cost: float, xsize: int, name: str, fail, note: dict) -> Model:
    if not labels or len(set(labels)) != len(labels):
        raise fail("CRF++ model labels are missing or repeated")
    if xsize < 1:
        raise fail(f"CRF++ model has xsize {xsize} (at least 1 needed)")
    if not np.isfinite(cost) or cost <= 0:
        raise fail(f"CRF++ model has cost factor {cost}")
    patterns = [_template(t, i, fail) for i, t in enumerate(templates, start=1)]
    if not patterns:
        raise fail("CRF++ model has no templates")
    L = len(labels)
    alpha = alpha * cost
    sizes = np.array([L if s[:1] == "U" else L * L for s in strings], dtype=np.int64)
    bad = np.flatnonzero((offsets < 0) | (offsets + sizes > len(alpha))
                         | ~np.isin([s[:1] for s in strings], ["U", "B"]))
    if len(bad):
        raise fail(f"CRF++ feature {strings[bad[0]]!r} has offset {offsets[bad[0]]} outside "
                   f"the {len(alpha)} weights (inconsistent model)")
    uni = [alpha[o:o + L] if s[:1] == "U" else None
           for s, o in zip(strings, offsets.tolist(), strict=True)]
    bi = [None if s[:1] == "U" else alpha[o:o + L * L]
          for s, o in zip(strings, offsets.tolist(), strict=True)]
    info = {"converted_from": dict(note, cost_factor=cost, path=name)}
    builder = ModelBuilder(labels=labels, patterns=patterns, n_token_columns=xsize,
                           source=name, info=info)
    builder.add_strings(strings, uni, bi, what="CRF++ feature")
    return builder.build()


def _template(text: str, number: int, fail) -> Pattern:
    if text[:1] not in ("U", "B"):
        raise fail(f"CRF++ template {number} {text!r} is neither U nor B")
    try:
        return parse_pattern_line(text, lineno=number)
    except Exception as err:  # noqa: BLE001 - any parse failure: crfkit cannot express it
        raise fail(f"CRF++ template {text!r} cannot be read as a crfkit pattern: "
                   f"{getattr(err, 'message', err)}") from None


def trie_keys(units: np.ndarray, fail) -> tuple[list[bytes], np.ndarray]:
    """Every key of a Darts double-array trie and its value, rebuilt leaf to root."""
    base = units["base"].astype(np.int64)
    check = units["check"].astype(np.int64)
    n = len(units)
    if n == 0:
        raise fail("CRF++ feature trie is empty")
    index = np.arange(n, dtype=np.int64)
    used = (check > 0) & (check < n)
    used[0] = False
    code = index - check
    leaf = used & (code == 0)
    edge = used & (code > 0) & (code <= 256)
    # node_of[b]: the unit whose children start at base b (the root is unit 0)
    node_of = np.full(n + 258, -1, dtype=np.int64)
    inner = np.flatnonzero(edge & (base > 0) & (base < n))
    node_of[base[inner]] = inner
    if not 0 < base[0] < n:
        raise fail("CRF++ feature trie has a bad root")
    node_of[base[0]] = 0
    terminals = np.flatnonzero(leaf)
    values = -base[terminals] - 1
    cur = node_of[check[terminals]]
    levels = []
    while True:
        if (cur < 0).any():
            raise fail("CRF++ feature trie is inconsistent (a unit has no parent)")
        active = cur != 0
        if not active.any():
            break
        if len(levels) >= _MAX_DEPTH:
            raise fail("CRF++ feature trie is inconsistent (a cycle)")
        safe = np.where(active, cur, 0)
        levels.append(np.where(active, code[safe] - 1, -1))
        cur = np.where(active, node_of[np.where(active, check[safe], 0)], 0)
    if not levels:
        return [b""] * len(terminals), values
    chars = np.stack(levels[::-1], axis=1)
    present = chars >= 0
    flat = chars[present].astype(np.uint8).tobytes()
    ends = np.cumsum(present.sum(axis=1)).tolist()
    starts = [0] + ends[:-1]
    return [flat[a:b] for a, b in zip(starts, ends, strict=True)], values


def _decode_all(keys: list[bytes], encoding: str, fail) -> list[str]:
    try:
        return [k.decode(encoding) for k in keys]
    except UnicodeDecodeError:
        raise fail(f"a CRF++ feature string is not {encoding} (give the model's encoding "
                   "with --encoding)") from None


def _strings(raw: bytes, encoding: str, fail, what: str) -> list[str]:
    """NUL-terminated strings; empty ones are skipped (CRF++ pads its template block)."""
    try:
        return [s.decode(encoding) for s in raw.split(b"\0") if s]
    except UnicodeDecodeError:
        raise fail(f"CRF++ model {what} are not {encoding} (give the model's encoding "
                   "with --encoding)") from None


def _take(data: bytes, pos: int, size: int, fail, what: str) -> tuple[bytes, int]:
    if pos + size > len(data):
        raise fail(f"truncated CRF++ model (in the {what}: {pos + size - len(data)} bytes "
                   "missing)")
    return data[pos:pos + size], pos + size


def _check_version(version: int, fail) -> None:
    if version // 100 != 1:
        raise fail(f"unknown CRF++ model version {version} (this crfkit reads version 1xx)")


def _failer(name: str):
    def fail(message: str) -> ModelFormatError:
        return ModelFormatError(message, path=name)
    return fail
