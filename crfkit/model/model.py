"""A trained model: labels, patterns, observation vocabulary, feature space, weights.

The model owns its file. The container (:mod:`crfkit.io.fileformat`) is a JSON
header plus raw numpy arrays with a checksum: loading never runs code, and
every array is checked against the header and against each other before the
kernels may index with it (a bad index in a Numba kernel would crash the
process instead of raising).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np

from crfkit import structures
from crfkit.errors import ModelFormatError
from crfkit.features.extract import Featurizer
from crfkit.features.patterns import Pattern
from crfkit.io import fileformat
from crfkit.io.model_checker import ModelChecker
from crfkit.model.types import MODEL_TYPES
from crfkit.space import FeatureSpace
from crfkit.structures.base import Structure

MODEL_KIND = "crfkit-model"


@dataclass
class Model:
    """Everything needed to label new data, and to print what was learnt."""

    labels: list[str]
    patterns: list[Pattern]
    n_token_columns: int
    featurizer: Featurizer
    space: FeatureSpace
    weights: np.ndarray
    info: dict = field(default_factory=dict)
    model_type: str = "crf"
    # the graph over the labels (not written as such: its save marks the file)
    structure: Structure = field(default_factory=lambda: structures.named("chain"),
                                 compare=False, repr=False)

    @property
    def normalisation(self) -> int:
        """How the model type normalises its scores (``config.NORM_*``): what decoding reads."""
        return MODEL_TYPES[self.model_type].normalisation

    @property
    def encoding(self) -> str:
        """The text encoding of the training data: labelling and dumping default to it."""
        value = self.info.get("encoding")
        return value if isinstance(value, str) else "utf-8"

    # -- file format -------------------------------------------------------------------
    def _arrays_and_meta(self) -> tuple[dict, dict[str, np.ndarray]]:
        s = self.space
        vocab = self.featurizer.vocab
        arrays = {
            "weights": self.weights,
            "u_ptr": s.u_ptr, "u_lab": s.u_lab,
            "b_ptr": s.b_ptr, "b_prev": s.b_prev, "b_cur": s.b_cur,
            "obs_keys": vocab.keys, "obs_pattern": vocab.pattern, "obs_values": vocab.values,
        }
        for i, table in enumerate(self.featurizer.tables):
            blob, offsets = fileformat.pack_strings(table.strings)
            arrays[f"table{i}_blob"] = blob
            arrays[f"table{i}_offsets"] = offsets
        meta = {
            "kind": MODEL_KIND,
            "type": self.model_type,
            "labels": self.labels,
            "patterns": [_pattern_entry(p) for p in self.patterns],
            "n_token_columns": self.n_token_columns,
            "has_trans": bool(s.has_trans),
            "info": self.info,
        }
        self.structure.save(s, meta, arrays)  # after the chain's: files stay as they were
        return meta, arrays

    def to_bytes(self) -> bytes:
        meta, arrays = self._arrays_and_meta()
        return fileformat.dumps(meta, arrays)

    def save(self, path: str | os.PathLike) -> None:
        """Write atomically: a crash leaves any previous file untouched."""
        meta, arrays = self._arrays_and_meta()
        fileformat.write_file(path, meta, arrays)

    @classmethod
    def load(cls, path: str | os.PathLike) -> Model:
        meta, arrays = fileformat.read_file(path)
        return cls._from_parts(meta, arrays, os.fspath(path))

    @classmethod
    def from_bytes(cls, data: bytes, name: str = "<bytes>") -> Model:
        meta, arrays = fileformat.loads(data, name=name)
        return cls._from_parts(meta, arrays, name)

    def __reduce__(self):
        # Pickle through our own byte format, never through internals.
        return (Model.from_bytes, (self.to_bytes(),))

    @classmethod
    def _from_parts(cls, meta: dict, arrays: dict[str, np.ndarray], name: str) -> Model:
        check = ModelChecker(name, meta, arrays)
        if meta.get("kind") != MODEL_KIND:
            what = ("an attribute model, made by --format crfsuite or crfkit.sklearn: label "
                    "it with --format crfsuite"
                    if meta.get("kind") == "crfkit-attribute-model" else
                    "the container holds something else")
            raise ModelFormatError(f"not a crfkit model ({what})", path=name)
        labels = check.labels()
        patterns = check.patterns()
        n_columns = check.value("n_token_columns", int)
        if n_columns < 1:
            raise ModelFormatError(f"model has {n_columns} token columns (at least 1 needed)",
                                   path=name)
        has_trans = check.value("has_trans", bool)
        if has_trans and not any(p.is_constant and p.has_bigram for p in patterns):
            raise ModelFormatError("model has a transition block but no constant bigram "
                                   "pattern (b, B or *) to own it", path=name)
        model_type = meta.get("type", "crf")
        if not isinstance(model_type, str) or model_type not in MODEL_TYPES:
            raise ModelFormatError(f"unknown model type {model_type!r} (this crfkit knows "
                                   f"{', '.join(MODEL_TYPES)})", path=name)
        info = meta.get("info", {})
        if not isinstance(info, dict):
            raise ModelFormatError("bad info section in model", path=name)
        for p in patterns:
            for c in p.commands + ((p.value,) if p.value else ()):
                if not 0 <= c.column < n_columns:
                    raise ModelFormatError("pattern column out of range in model", path=name)
        featurizer = check.featurizer(patterns)
        space = check.space(len(featurizer.vocab), len(labels), has_trans)
        structure = structures.of_model(meta)
        space = structure.load(check, space, patterns, model_type, info)
        if not MODEL_TYPES[model_type].label_pairs and (has_trans or space.n_b):
            raise ModelFormatError(f"a {model_type} model cannot have label-pair features",
                                   path=name)
        weights = check.array("weights", np.float64, 1, length=space.n_weights)
        if not np.isfinite(weights).all():
            raise ModelFormatError("model weights are not finite", path=name)
        return cls(labels=labels, patterns=patterns, n_token_columns=n_columns,
                   featurizer=featurizer, space=space, weights=weights, info=info,
                   model_type=model_type, structure=structure)


def _pattern_entry(pattern: Pattern) -> dict:
    """A pattern as the model file keeps it; the regex mode only when not the default,
    so models of the default mode stay as they were."""
    entry: dict = {"text": pattern.text, "line": pattern.line}
    if pattern.regex_mode != "crfkit":
        entry["regex"] = pattern.regex_mode
    return entry


def compact(model: Model) -> Model:
    """The same model without its zero-weight features and the observations left with none.

    An L1-trained model has mostly zero weights; they change no score, so
    dropping them (and renumbering observations, CSR offsets and weights)
    gives the same labelling from a much smaller file that loads faster.
    The dense transition block is kept whole. String tables are kept as they
    are: observation keys are hashes of table ids, so renumbering tables
    would mean rehashing, for a small gain.
    """
    s = model.space
    W = model.weights
    keep_u = W[:s.n_u] != 0.0
    keep_b = W[s.n_u:s.trans_offset] != 0.0
    # the structure drops its own zero features too (and keeps its dense blocks whole)
    space, weights, keep_obs = model.structure.compact(s, W, keep_u, keep_b)
    n_obs = space.n_obs
    old = model.featurizer
    featurizer = Featurizer(old.patterns, tables=old.tables,
                            vocab=old.vocab.subset(keep_obs, old.n_commands))
    info = dict(model.info)
    info["compacted"] = {"observations": [s.n_obs, n_obs], "features": [s.n_weights,
                                                                        space.n_weights]}
    return Model(labels=model.labels, patterns=model.patterns,
                 n_token_columns=model.n_token_columns, featurizer=featurizer, space=space,
                 weights=weights, info=info, model_type=model.model_type,
                 structure=model.structure)
