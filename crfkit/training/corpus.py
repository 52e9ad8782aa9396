"""Training corpora for the kernels: vocabulary, feature space, empirical counts.

Three entry points:

* :func:`encode_training` builds everything from a labelled corpus — or,
  given an existing model (``train -m``), *extends* that model: its labels,
  string tables and observation ids are kept, new labels and observations
  are appended, the feature space is the union of the model's features and
  those seen in the new corpus, and the starting weights are the model's
  (zero for new features). Appending keeps every old id valid, so old
  weights are copied by a key lookup, never re-learnt;
* :func:`encode_devel` encodes a development corpus under the (frozen)
  training vocabulary, refusing labels the model cannot predict;
* merging the model's feature space with the new corpus's is a union of
  feature keys (:meth:`crfkit.space.FeatureSpace.keys`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from crfkit.errors import InputError, UsageError
from crfkit.features.columns import TokenColumns, columns_of, pattern_columns
from crfkit.features.extract import Featurizer, token_lists
from crfkit.features.patterns import Pattern, check_columns
from crfkit.features.strings import StringTable
from crfkit.features.values import occurrence_values, value_matrix
from crfkit.features.vocab import ObservationVocab
from crfkit.io.label_sets import is_partial
from crfkit.io.reader import DocStart, Sequence
from crfkit.model.model import Model
from crfkit.model.types import MODEL_TYPES
from crfkit.space import Dataset, FeatureSpace
from crfkit.structures import named
from crfkit.structures.base import Corpus, Encoding, MemoryPart, Structure
from crfkit.training.gold import feature_tokens, partial_gold
from crfkit.training.memory import (
    INDEX_BYTES,
    MemoryBudget,
    check,
    dense_costs,
    estimate_training,
)


def model_patterns(patterns: list[Pattern], model_type: str) -> list[Pattern]:
    """The patterns a model of this type uses: MaxEnt has no label pairs, so it drops
    bigram-only patterns (``*`` patterns keep their unigram half). (Which label orders a
    pattern needs is the structure's choice: :meth:`Structure.patterns`.)"""
    if MODEL_TYPES[model_type].label_pairs:
        return patterns
    kept = [p for p in patterns if p.has_unigram]
    if not kept:
        raise UsageError("a maxent model needs unigram patterns (u, U or *): the pattern "
                         "file has only bigram patterns")
    return kept


def encode_training(patterns: list[Pattern], sequences: list[Sequence] | TokenColumns, *,
                    cutoff: int = 1, source: str = "<input>", model_type: str = "crf",
                    init: Model | None = None, all_features: bool = False,
                    all_labels: bool = False, budget: MemoryBudget | None = None,
                    structure: Structure | None = None) -> Corpus:
    """Build the vocabulary, feature space and arrays of a training corpus.

    ``sequences``: a list, or the corpus already interned by column
    (:func:`crfkit.features.columns.collect_columns` of :func:`training_columns`;
    not with ``%v`` patterns, which read numbers from the rows): the same corpus.
    ``patterns`` must already be :func:`model_patterns` of the type and the structure's
    (:meth:`Structure.patterns`). With ``init`` the corpus extends that model (module
    docstring); observations of the new corpus below ``cutoff`` are dropped, the model's
    are kept. ``all_features``: every observation x label (pair), not only those seen;
    ``all_labels``: every observation x label, the label pairs those seen (CRFsuite's
    possible states). ``structure``: what it adds to the first-order space (None: the
    linear chain). ``budget``: with ``all_features`` or ``all_labels``, refuse
    (:mod:`crfkit.training.memory`) before the dense feature space is built if training
    would not fit (without it the space is linear in the corpus, and training checks the
    exact space before the optimiser allocates its vectors).
    """
    structure = structure or named("chain")
    columns, rows = _training_columns(patterns, sequences, source, init)
    n_token_columns = columns.n_columns - 1
    sets = partial_gold(columns, n_token_columns, [] if init is None else list(init.labels),
                        source=source, label_sets=structure.label_sets)
    labels, y, allowed = sets if sets is not None else (*_gold(columns, n_token_columns,
                                                               init), None)
    tables = None
    if init is not None:  # copies: training must not change the initial model
        tables = [StringTable(t.strings) for t in init.featurizer.tables]
    featurizer = Featurizer(patterns, tables=tables)
    pos, components = featurizer.components_of(columns, grow=True)
    first_lines = columns.first_lines
    del columns, sequences  # the interned columns live on in components
    obs = featurizer.build_vocab(components, cutoff=cutoff)
    del components
    if init is not None:
        obs = _merge_vocab(featurizer, init.featurizer.vocab, obs)
    space, empirical = _first_order_space(featurizer, *feature_tokens(
        obs, pos.index == 0, y, allowed), len(labels), model_type, structure, budget,
                                          all_features=all_features, all_labels=all_labels)
    space, empirical = structure.encode_space(space, empirical, Encoding(
        featurizer, obs, pos.index, y, all_features))
    x0 = np.zeros(space.n_weights)
    if init is not None:
        space, empirical, x0 = structure.merge_init(space, empirical, init.space, init.weights)
    tok_ptr, tok_obs = token_lists(obs)
    tok_val = None if rows is None else occurrence_values(
        value_matrix(patterns, featurizer.listed, rows, source), obs)
    data = Dataset(seq_ptr=pos.seq_ptr, tok_ptr=tok_ptr, tok_obs=tok_obs, labels=y,
                   tok_val=tok_val)
    if tok_val is not None:  # %v patterns: the gold totals are sums of values
        empirical = valued_totals(space, data)
    return Corpus(featurizer, space, data, empirical, labels, n_token_columns, x0,
                  allowed=allowed, first_lines=first_lines)


def _first_order_space(featurizer: Featurizer, obs: np.ndarray, first: np.ndarray,
                       y: np.ndarray, n_labels: int, model_type: str, structure: Structure,
                       budget: MemoryBudget | None, *, all_features: bool,
                       all_labels: bool) -> tuple[FeatureSpace, np.ndarray]:
    """The chain's feature space and gold counts (dense with ``all_features``/``all_labels``,
    refused first if the budget cannot hold it)."""
    patterns = featurizer.patterns
    unigram, bigram, has_trans = feature_kinds(patterns, featurizer.listed, model_type)
    per_obs = None
    if all_features or all_labels:
        dense_bigram = bigram if all_features else np.zeros_like(bigram)
        if budget is not None:  # refuse before the dense space is built
            extra = structure.dense_costs([patterns[p] for p in featurizer.listed], n_labels) \
                if all_features else MemoryPart()
            _check_dense(featurizer, unigram, dense_bigram, n_labels, has_trans, budget, extra,
                         "--all-features" if all_features else "--all-labels")
        flags = np.zeros((2, len(patterns)), dtype=bool)
        flags[0, featurizer.listed], flags[1, featurizer.listed] = unigram, dense_bigram
        per_obs = flags[:, featurizer.vocab.pattern]
    return FeatureSpace.from_training(obs, unigram, bigram, first, y, len(featurizer.vocab),
                                      n_labels, has_trans, all_features=per_obs)


def _training_columns(patterns: list[Pattern], sequences: list[Sequence] | TokenColumns,
                      source: str, init: Model | None
                      ) -> tuple[TokenColumns, list[Sequence] | None]:
    """The corpus interned by column, checked against the patterns and the initial model,
    and its rows when it came as a list (None when it came interned)."""
    rows = None
    if not isinstance(sequences, TokenColumns):
        rows = sequences
        _check_row_columns(rows, source)
        sequences = columns_of(rows, training_columns(patterns))
    columns = sequences
    if not columns.n_seqs:
        raise InputError("training data is empty (no sequences)", path=source)
    n_columns = columns.n_columns
    if n_columns < 2:
        raise InputError(f"training data needs token columns and a label column, found "
                         f"{n_columns} column", path=source, line=columns.first_line)
    n_token_columns = n_columns - 1
    check_columns(patterns, n_token_columns, label_column=True)
    if init is not None and init.n_token_columns != n_token_columns:
        raise InputError(f"the initial model reads {init.n_token_columns} token columns, the "
                         f"training data has {n_token_columns}", path=source,
                         line=columns.first_line)
    if rows is None and any(p.value for p in patterns):
        raise ValueError("%v patterns read numbers from the rows: pass the sequences")
    return columns, rows


def _gold(columns: TokenColumns, label_column: int, init: Model | None
          ) -> tuple[list[str], np.ndarray]:
    """The labels (the initial model's first, then the new ones in order of first
    appearance) and every token's gold label id (int32)."""
    gold = columns.distinct[label_column]  # in order of first appearance
    labels = list(init.labels) if init is not None else []
    known = set(labels)
    labels += [label for label in gold if label not in known]
    label_index = {label: i for i, label in enumerate(labels)}
    return labels, np.array([label_index[label] for label in gold], dtype=np.int32)[
        columns.ids[label_column]]


def training_columns(patterns: list[Pattern]) -> set[int]:
    """The columns training reads: those of the patterns, and the label (-1)."""
    return pattern_columns(patterns) | {-1}


def _check_row_columns(sequences: list[Sequence], source: str) -> None:
    """Every sequence of a list has the column count of the first."""
    if not sequences:
        raise InputError("training data is empty (no sequences)", path=source)
    n_columns = len(sequences[0].rows[0])
    for seq in sequences:
        if len(seq.rows[0]) != n_columns:
            raise InputError(f"expected {n_columns} columns, found {len(seq.rows[0])}",
                             path=source, line=seq.lines[0])


def valued_totals(space: FeatureSpace, data: Dataset) -> np.ndarray:
    """The empirical feature totals of a labelled corpus with values."""
    from crfkit.kernels.valued import path_totals  # Numba: training only

    totals = np.zeros(space.n_weights)
    path_totals(totals, space.arrays(), data.seq_ptr, data.tok_ptr, data.tok_obs,
                data.tok_val, data.labels, space.n_labels)
    return totals


def feature_kinds(patterns: list[Pattern], listed: list[int], model_type: str
                  ) -> tuple[np.ndarray, np.ndarray, bool]:
    """Which listed patterns make unigram and observation-bigram features, and whether
    the model has a transition block (a constant bigram pattern, CRF++'s bare ``B``)."""
    no_pairs = not MODEL_TYPES[model_type].label_pairs
    chosen = [patterns[p] for p in listed]
    unigram = np.array([p.has_unigram for p in chosen], dtype=bool)
    bigram = np.array([p.has_bigram and not p.is_constant and not no_pairs for p in chosen],
                      dtype=bool)
    has_trans = not no_pairs and any(p.is_constant and p.has_bigram for p in patterns)
    return unigram, bigram, has_trans


def _check_dense(featurizer: Featurizer, unigram: np.ndarray, bigram: np.ndarray, L: int,
                 has_trans: bool, budget: MemoryBudget, extra: MemoryPart, option: str) -> None:
    """Refuse ``option`` (``--all-features``; ``--all-labels``: ``bigram`` all False) if its
    dense space, with what the structure adds (``extra``), would not fit
    (crfkit.training.memory)."""
    patterns = featurizer.patterns
    listed = [patterns[p] for p in featurizer.listed]
    counts = np.bincount(featurizer.vocab.pattern, minlength=len(patterns))[featurizer.listed]
    costs = dense_costs(listed, counts, unigram, bigram, L, extra.per_pattern) + extra.costs
    estimate = estimate_training(costs, L, has_trans, budget,
                                 unbuilt_bytes_per_weight=8 + INDEX_BYTES)
    check(estimate, budget.limit, dense_option=option, n_labels=L)


@dataclass
class DevelSet:
    """A development corpus encoded for scoring during training.

    ``data.labels`` are gold label ids; ids from ``len(corpus.labels)`` on
    name devel labels that training never saw (``label_names`` holds all):
    the model cannot predict them, so their tokens score as errors.
    """

    data: Dataset
    label_names: list[str]
    warnings: list[str]


def encode_devel(corpus: Corpus, sequences: list[Sequence], source: str) -> DevelSet:
    """A development corpus under the training vocabulary, with gold label ids."""
    if not sequences:
        raise InputError("development data is empty (no sequences)", path=source)
    index = {label: i for i, label in enumerate(corpus.labels)}
    names = list(corpus.labels)
    first_line: dict[str, int] = {}
    expected = corpus.n_token_columns + 1
    gold = []
    for seq in sequences:
        for row, line in zip(seq.rows, seq.lines, strict=True):
            if len(row) != expected:
                raise InputError(f"expected {expected} columns (as the training data), found "
                                 f"{len(row)}", path=source, line=line)
            y = index.get(row[-1])
            if y is None:
                y = index[row[-1]] = len(names)
                names.append(row[-1])
                if not is_partial(row[-1]):  # partial labels are not scored (monitor)
                    first_line[row[-1]] = line
            gold.append(y)
    gold_ids = np.array(gold, dtype=np.int32)
    warnings = []
    for label, line in first_line.items():
        count = int(np.count_nonzero(gold_ids == index[label]))
        warnings.append(f"{source}:{line}: label {label!r} does not occur in the training "
                        f"data: its {count} token(s) are scored as errors")
    featurizer = corpus.featurizer
    pos, components = featurizer.components(sequences, grow=False)
    obs = featurizer.observations(components)
    tok_ptr, tok_obs = token_lists(obs)
    tok_val = occurrence_values(value_matrix(featurizer.patterns, featurizer.listed, sequences,
                                             source), obs)
    data = Dataset(seq_ptr=pos.seq_ptr, tok_ptr=tok_ptr, tok_obs=tok_obs, labels=gold_ids,
                   tok_val=tok_val)
    return DevelSet(data, names, warnings)


# --- warm start ----------------------------------------------------------------------------------
def _merge_vocab(featurizer: Featurizer, old: ObservationVocab, obs: np.ndarray) -> np.ndarray:
    """Put the old observations first (same ids), then the new corpus's unseen ones.

    ``featurizer.vocab`` holds the new corpus's vocabulary on entry and the
    merged one on return; ``obs`` (ids in the new vocabulary) is renumbered.
    The string tables were grown from the old ones, so an observation has the
    same key in both vocabularies.
    """
    new = featurizer.vocab
    sorter = np.argsort(old.keys, kind="stable")
    where = np.searchsorted(old.keys, new.keys, sorter=sorter)
    where = np.minimum(where, max(len(old) - 1, 0))
    found = np.zeros(len(new), dtype=bool)
    if len(old):
        found = old.keys[sorter[where]] == new.keys
    merged_id = np.empty(len(new), dtype=np.int32)
    if len(old):
        merged_id[found] = sorter[where[found]]
    merged_id[~found] = len(old) + np.arange(int((~found).sum()), dtype=np.int32)
    fresh = new.subset(~found, featurizer.n_commands)
    featurizer.vocab = ObservationVocab(np.concatenate([old.keys, fresh.keys]),
                                        np.concatenate([old.pattern, fresh.pattern]),
                                        np.concatenate([old.values, fresh.values]))
    return np.where(obs >= 0, merged_id[np.maximum(obs, 0)], -1).astype(np.int32)


def split_documents(items: Iterable[Sequence | DocStart]) -> tuple[list[Sequence], list[int]]:
    """Sequences of a reader's items, and the index of the first sequence of each document.

    Without any ``-DOCSTART-`` every sequence is a document; otherwise a
    document runs from one marker to the next (sequences before the first
    marker form one too).
    """
    sequences: list[Sequence] = []
    starts: list[int] = []
    marked = False
    for item in items:
        if isinstance(item, DocStart):
            marked = True
            if not starts or starts[-1] != len(sequences):
                starts.append(len(sequences))
        elif isinstance(item, Sequence):
            if not starts:
                starts.append(0)
            sequences.append(item)
    if not marked:
        starts = list(range(len(sequences)))
    starts = [s for s in starts if s < len(sequences)]
    if sequences and (not starts or starts[0] != 0):
        starts.insert(0, 0)
    return sequences, starts
