"""Wapiti model files (Wapiti 1.x, ``wapiti train``), read as crfkit models.

A Wapiti model is text::

    #mdl#TYPE#NACT                 TYPE 0 maxent, 1 memm, 2 crf (older files: #mdl#NACT)
    #rdr#NPATS/NTOKS/AUTOUNI       NTOKS: the largest column a pattern reads
    NPATS patterns                 each as a netstring: LEN:TEXT,
    #qrk#Y     Y labels            (netstrings, in label-id order)
    #qrk#O     O observations      (netstrings: "u00:Confidence", "b", ...)
    NACT lines  INDEX=HEXFLOAT     the non-zero weights

Observation ``o`` of kind ``u`` owns weights ``uoff[o] + y``, of kind
``b`` owns ``boff[o] + y' * Y + y``, and ``*`` both, laid out in
observation order (``u`` block first). The observation string is the
pattern line with its commands replaced, as in crfkit, so patterns carry
over; what differs is mapped or refused:

* padding: Wapiti spells positions outside the sequence ``_x-1`` ...
  ``_x-4`` then ``_x-#`` (``_x+1`` ... after); crfkit spells them
  ``_B-1``, ``_B-2``, ... so each such value becomes the crfkit padding it
  stands for (and the token of that spelling, should one exist);
* ``%X`` lower-cases ASCII letters only, crfkit's case-folds: values are
  case-folded (two values that fold alike keep the first one's weights);
* ``%t``/``%T``/``%m``/``%M`` use the ``wapiti`` regex mode
  (:mod:`crfkit.features.wmatch`: Wapiti's matcher bug for bug, its regexes
  run on its padding tokens), recorded in the converted model;
* refused with one line: raw-feature models (no patterns).

Wapiti decodes a ``maxent`` model with the same Viterbi as a CRF, using
every weight; a maxent file with non-zero label-pair weights therefore
becomes a crfkit ``crf`` model (without them the two agree).
"""

from __future__ import annotations

import re

import numpy as np

from crfkit.errors import ModelFormatError
from crfkit.features.patterns import Pattern, padding_value, parse_pattern_line, with_regex_mode
from crfkit.foreign.build import ModelBuilder
from crfkit.model.model import Model

TYPES = {0: "maxent", 1: "memm", 2: "crf"}
_PAD = re.compile(r"_x([-+])([1-4#])\Z")
_LAST_NAMED = 4  # _x-1 .. _x-4 are spelt out, farther ones are _x-#


def looks_like(head: bytes) -> bool:
    return head.startswith(b"#mdl#")


class _Cursor:
    """Reads Wapiti's line and netstring records from the bytes of a model file."""

    def __init__(self, data: bytes, name: str) -> None:
        self.data, self.pos, self.name = data, 0, name

    def fail(self, message: str) -> ModelFormatError:
        line = self.data.count(b"\n", 0, min(self.pos, len(self.data))) + 1
        return ModelFormatError(message, path=self.name, line=line)

    def line(self) -> bytes:
        end = self.data.find(b"\n", self.pos)
        if end < 0:
            if self.pos >= len(self.data):
                raise self.fail("truncated Wapiti model (ends early)")
            end = len(self.data)
        out = self.data[self.pos:end]
        self.pos = end + 1
        return out

    def netstring(self, encoding: str) -> str:
        colon = self.data.find(b":", self.pos, self.pos + 12)
        if colon < 0 or not self.data[self.pos:colon].isdigit():
            raise self.fail("bad Wapiti model: expected a LENGTH:TEXT, record")
        size = int(self.data[self.pos:colon])
        end = colon + 1 + size
        if end + 1 > len(self.data):
            raise self.fail("truncated Wapiti model (inside a string)")
        if self.data[end:end + 1] != b",":
            raise self.fail("bad Wapiti model: a string record does not end with ','")
        raw = self.data[colon + 1:end]
        self.pos = end + 2  # the comma and the newline after it
        try:
            return raw.decode(encoding)
        except UnicodeDecodeError:
            raise self.fail(f"a Wapiti model string is not {encoding} (give the model's "
                            "encoding with --encoding)") from None

    def quarks(self, what: str, encoding: str) -> list[str]:
        head = self.line()
        m = re.fullmatch(rb"#qrk#(\d+)", head)
        if m is None:
            raise self.fail(f"bad Wapiti model: expected the {what} list (#qrk#COUNT)")
        return [self.netstring(encoding) for _ in range(int(m.group(1)))]


def read(data: bytes, name: str, *, encoding: str = "utf-8") -> Model:
    """A crfkit model from the bytes of a Wapiti model file."""
    cur = _Cursor(data, name)
    first = cur.line()
    m = re.fullmatch(rb"#mdl#(\d+)#(\d+)", first) or re.fullmatch(rb"#mdl#(\d+)", first)
    if m is None:
        raise cur.fail("not a Wapiti model (no #mdl# line)")
    kind = int(m.group(1)) if m.lastindex == 2 else 0
    n_active = int(m.group(m.lastindex))
    if kind not in TYPES:
        raise cur.fail(f"unknown Wapiti model type {kind} (known: 0 maxent, 1 memm, 2 crf)")
    m = re.fullmatch(rb"#rdr#(\d+)/(\d+)(?:/(-?\d+))?", cur.line())
    if m is None:
        raise cur.fail("bad Wapiti model: expected the reader line (#rdr#...)")
    n_patterns, ntoks = int(m.group(1)), int(m.group(2))
    if n_patterns == 0:
        raise cur.fail("Wapiti model without patterns (raw features): crfkit cannot "
                       "generate its observations")
    sources = [cur.netstring(encoding) for _ in range(n_patterns)]
    labels = cur.quarks("label", encoding)
    observations = cur.quarks("observation", encoding)
    theta_index, theta_value = _weights(cur, n_active)
    if not labels or len(set(labels)) != len(labels):
        raise cur.fail("Wapiti model labels are missing or repeated")
    patterns = [_pattern(s, i, cur) for i, s in enumerate(sources, start=1)]
    return _build(patterns, labels, observations, theta_index, theta_value, kind, ntoks,
                  name, cur)


def _weights(cur: _Cursor, n_active: int) -> tuple[np.ndarray, np.ndarray]:
    if n_active > cur.data.count(b"\n", cur.pos) + 1:
        raise cur.fail(f"truncated Wapiti model (fewer than the {n_active} weights it "
                       "announces)")
    index = np.zeros(n_active, dtype=np.int64)
    value = np.zeros(n_active, dtype=np.float64)
    for k in range(n_active):
        line = cur.line()
        left, sep, right = line.partition(b"=")
        try:
            if not sep:
                raise ValueError
            index[k] = int(left)
            value[k] = float.fromhex(right.decode("ascii").strip())
        except (ValueError, UnicodeDecodeError):
            raise cur.fail(f"bad Wapiti weight line {line[:40]!r}") from None
    return index, value


def _pattern(source: str, number: int, cur: _Cursor) -> Pattern:
    """The crfkit pattern whose observation values are Wapiti's (see the module notes)."""
    try:
        pattern = parse_pattern_line(source, lineno=number)
    except Exception as err:  # noqa: BLE001 - any parse failure: crfkit cannot express it
        raise cur.fail(f"Wapiti pattern {source!r} cannot be read as a crfkit pattern: "
                       f"{getattr(err, 'message', err)}") from None
    return with_regex_mode([pattern], "wapiti")[0]


def _build(patterns: list[Pattern], labels: list[str], observations: list[str],
           theta_index: np.ndarray, theta_value: np.ndarray, kind: int, ntoks: int,
           name: str, cur: _Cursor) -> Model:
    L = len(labels)
    heads = [o[:1] for o in observations]
    sizes = np.array([(L if h in ("u", "*") else 0) + (L * L if h in ("b", "*") else 0)
                      for h in heads], dtype=np.int64)
    offsets = np.zeros(len(sizes) + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    n_features = int(offsets[-1])
    if len(theta_index) and (theta_index.min() < 0 or theta_index.max() >= n_features):
        raise cur.fail(f"Wapiti weight index out of range (the model has {n_features} "
                       "features)")
    order = np.argsort(theta_index, kind="stable")
    theta_index, theta_value = theta_index[order], theta_value[order]
    owner_of = np.searchsorted(offsets, theta_index, side="right") - 1
    owners, first = np.unique(owner_of, return_index=True)
    bounds = np.append(first, len(owner_of))
    strings, uni, bi = [], [], []
    for k, o in enumerate(owners.tolist()):
        start, head = int(offsets[o]), heads[o]
        block = np.zeros(int(sizes[o]), dtype=np.float64)  # only this observation's weights
        block[theta_index[bounds[k]:bounds[k + 1]] - start] = theta_value[bounds[k]:bounds[k + 1]]
        u = block[:L] if head in ("u", "*") else None
        b_start = L if head == "*" else 0
        b = block[b_start:b_start + L * L] if head in ("b", "*") else None
        strings.append(observations[o])
        uni.append(u)
        bi.append(b)
    model_type = TYPES[kind]
    if model_type == "maxent" and any(b is not None and b.any() for b in bi):
        model_type = "crf"  # Wapiti's decoder uses them: so must we
    elif model_type == "maxent":
        bi = [None] * len(bi)
    info = {"converted_from": {"format": "Wapiti", "type": TYPES[kind], "path": name}}
    builder = ModelBuilder(labels=labels, patterns=patterns, n_token_columns=ntoks + 1,
                           source=name, model_type=model_type, info=info)
    builder.add_strings(strings, uni, bi, _value_map(patterns), what="Wapiti observation")
    return builder.build()


def _value_map(patterns: list[Pattern]):
    """Wapiti's spelling of a command value -> crfkit's spellings, the likelier first."""
    def spellings(p: int, j: int, value: str) -> list[str]:
        command = patterns[p].commands[j]
        if command.letter == "X":
            value = value.casefold()
        if command.letter not in "xX":
            return [value]
        m = _PAD.match(value)
        if m is None:
            return [value]
        sign = -1 if m.group(1) == "-" else 1
        reach = abs(command.offset)
        if m.group(2) == "#":
            distances = list(range(_LAST_NAMED + 1, reach + 1))
        else:
            distances = [int(m.group(2))] if int(m.group(2)) <= reach else []
        if not command.absolute and sign * command.offset < 0:
            distances = []  # a command looking back never reaches the padding after the end
        return [padding_value(sign * d) for d in distances] + [value]
    return spellings
