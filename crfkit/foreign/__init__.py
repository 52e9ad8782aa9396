"""Models of other tools (CRF++, Wapiti, CRFsuite) read as crfkit models.

Each reader turns the foreign file into crfkit's own :class:`~crfkit.model.model.Model`
(the foreign tool's patterns, labels in its order, weights scaled as it
scores them), so ``crfkit label`` gives the labels the tool gives, and
``crfkit convert`` saves the result as a crfkit model file. The format is
recognised from the file's first bytes, never from its name; a damaged,
truncated or unknown-version file is one :class:`ModelFormatError`.
"""

from __future__ import annotations

import gzip
import os
import zlib

from crfkit.errors import InputError, ModelFormatError, UsageError
from crfkit.model.model import Model

FORMATS = ("crfpp", "wapiti", "crfsuite")
FORMAT_NAMES = {"crfkit": "crfkit", "crfpp": "CRF++", "wapiti": "Wapiti",
                "crfsuite": "CRFsuite"}


def detect(data: bytes) -> str | None:
    """``crfkit``, ``crfpp``, ``wapiti`` or ``crfsuite`` from a file's first bytes, else None."""
    from crfkit.foreign import crfpp, crfsuite, wapiti
    from crfkit.io.fileformat import MAGIC

    if data.startswith(MAGIC):
        return "crfkit"
    if crfsuite.looks_like(data):
        return "crfsuite"
    if wapiti.looks_like(data):
        return "wapiti"
    if crfpp.looks_text(data) or crfpp.looks_binary(data):
        return "crfpp"
    return None


def read_model(path: str | os.PathLike, *, fmt: str = "auto", patterns: str | None = None,
               encoding: str = "utf-8", foreign_only: bool = False) -> Model:
    """Any model crfkit reads: its own, or a CRF++ / Wapiti / CRFsuite file converted.

    ``fmt`` is ``auto`` (recognise by content) or one of :data:`FORMATS`;
    ``patterns`` names the pattern file that generates a CRFsuite model's
    attributes (needed for CRFsuite, refused for the others); ``encoding``
    is the foreign file's text encoding, recorded as the model's.
    ``foreign_only`` (``crfkit convert``): an unrecognised file is told as not
    one of the three foreign formats, the ones the caller expects.
    """
    name = os.fspath(path)
    if fmt != "auto" and fmt not in FORMATS:
        raise UsageError(f"unknown model format {fmt!r} (known: auto, {', '.join(FORMATS)})")
    data = read_bytes(name)
    found = detect(data)
    if found is None and fmt == "auto" and foreign_only:
        raise ModelFormatError("not a CRF++, Wapiti or CRFsuite model (the formats convert "
                               "reads)", path=name)
    if found is None and fmt == "auto":
        try:  # a damaged crfkit model is told as such (checksum, truncation, magic)
            return Model.from_bytes(data, name=name)
        except ModelFormatError as err:
            raise ModelFormatError(f"{err.message}, nor a CRF++, Wapiti or CRFsuite model",
                                   path=name) from None
    if found is None:
        raise ModelFormatError(f"not a {FORMAT_NAMES[fmt]} model", path=name)
    if fmt != "auto" and found != fmt:
        raise ModelFormatError(f"not a {FORMAT_NAMES[fmt]} model (it looks like a "
                               f"{FORMAT_NAMES[found]} model)", path=name)
    if patterns is not None and found != "crfsuite":
        raise UsageError(f"--patterns is for CRFsuite models only; {name} is a "
                         f"{FORMAT_NAMES[found]} model, which names its own patterns")
    if found == "crfkit":
        return Model.from_bytes(data, name=name)
    model = _convert(found, data, name, patterns, encoding)
    model.info.setdefault("encoding", encoding)
    return model


def _convert(found: str, data: bytes, name: str, patterns: str | None,
             encoding: str) -> Model:
    from crfkit.foreign import crfpp, crfsuite, wapiti

    if found == "crfsuite":
        from crfkit.features.patterns import read_patterns

        pats = read_patterns(patterns, encoding=encoding) if patterns is not None else None
        return crfsuite.read(data, name, pats, encoding=encoding)
    if found == "wapiti":
        return wapiti.read(data, name, encoding=encoding)
    if crfpp.looks_text(data):
        return crfpp.read_text(data, name, encoding=encoding)
    return crfpp.read_binary(data, name, encoding=encoding)


def read_bytes(name: str) -> bytes:
    """The file's bytes, gunzipped if it is gzip (a CRF++ text model is often kept so)."""
    try:
        with open(name, "rb") as handle:
            data = handle.read()
    except OSError as err:
        raise InputError(f"cannot read model file: {err.strerror}", path=name) from None
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as err:
            raise ModelFormatError(f"damaged gzip file: {err}", path=name) from None
    return data
