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

from crfkit.errors import ModelFormatError
from crfkit.features.extract import Featurizer
from crfkit.features.patterns import REGEX_MODES, Pattern, parse_pattern_line, with_regex_mode
from crfkit.features.strings import StringTable
from crfkit.features.vocab import ObservationVocab
from crfkit.io import fileformat
from crfkit.model.types import MODEL_TYPES
from crfkit.space import FeatureSpace
from crfkit.structures.skipchain.graph import SkipOptions

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
        if s.n_skip:  # skip-chain models only, so other models' files are unchanged
            meta["n_skip"] = s.n_skip
        if s.order == 2:  # absent from first-order files, which stay as they were
            arrays.update(pairs=s.pairs, tri=s.tri, g_ptr=s.g_ptr, g_tri=s.g_tri)
            meta.update(order=2, has_tri=bool(s.has_tri))
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
        check = _Checker(name, meta, arrays)
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
        if model_type not in MODEL_TYPES:
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
        space.n_skip = check.skip_blocks(patterns, model_type)
        if meta.get("order", 1) != 1:
            space = check.order2(meta, space, model_type, patterns)
        if not MODEL_TYPES[model_type].label_pairs and (has_trans or space.n_b):
            raise ModelFormatError(f"a {model_type} model cannot have label-pair features",
                                   path=name)
        if MODEL_TYPES[model_type].skip_edges:
            try:
                SkipOptions.from_dict(info.get("skip"))
            except ValueError as err:
                raise ModelFormatError(f"skip-chain model: {err}", path=name) from None
        weights = check.array("weights", np.float64, 1, length=space.n_weights)
        if not np.isfinite(weights).all():
            raise ModelFormatError("model weights are not finite", path=name)
        return cls(labels=labels, patterns=patterns, n_token_columns=n_columns,
                   featurizer=featurizer, space=space, weights=weights, info=info,
                   model_type=model_type)


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
    if s.order == 2:  # observation trigrams are dropped too; states and blocks stay whole
        from crfkit.structures.order2.pair_space import subset2

        keep_g = W[s.g_offset:s.tri_offset] != 0.0
        space, keep_obs = subset2(s, keep_u, keep_b, keep_g)
        weights = np.concatenate([W[:s.n_u][keep_u], W[s.n_u:s.trans_offset][keep_b],
                                  W[s.trans_offset:s.g_offset],
                                  W[s.g_offset:s.tri_offset][keep_g], W[s.tri_offset:]])
    else:
        space, keep_obs = s.subset(keep_u, keep_b)
        weights = np.concatenate([W[:s.n_u][keep_u], W[s.n_u:s.trans_offset][keep_b],
                                  W[s.trans_offset:]])
    n_obs = space.n_obs
    old = model.featurizer
    featurizer = Featurizer(old.patterns, tables=old.tables,
                            vocab=old.vocab.subset(keep_obs, old.n_commands))
    info = dict(model.info)
    info["compacted"] = {"observations": [s.n_obs, n_obs], "features": [s.n_weights,
                                                                        space.n_weights]}
    return Model(labels=model.labels, patterns=model.patterns,
                 n_token_columns=model.n_token_columns, featurizer=featurizer, space=space,
                 weights=weights, info=info, model_type=model.model_type)


class _Checker:
    """Validates header values and arrays, raising ModelFormatError naming the file."""

    def __init__(self, name: str, meta: dict, arrays: dict[str, np.ndarray]) -> None:
        self.name, self.meta, self.arrays = name, meta, arrays

    def fail(self, message: str) -> ModelFormatError:
        return ModelFormatError(message, path=self.name)

    def labels(self) -> list[str]:
        labels = self.string_list("labels")
        if not labels or len(set(labels)) != len(labels):
            raise self.fail("model labels are missing or repeated")
        for label in labels:  # the reader never yields one; it would break the output format
            if "\n" in label:
                raise self.fail(f"model label {label!r} contains a line break")
        return labels

    def patterns(self) -> list[Pattern]:
        patterns = []
        for entry in self.value("patterns", list):
            if not isinstance(entry, dict) or not isinstance(entry.get("text"), str) \
                    or not isinstance(entry.get("line"), int) or not entry["text"] \
                    or "\n" in entry["text"] or "\r" in entry["text"]:
                raise self.fail("bad pattern entry in model")
            mode = entry.get("regex", "crfkit")
            if mode not in REGEX_MODES:
                raise self.fail(f"unknown regex mode {mode!r} in model (this crfkit knows "
                                f"{', '.join(REGEX_MODES)})")
            try:
                pattern = parse_pattern_line(entry["text"], lineno=entry["line"])
            except Exception as err:  # noqa: BLE001 - any parse failure means a bad file
                raise self.fail(f"bad pattern in model: {err}") from None
            patterns += with_regex_mode([pattern], mode) if mode != "crfkit" else [pattern]
        if not patterns:
            raise self.fail("model has no patterns")
        return patterns

    def featurizer(self, patterns: list[Pattern]) -> Featurizer:
        """The featurizer with its string tables and observation vocabulary, checked."""
        featurizer = Featurizer(patterns)
        tables = []
        for i in range(len(featurizer.transforms)):
            blob = self.array(f"table{i}_blob", np.uint8, 1)
            offsets = self.array(f"table{i}_offsets", np.int64, 1)
            tables.append(StringTable(fileformat.unpack_strings(blob, offsets)))
        featurizer.tables = tables
        keys = self.array("obs_keys", np.uint64, 1)
        n_obs = len(keys)
        obs_pattern = self.array("obs_pattern", np.int32, 1, length=n_obs)
        listed = np.zeros(len(patterns), dtype=bool)
        listed[featurizer.listed] = True
        if n_obs and (obs_pattern.min() < 0 or obs_pattern.max() >= len(patterns)
                      or not listed[obs_pattern].all()):
            raise self.fail("observation pattern index out of range")
        n_values = int(featurizer.n_commands[obs_pattern].sum())
        obs_values = self.array("obs_values", np.int32, 1, length=n_values)
        featurizer.vocab = ObservationVocab(
            keys, obs_pattern, obs_values,
            check_values=lambda values: self.value_ids(values, obs_pattern, featurizer))
        if featurizer.vocab.has_repeated_keys():
            raise self.fail("repeated observation keys")
        return featurizer

    def space(self, n_obs: int, L: int, has_trans: bool) -> FeatureSpace:
        """The feature space, every offset and label index checked."""
        u_ptr = self.pointer("u_ptr", n_obs)
        u_lab = self.array("u_lab", np.int32, 1, length=int(u_ptr[-1]))
        b_ptr = self.pointer("b_ptr", n_obs)
        b_prev = self.array("b_prev", np.int32, 1, length=int(b_ptr[-1]))
        b_cur = self.array("b_cur", np.int32, 1, length=int(b_ptr[-1]))
        for arr_name, arr in (("u_lab", u_lab), ("b_prev", b_prev), ("b_cur", b_cur)):
            if len(arr) and (arr.min() < 0 or arr.max() >= L):
                raise self.fail(f"{arr_name}: label index out of range")
        return FeatureSpace(n_labels=L, u_ptr=u_ptr, u_lab=u_lab, b_ptr=b_ptr, b_prev=b_prev,
                            b_cur=b_cur, has_trans=has_trans)

    def skip_blocks(self, patterns: list[Pattern], model_type: str) -> int:
        """The number of skip weight blocks: one per skip pattern and one per skip-edge
        observation (``info.skip.conditions``), in skip-chain models."""
        n_skip = self.meta.get("n_skip", 0)
        skip = sum(p.kind == "s" for p in patterns)
        info = self.meta.get("info")
        found = info.get("skip") if isinstance(info, dict) else None
        conditions = found.get("conditions", []) if isinstance(found, dict) else []
        skip += len(conditions) if isinstance(conditions, list) else 0
        if not isinstance(n_skip, int) or isinstance(n_skip, bool) or n_skip != skip:
            raise self.fail(f"model has {n_skip!r} skip weight blocks for {skip} skip patterns")
        if skip and not MODEL_TYPES[model_type].skip_edges:
            raise self.fail(f"a {model_type} model cannot have skip-edge patterns")
        return skip
    def order2(self, meta: dict, space: FeatureSpace, model_type: str,
               patterns: list[Pattern]) -> FeatureSpace:
        """The second-order space of a model whose header says ``order: 2``, checked."""
        from crfkit.structures.order2.pair_space import Order2Space, first_order_parts

        if meta.get("order") != 2 or 2 not in MODEL_TYPES.get(model_type, MODEL_TYPES["crf"]
                                                              ).orders:
            raise self.fail(f"unsupported label order {meta.get('order')!r} for a "
                            f"{model_type} model")
        has_tri = self.value("has_tri", bool)
        if has_tri and not any(p.is_constant and (p.has_bigram or p.has_trigram)
                               for p in patterns):
            raise self.fail("model has a label-trigram block but no constant pattern to own it")
        space2 = Order2Space(**first_order_parts(space),
                             pairs=self.array("pairs", np.int64, 1),
                             tri=self.array("tri", np.int64, 1),
                             g_ptr=self.array("g_ptr", np.int64, 1),
                             g_tri=self.array("g_tri", np.int32, 1), has_tri=has_tri)
        try:
            space2.check()
        except ValueError as err:
            raise self.fail(f"bad second-order space: {err}") from None
        return space2

    def value(self, key: str, kind: type):
        value = self.meta.get(key)
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise self.fail(f"model header field {key!r} is missing or not {kind.__name__}")
        return value

    def string_list(self, key: str) -> list[str]:
        value = self.value(key, list)
        if not all(isinstance(v, str) for v in value):
            raise self.fail(f"model header field {key!r} must be a list of strings")
        return value

    def array(self, key: str, dtype, ndim: int, *, length: int | None = None) -> np.ndarray:
        arr = self.arrays.get(key)
        if arr is None:
            raise self.fail(f"model lacks array {key!r}")
        if arr.dtype != np.dtype(dtype) or arr.ndim != ndim:
            raise self.fail(f"model array {key!r} has dtype {arr.dtype}/{arr.ndim}-d, "
                            f"expected {np.dtype(dtype)}/{ndim}-d")
        if length is not None and len(arr) != length:
            raise self.fail(f"model array {key!r} has {len(arr)} entries, expected {length}")
        return np.ascontiguousarray(arr)

    def pointer(self, key: str, n: int) -> np.ndarray:
        ptr = self.array(key, np.int64, 1, length=n + 1)
        if ptr[0] != 0 or (np.diff(ptr) < 0).any():
            raise self.fail(f"model array {key!r} is not a valid offset table")
        return ptr

    def value_ids(self, values: np.ndarray, pattern: np.ndarray, featurizer: Featurizer) -> None:
        """Every observation value indexes the string table of its command.

        One pass per command slot (patterns have a few commands), so no
        per-value index array is built.
        """
        if not len(values):
            return
        widths = featurizer.n_commands[pattern]
        first = np.cumsum(widths) - widths  # where each observation's values start
        n_slots = int(featurizer.n_commands.max())
        # limit[p, j]: size of the table read by command j of pattern p
        limit = np.zeros((len(featurizer.patterns), n_slots), dtype=np.int64)
        for p, transforms in enumerate(featurizer.command_transform):
            limit[p, :len(transforms)] = [len(featurizer.tables[t]) for t in transforms]
        bad = values.min() < 0
        for j in range(n_slots):
            having = np.flatnonzero(widths > j)
            bad = bad or bool((values[first[having] + j] >= limit[pattern[having], j]).any())
        if bad:
            raise self.fail("observation value index out of range")


# The checker under a public name, for the other model kinds kept in the same container
# (crfkit.attributes.attribute_model).
ModelChecker = _Checker
