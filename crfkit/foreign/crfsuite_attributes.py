"""CRFsuite model files read as crfkit attribute models (no pattern file needed).

python-crfsuite and sklearn-crfsuite write CRFsuite's binary format with the
attribute strings the user's feature code made; an attribute model
(:class:`crfkit.attributes.attribute_model.AttributeModel`) is keyed by the same strings, so
it takes the file as it is: ``CRF(model_filename=...)``, ``Tagger.open`` and
``crfkit label --format crfsuite`` read such files beside crfkit's own.
"""

from __future__ import annotations

import os

import numpy as np

from crfkit.attributes.attribute_model import AttributeModel, model_from_features
from crfkit.errors import ModelFormatError
from crfkit.foreign import crfsuite, read_bytes
from crfkit.io.fileformat import MAGIC


def attribute_model(data: bytes, name: str, *, encoding: str = "utf-8") -> AttributeModel:
    """The attribute model of a CRFsuite model file's bytes (weights unchanged)."""
    parsed = crfsuite.parse(data, name, encoding=encoding)
    L = len(parsed.labels)
    pairs = parsed.src * L + parsed.dst
    unique, where = np.unique(pairs, return_inverse=True)
    if len(unique) != len(pairs):  # CRFsuite writes each pair once; add up any repeat
        weight = np.bincount(where, weights=parsed.weight, minlength=len(unique))
    else:
        weight = parsed.weight[np.argsort(pairs, kind="stable")]
    info = {"converted_from": {"format": "CRFsuite", "version": parsed.version, "path": name}}
    return model_from_features(parsed.labels, parsed.attributes, unique // L, unique % L,
                               weight, parsed.transitions, "crf", info)


def load_attribute_model(path: str | os.PathLike) -> AttributeModel:
    """A crfkit attribute model file, or a CRFsuite model file (recognised by content)."""
    name = os.fspath(path)
    data = read_bytes(name)
    if crfsuite.looks_like(data):
        return attribute_model(data, name)
    if not data.startswith(MAGIC):
        raise ModelFormatError("neither a crfkit attribute model nor a CRFsuite model",
                               path=name)
    return AttributeModel.from_bytes(data, name=name)
