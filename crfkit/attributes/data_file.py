"""CRFsuite's data format (``--format crfsuite``): train and label its feature files as is.

One token per line, a blank line after each sequence::

    LABEL<TAB>ATTRIBUTE[:VALUE]<TAB>ATTRIBUTE[:VALUE]...

The first unescaped ``:`` of a field separates the attribute from its value
(a number; 1 when absent); ``\\:`` is a colon and ``\\\\`` a backslash inside
the name. The label field is read in labelling too (it is the gold label
that ``crfkit label --format crfsuite`` writes next to its prediction); it may be a
partial label, ``?`` or ``A|B`` (:mod:`crfkit.io.label_sets`), which labelling keeps
as the gold label (``crfkit eval`` leaves it out) and training sums over the labels it
allows (:mod:`crfkit.attributes.label_sets`). Errors
name the file, line and column. The same attributes given to
:class:`crfkit.sklearn.CRF` as ``{name: value}`` dicts give the same model:
both paths go through :class:`crfkit.attributes.encoder.AttributeEncoder`.
"""

from __future__ import annotations

import io
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import numpy as np

from crfkit.errors import InputError
from crfkit.io.label_sets import is_partial, members


@dataclass
class Sequence:
    """One sequence: its gold labels, each token's ``(name, value)`` pairs, its first line."""

    labels: list[str]
    tokens: list[list[tuple[str, float]]]
    line: int


def parse_field(field: str, path: str, line: int, column: int) -> tuple[str, float]:
    """``name[:value]`` with CRFsuite's escapes, as ``(name, value)``."""
    if "\\" not in field:
        name, colon, value = field.partition(":")
    else:
        chars, i, colon, value = [], 0, "", ""
        while i < len(field):
            c = field[i]
            if c == "\\" and i + 1 < len(field) and field[i + 1] in ":\\":
                chars.append(field[i + 1])
                i += 2
                continue
            if c == ":":
                colon, value = ":", field[i + 1:]
                break
            chars.append(c)
            i += 1
        name = "".join(chars)
    if not colon:
        return name, 1.0
    try:
        number = float(value)
    except ValueError:
        number = float("nan")
    if not np.isfinite(number):
        at = column + len(field) - len(value)
        raise InputError(f"attribute {name!r} has value {value!r}: expected a finite number",
                         path=path, line=line, column=at)
    return name, number


def format_field(name: str, value: float) -> str:
    """The field of one attribute (escaped; ``:value`` unless it is 1), as CRFsuite reads it."""
    name = name.replace("\\", "\\\\").replace(":", "\\:")
    return name if value == 1.0 else f"{name}:{value!r}"


def read_sequences(path: str, *, encoding: str = "utf-8") -> Iterator[Sequence]:
    """The sequences of a CRFsuite data file (``-``: standard input; gzip is read too)."""
    from crfkit.io.reader import canonical_encoding, open_binary

    canonical_encoding(encoding)
    stream, name = open_binary(path)
    text = io.TextIOWrapper(stream, encoding=encoding, newline="")
    try:
        yield from _parse(text, name)
    except UnicodeDecodeError:
        raise InputError(f"not valid {encoding} text (give the file's encoding with "
                         f"--encoding)", path=name) from None
    finally:
        if stream is not sys.stdin.buffer:
            text.close()


def _parse(lines, name: str) -> Iterator[Sequence]:
    labels: list[str] = []
    tokens: list[list[tuple[str, float]]] = []
    first = 0
    for number, raw in enumerate(lines, start=1):
        text = raw.rstrip("\r\n")
        if not text.strip():
            if tokens:
                yield Sequence(labels, tokens, first)
                labels, tokens = [], []
            continue
        fields = text.split("\t")
        if not tokens:
            first = number
        labels.append(_label(fields[0], name, number))
        pairs = []
        column = len(fields[0]) + 2
        for field in fields[1:]:
            if field:
                pairs.append(parse_field(field, name, number, column))
            column += len(field) + 1
        tokens.append(pairs)
    if tokens:
        yield Sequence(labels, tokens, first)


def _label(text: str, path: str, line: int) -> str:
    """The label field as it is; a partial label (``?``, ``A|B``) is checked for its form
    here, so that a bad set is reported at its line."""
    if is_partial(text):
        try:
            members(text)
        except ValueError as err:
            raise InputError(str(err), path=path, line=line, column=1) from None
    return text


def write_sequences(out, sequences) -> None:
    """Write ``(labels, tokens)`` pairs (tokens: lists of ``(name, value)``) in the format."""
    for labels, tokens in sequences:
        for label, pairs in zip(labels, tokens, strict=True):
            out.write("\t".join([label, *(format_field(n, v) for n, v in pairs)]) + "\n")
        out.write("\n")


def encode_file(path: str, vocab: dict[str, int], labels: list[str], *, grow: bool,
                encoding: str = "utf-8"):
    """A CRFsuite data file as a Dataset with gold label ids; ``labels`` grows in first-seen
    order (in labelling, gold labels the model lacks get ids past its own), ``vocab`` only
    with ``grow`` (otherwise unknown attributes are dropped)."""
    return encode_sequences(read_sequences(path, encoding=encoding), vocab, labels, grow=grow,
                            path=path)


def encode_sequences(sequences: Iterable[Sequence], vocab: dict[str, int], labels: list[str],
                     *, grow: bool, path: str = "-", first_lines: list[int] | None = None):
    """:func:`encode_file` of sequences already read (``path``: where they come from;
    ``first_lines``, if given, gets each sequence's line)."""
    from crfkit.attributes.encoder import AttributeEncoder

    encoder = AttributeEncoder(vocab, grow=grow)
    index = {label: i for i, label in enumerate(labels)}
    gold = []
    for seq in sequences:
        encoder.end(encoder.add_pairs(seq.tokens))
        if first_lines is not None:
            first_lines.append(seq.line)
        for label in seq.labels:
            i = index.get(label)
            if i is None:
                i = index[label] = len(labels)
                labels.append(label)
            gold.append(i)
    if not gold:
        raise InputError("no tokens in the data", path="<stdin>" if path == "-" else path)
    return encoder.dataset(np.array(gold, dtype=np.int32))


def train_file(path: str, options, settings, *, encoding: str = "utf-8", progress=None):
    """Train an attribute model on a CRFsuite data file
    (:func:`crfkit.attributes.attribute_model.train`)."""
    model = train_sequences(read_sequences(path, encoding=encoding), options, settings,
                            progress=progress, path=path)
    model.info["train_file"] = "<stdin>" if path == "-" else path
    return model


def train_sequences(sequences: Iterable[Sequence], options, settings, *, progress=None,
                    path: str = "-", labels: list[str] | None = None, on_weights=None):
    """:func:`train_file` of sequences already read (CRFsuite's -g groups). ``labels``: the
    label set and its order to start from (CRFsuite's, read from every group: the order
    decides Viterbi's ties, so the perceptrons' first updates); ``on_weights``: called
    with the model of every iteration's weights."""
    from crfkit.attributes.attribute_model import train

    vocab: dict[str, int] = {}
    labels = list(labels or [])
    lines: list[int] = []
    data = encode_sequences(sequences, vocab, labels, grow=True, path=path, first_lines=lines)
    names = [""] * len(vocab)
    for name, i in vocab.items():
        names[i] = name
    del vocab
    return train(data, labels, names, options, settings, progress=progress,
                 on_weights=on_weights, holdout=on_weights is not None,
                 first_lines=np.array(lines, dtype=np.int64),
                 path="<stdin>" if path == "-" else path)


def labels_in_order(sequences: Iterable[Sequence]) -> list[str]:
    """Every label of the sequences, in first-seen order."""
    return list(dict.fromkeys(label for seq in sequences for label in seq.labels))


def predicted_labels(model, sequences: list[Sequence]) -> list[list[str]]:
    """The model's best labels of each sequence (its gold labels only sized the data)."""
    from crfkit.kernels.decoder import decode

    labels = list(model.labels)
    data = encode_sequences(sequences, model.vocab(), labels, grow=False)
    pred = np.array(labels, dtype=object)[decode(model, data).paths[:, 0]].tolist()
    ptr = data.seq_ptr.tolist()
    return [pred[ptr[s]:ptr[s + 1]] for s in range(len(ptr) - 1)]


def label_file(model, path: str, out, *, labels_only: bool = False,
               encoding: str = "utf-8") -> tuple[int, int]:
    """Write ``GOLD<TAB>PREDICTED`` per token (``PREDICTED`` alone with ``labels_only``), a
    blank line after each sequence, as ``crfsuite tag -r`` does; returns (tokens, correct)."""
    from crfkit.kernels.decoder import decode

    labels = list(model.labels)
    data = encode_file(path, model.vocab(), labels, grow=False, encoding=encoding)
    decoded = decode(model, data)
    pred = decoded.paths[:, 0]
    names = np.array(labels, dtype=object)
    gold_names, pred_names = names[data.labels].tolist(), names[pred].tolist()
    ptr = data.seq_ptr.tolist()
    for s in range(len(ptr) - 1):
        for t in range(ptr[s], ptr[s + 1]):
            out.write(pred_names[t] + "\n" if labels_only
                      else f"{gold_names[t]}\t{pred_names[t]}\n")
        out.write("\n")
    return data.n_tokens, int(np.count_nonzero(pred == data.labels))
