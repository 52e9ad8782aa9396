"""The checks of a model file's header values and arrays, raising one ModelFormatError
naming the file: every array is checked before a Numba kernel may index with it (a bad
index there would crash the process instead of raising). Shared by crfkit's models, the
structures' parts of them (:meth:`crfkit.structures.base.Structure.load`) and the
attribute models kept in the same container."""

from __future__ import annotations

import numpy as np

from crfkit.errors import ModelFormatError
from crfkit.features.extract import Featurizer
from crfkit.features.patterns import REGEX_MODES, Pattern, parse_pattern_line, with_regex_mode
from crfkit.features.strings import StringTable
from crfkit.features.vocab import ObservationVocab
from crfkit.io import fileformat
from crfkit.space import FeatureSpace


class ModelChecker:
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

