"""Attribute corpora: CRFsuite's data model, where each token is a bag of named attributes.

A pattern model computes its observations from columns; here the user's
code (python-crfsuite feature dicts, a CRFsuite data file) has already
computed them: each token is a list of ``(attribute name, value)`` pairs.
An attribute is an observation whose weights (one per label) are multiplied
by the value; attributes seen in training form the vocabulary, in order of
decreasing frequency (ties: first seen first), so the most frequent get the
kernels' dense rows. Values equal to 1 everywhere leave ``tok_val`` out, and
the kernels run their binary code. An occurrence of value 0 (``False``) adds
nothing to any score or count, so the encoder leaves it out of the lists (the
tutorial's boolean features then leave a binary corpus); in training it is
kept aside (``Dataset.zero_occ``) because, as in CRFsuite, it makes the
feature of its attribute and the token's label exist, and that feature moves
wherever the attribute occurs with another value.

The item forms of python-crfsuite are flattened by
:func:`crfkit.attributes.encoder.item_attributes`.

The feature space follows CRFsuite: a state feature exists for an
(attribute, label) pair seen in training (every pair with ``all_states``)
whose total value reaches ``min_freq``; the dense transition block always
exists, but the label pairs that CRFsuite would not make (never seen in
training, unless ``all_transitions``, or seen fewer than ``min_freq`` times)
stay frozen at zero, as if absent.
"""

from __future__ import annotations

import os
from array import array
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from crfkit.attributes.encoder import AttributeEncoder
from crfkit.errors import InputError, ModelFormatError
from crfkit.io import fileformat
from crfkit.model.types import MODEL_TYPES
from crfkit.space import Dataset, FeatureSpace, pointer

ATTRIBUTE_MODEL_KIND = "crfkit-attribute-model"

# Observations x labels counted per pass when building the feature space (128 MB of floats).
_PAIR_CELLS = 1 << 24


def frequency_order(data: Dataset, names: list[str]) -> list[str]:
    """Renumber the observations of ``data`` by decreasing frequency (ties: lower id first),
    in place; returns the names in the new order."""
    n_obs = len(names)
    step = 1 << 22  # in slices: bincount would first copy all the ids to int64
    count = np.zeros(n_obs, dtype=np.int64)
    for a in range(0, len(data.tok_obs), step):
        count += np.bincount(data.tok_obs[a:a + step], minlength=n_obs)
    order = np.argsort(-count, kind="stable")
    rank = np.empty(n_obs, dtype=np.int32)
    rank[order] = np.arange(n_obs, dtype=np.int32)
    for a in range(0, len(data.tok_obs), step):
        data.tok_obs[a:a + step] = rank[data.tok_obs[a:a + step]]
    if data.zero_occ is not None:
        data.zero_occ[:, 1] = rank[data.zero_occ[:, 1]]
    return [names[i] for i in order.tolist()]


def attribute_space(data: Dataset, n_obs: int, n_labels: int, *, min_freq: float = 0.0,
                    all_states: bool = False, all_transitions: bool = False,
                    label_pairs: bool = True) -> tuple[FeatureSpace, np.ndarray, np.ndarray | None]:
    """The feature space of a labelled attribute corpus, its empirical totals, and the
    transition weights to keep at zero (None: none) -- see the module docstring."""
    from crfkit.kernels import valued as values  # Numba: training only

    L = n_labels
    labs, sizes = [], np.zeros(n_obs, dtype=np.int64)
    span = max(1, _PAIR_CELLS // L)
    for o0 in range(0, n_obs, span):
        o1 = min(n_obs, o0 + span)
        freq = np.zeros((o1 - o0, L))
        seen = np.zeros((o1 - o0, L), dtype=np.bool_)
        values.label_totals(data.tok_ptr, data.tok_obs, data.tok_val, data.labels, o0, o1,
                            freq, seen)
        if data.zero_occ is not None:  # value-0 occurrences: seen, with nothing to add
            tok, obs = data.zero_occ[:, 0], data.zero_occ[:, 1]
            inside = (obs >= o0) & (obs < o1)
            seen[obs[inside] - o0, data.labels[tok[inside]]] = True
        # CRFsuite's feature.minfreq applies to the possible states too (their total is 0)
        keep = (seen | all_states) & (freq >= min_freq)
        rows, cols = np.nonzero(keep)
        labs.append(cols.astype(np.int32))
        sizes[o0:o1] = keep.sum(axis=1)
    u_ptr = np.zeros(n_obs + 1, dtype=np.int64)
    np.cumsum(sizes, out=u_ptr[1:])
    u_lab = np.concatenate(labs) if labs else np.empty(0, dtype=np.int32)
    space = FeatureSpace(n_labels=L, u_ptr=u_ptr, u_lab=u_lab, b_ptr=pointer(
        np.empty(0, dtype=np.int64), n_obs), b_prev=np.empty(0, dtype=np.int32),
        b_cur=np.empty(0, dtype=np.int32), has_trans=label_pairs)
    empirical = np.zeros(space.n_weights)
    values.path_totals(empirical, space.arrays(), data.seq_ptr, data.tok_ptr, data.tok_obs,
                       data.tok_val, data.labels, L)
    frozen = None
    if label_pairs:  # CRFsuite's label pairs: seen (or all), and as frequent as minfreq
        count = empirical[space.trans_offset:]
        exists = ((count > 0) | all_transitions) & (count >= min_freq)
        frozen = space.trans_offset + np.flatnonzero(~exists)
        frozen = frozen if len(frozen) else None
    return space, empirical, frozen


@dataclass
class AttributeModel:
    """A model over attribute names: what ``crfkit.sklearn.CRF`` and ``train --format
    crfsuite`` make, and ``label --format crfsuite`` reads. Saved in crfkit's own container
    (no pickle); ``attributes[o]`` names observation ``o``."""

    labels: list[str]
    attributes: list[str]
    space: FeatureSpace
    weights: np.ndarray
    model_type: str = "crf"
    info: dict = field(default_factory=dict)

    @property
    def normalisation(self) -> int:
        return MODEL_TYPES[self.model_type].normalisation

    def vocab(self) -> dict[str, int]:
        return {name: i for i, name in enumerate(self.attributes)}

    def _parts(self) -> tuple[dict, dict[str, np.ndarray]]:
        s = self.space
        blob, offsets = fileformat.pack_strings(self.attributes)
        meta = {"kind": ATTRIBUTE_MODEL_KIND, "type": self.model_type, "labels": self.labels,
                "has_trans": bool(s.has_trans), "info": self.info}
        arrays = {"weights": self.weights, "u_ptr": s.u_ptr, "u_lab": s.u_lab, "b_ptr": s.b_ptr,
                  "b_prev": s.b_prev, "b_cur": s.b_cur, "attr_blob": blob,
                  "attr_offsets": offsets}
        return meta, arrays

    def to_bytes(self) -> bytes:
        return fileformat.dumps(*self._parts())

    def save(self, path: str | os.PathLike) -> None:
        """Write atomically: a crash leaves any previous file untouched."""
        fileformat.write_file(path, *self._parts())

    @classmethod
    def from_bytes(cls, data: bytes, name: str = "<bytes>") -> AttributeModel:
        return cls._from_parts(*fileformat.loads(data, name=name), name)

    @classmethod
    def load(cls, path: str | os.PathLike) -> AttributeModel:
        return cls._from_parts(*fileformat.read_file(path), os.fspath(path))

    def __reduce__(self):
        return (AttributeModel.from_bytes, (self.to_bytes(),))

    @classmethod
    def _from_parts(cls, meta: dict, arrays: dict[str, np.ndarray],
                    name: str) -> AttributeModel:
        from crfkit.io.model_checker import ModelChecker

        check = ModelChecker(name, meta, arrays)
        if meta.get("kind") != ATTRIBUTE_MODEL_KIND:
            hint = (" (a pattern model: label it without --format crfsuite)"
                    if meta.get("kind") == "crfkit-model" else "")
            raise ModelFormatError(f"not a crfkit attribute model{hint}", path=name)
        labels = check.labels()
        model_type = meta.get("type")
        if model_type not in MODEL_TYPES:
            raise ModelFormatError(f"unknown model type {model_type!r}", path=name)
        attributes = fileformat.unpack_strings(check.array("attr_blob", np.uint8, 1),
                                               check.array("attr_offsets", np.int64, 1))
        space = check.space(len(attributes), len(labels), check.value("has_trans", bool))
        weights = check.array("weights", np.float64, 1, length=space.n_weights)
        if not np.isfinite(weights).all():
            raise ModelFormatError("model weights are not finite", path=name)
        info = meta.get("info", {})
        if not isinstance(info, dict):
            raise ModelFormatError("bad info section in model", path=name)
        return cls(labels, attributes, space, weights, model_type, info)


def model_from_features(labels: list[str], attributes: list[str], owner: np.ndarray,
                        label: np.ndarray, weight: np.ndarray,
                        transitions: np.ndarray | None, model_type: str = "crf",
                        info: dict | None = None) -> AttributeModel:
    """An attribute model from its state features (``attributes[owner[k]]`` with label
    ``label[k]`` weighs ``weight[k]``; each pair at most once) and its ``L x L``
    transition weights (None: a model without label pairs)."""
    L = len(labels)
    order = np.lexsort((label, owner))
    u_ptr = np.zeros(len(attributes) + 1, dtype=np.int64)
    np.cumsum(np.bincount(owner, minlength=len(attributes)), out=u_ptr[1:])
    space = FeatureSpace(n_labels=L, u_ptr=u_ptr, u_lab=label[order].astype(np.int32),
                         b_ptr=pointer(np.empty(0, dtype=np.int64), len(attributes)),
                         b_prev=np.empty(0, dtype=np.int32), b_cur=np.empty(0, dtype=np.int32),
                         has_trans=transitions is not None)
    parts = [np.asarray(weight, dtype=np.float64)[order]]
    if transitions is not None:
        parts.append(np.asarray(transitions, dtype=np.float64).reshape(L * L))
    return AttributeModel(list(labels), list(attributes), space, np.concatenate(parts),
                          model_type, dict(info or {}))


def compacted(model: AttributeModel) -> AttributeModel:
    """The same model without its zero state features and the attributes left with none
    (they score nothing, so every label and probability stays the same): what CRFsuite
    writes, and what makes an L1 model small."""
    s, W = model.space, model.weights
    owner = np.repeat(np.arange(s.n_obs), np.diff(s.u_ptr))
    keep = np.flatnonzero(W[:s.n_u] != 0.0)
    used = np.unique(owner[keep])
    renumber = np.full(s.n_obs, -1, dtype=np.int64)
    renumber[used] = np.arange(len(used))
    L = s.n_labels
    transitions = W[s.trans_offset:s.trans_offset + L * L].reshape(L, L) if s.has_trans \
        else None
    return model_from_features(model.labels, [model.attributes[o] for o in used.tolist()],
                               renumber[owner[keep]], s.u_lab[keep], W[keep], transitions,
                               model.model_type, model.info)


def encode(sequences: Iterable, vocab: dict[str, int], *, grow: bool) -> Dataset:
    """Sequences of token items (any form of
    :func:`crfkit.attributes.encoder.item_attributes`, or arrays) as a Dataset without
    labels."""
    encoder = AttributeEncoder(vocab, grow=grow)
    for xseq in sequences:
        encoder.add(xseq)
    return encoder.dataset()


@dataclass
class AttributeTraining:
    """The settings of an attribute corpus that are not the algorithm's (CRFsuite's
    ``feature.*`` and L-BFGS's gradient-norm test)."""

    min_freq: float = 0.0
    all_states: bool = False
    all_transitions: bool = False
    epsilon: float = 0.0  # stop when |g| / max(1, |w|) < epsilon (L-BFGS only; 0: never)


def train(data: Dataset, labels: list[str], attributes: list[str], options,
          settings: AttributeTraining | None = None, *, progress=None,
          log: list[dict] | None = None, on_weights=None, holdout: bool = False,
          first_lines: np.ndarray | None = None, path: str = "<input>") -> AttributeModel:
    """Train an attribute model on ``data`` (gold label ids in ``data.labels``, observation
    ``o`` named ``attributes[o]``) with ``options`` (a :class:`crfkit.training.train.TrainOptions`).

    ``data`` is renumbered by frequency in place (module docstring). ``on_weights``, if
    given, is called after every iteration with the model of the current weights;
    ``holdout``: it labels held-out data (so the compile notice counts the decoder).
    Labels may be label sets (``?``, ``A|B``: :mod:`crfkit.attributes.label_sets`);
    ``first_lines`` (each sequence's line in ``path``) place their errors.
    """
    from crfkit.kernels.blocks import set_thread_count
    from crfkit.progress import Progress
    from crfkit.training.jitcache import announce_compile
    from crfkit.training.train import ALGORITHMS, Monitor, recorded_options
    from crfkit.vectors import dot

    settings = settings or AttributeTraining()
    options.validate()
    model_type = options.model_type or "crf"
    if data.n_tokens == 0:
        raise InputError("training data is empty (no tokens)")
    progress = progress or Progress(quiet=True)
    sets = _checked_label_sets(data, labels, options, model_type, first_lines, path)
    announce_compile(progress, options.algo, model_type, holdout, attributes=True)
    set_thread_count(options.nthread)
    attributes = frequency_order(data, attributes)
    problem, space = _problem(data, labels, len(attributes), options, settings, model_type,
                              sets, first_lines, progress)
    labels = problem.corpus.labels
    progress.message(f"* {model_type}, {options.algo}: {data.n_seqs} sequences, "
                     f"{data.n_tokens} tokens, {len(labels)} labels, {len(attributes)} "
                     f"attributes, {space.n_weights} features"
                     f"{' (real-valued)' if data.tok_val is not None else ''}")
    monitor = Monitor(progress, data, model_type=model_type, corpus=problem.corpus, log=log,
                      structure=problem.structure)

    def hook(info) -> str | None:
        asked = monitor(info)
        if asked is None and settings.epsilon > 0 and np.isfinite(info.gnorm):
            # crfkit's serial dot: numpy's is threaded BLAS, whose threads spin after
            # each call (~7 ms of CPU per call on a busy 2-core machine, every iteration)
            xnorm = max(1.0, float(np.sqrt(dot(info.x, info.x))))
            if info.gnorm / xnorm < settings.epsilon:
                asked = f"converged (gradient norm / weight norm < {settings.epsilon:g})"
        if on_weights is not None:
            on_weights(AttributeModel(list(labels), attributes, space, info.x, model_type))
        return asked

    result = ALGORITHMS[options.algo].run(problem, hook)
    progress.message(f"* stopped after {result.iterations} iterations: {result.reason}")
    info = {"algorithm": options.algo, "options": recorded_options(options, model_type,
                                                                   devel=False),
            "feature_options": dict(vars(settings)), "iterations": result.iterations,
            "objective": result.f, "stop_reason": result.reason, "sequences": data.n_seqs,
            "tokens": data.n_tokens, "nonzero_weights": int(np.count_nonzero(result.x))}
    return AttributeModel(list(labels), attributes, space, result.x.copy(), model_type, info)


def _checked_label_sets(data: Dataset, labels: list[str], options, model_type: str,
                        first_lines: np.ndarray | None, path: str):
    """The corpus's label sets (None without any), refused at their line for an algorithm
    that cannot sum over them: before the compile notice, so a refusal is one line."""
    from crfkit.attributes.label_sets import label_sets
    from crfkit.structures import for_label_sets, named
    from crfkit.structures.base import Setting

    sets = label_sets(data, labels, first_lines, path)
    if sets is not None:
        for_label_sets(named("chain")).refuse(
            Setting("train", options.algo, model_type, {}, label_sets=sets.where))
    return sets


def _problem(data: Dataset, labels: list[str], n_obs: int, options, settings: AttributeTraining,
             model_type: str, sets, first_lines: np.ndarray | None, progress):
    """The training problem of an attribute corpus, and its (label-level) feature space:
    the chain's; with label sets (``sets``), the registry's structure that sums over them
    (:mod:`crfkit.attributes.label_sets`), on the same space."""
    from crfkit.attributes.label_sets import feature_data, pair_counts
    from crfkit.structures import for_label_sets, named
    from crfkit.structures.base import Encoding
    from crfkit.training.corpus import Corpus
    from crfkit.training.gold import set_only_warning
    from crfkit.training.train import Problem

    label_pairs = MODEL_TYPES[model_type].label_pairs
    if sets is None:
        space, empirical, frozen = attribute_space(
            data, n_obs, len(labels), min_freq=settings.min_freq,
            all_states=settings.all_states, all_transitions=settings.all_transitions,
            label_pairs=label_pairs)
        return Problem(model_type, Corpus(None, space, data, empirical, labels, 0,
                                          np.zeros(space.n_weights), frozen=frozen),
                       options), space
    structure = for_label_sets(named("chain"))
    warning = set_only_warning(sets.labels, sets.y, 0)
    if warning is not None:
        progress.warning(warning)
    space, _, _ = attribute_space(feature_data(data, sets), n_obs, len(sets.labels),
                                  min_freq=settings.min_freq, all_states=settings.all_states,
                                  label_pairs=label_pairs)
    data.labels = sets.y
    count = pair_counts(data, sets.allowed).ravel()
    exists = ((count > 0) | settings.all_transitions) & (count >= settings.min_freq)
    frozen = space.trans_offset + np.flatnonzero(~exists)
    states, empirical = structure.encode_space(space, np.zeros(space.n_weights), Encoding(
        None, None, None, sets.y, False))
    corpus = Corpus(None, states, data, empirical, sets.labels, 0, np.zeros(space.n_weights),
                    frozen=frozen if len(frozen) else None, allowed=sets.allowed,
                    first_lines=first_lines)
    structure.attach(corpus, [], [], {}, None, progress)
    return Problem(model_type, corpus, options, structure), space


def label_ids(y: Iterable[Iterable[str]], labels: list[str], lengths: np.ndarray, *,
              grow: bool) -> np.ndarray:
    """Gold label ids of every token (``labels`` grows in first-seen order with ``grow``;
    otherwise an unknown label gets id -1); checks each sequence's length."""
    index = {label: i for i, label in enumerate(labels)}
    out = array("i")
    n = 0
    for s, yseq in enumerate(y):
        before = len(out)
        for label in yseq:
            if not isinstance(label, str):
                raise InputError(f"labels must be strings, got {label!r} in sequence {s}")
            i = index.get(label)
            if i is None:
                if grow:
                    i = index[label] = len(labels)
                    labels.append(label)
                else:
                    i = -1
            out.append(i)
        if s >= len(lengths) or len(out) - before != lengths[s]:
            have = lengths[s] if s < len(lengths) else 0
            raise InputError(f"sequence {s} has {have} tokens but {len(out) - before} labels")
        n += 1
    if n != len(lengths):
        raise InputError(f"{len(lengths)} sequences of features but {n} of labels")
    return np.frombuffer(out, dtype=np.int32).copy()
