"""Labelling: sequences -> features (frozen vocabulary) -> decoding -> labels and scores.

:func:`label` is the Python API (one :class:`LabelResult` per sequence);
:func:`label_stream` writes column output batch by batch over a streaming
reader, so memory stays bounded whatever the input size, and output order
is input order. Decoding is the model's structure's
(:meth:`crfkit.structures.base.Structure.decode`): the linear chain serves a plain
best path with numpy (so plain labelling never waits for Numba to load) and the
rest with Numba's kernels, imported on first use.

Output formats are described in :mod:`crfkit.labelling.output`; ``-DOCSTART-``
lines (:class:`crfkit.io.reader.DocStart`) are not labelled but copied to the
output in the same place. On live input (a pipe or terminal: the reader's
:data:`~crfkit.io.reader.PAUSE` items) a batch ends wherever the input pauses and
is written and flushed at once, so a program can use crfkit as a co-process:
write a sentence and its blank line, read its labels, write the next.

``force`` reads
the last input column as partial labels: a model label fixes the token's
label, ``_`` (or an empty field, with ``--sep tab``) leaves it free; that
column is kept in the output, like the gold column of ``check``. (A model
label spelt ``_`` can therefore not be forced.)
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, TextIO

import numpy as np

from crfkit.errors import CrfkitError, InputError, UsageError
from crfkit.features.extract import Featurizer, token_lists
from crfkit.features.values import occurrence_values, value_matrix
from crfkit.io.reader import Item, Sequence
from crfkit.kernels.decoded import Decoded
from crfkit.labelling.batches import Batch, batches, decoded_batches, item_batches
from crfkit.labelling.constraints import CONSTRAINTS, constraint_masks
from crfkit.labelling.output import ColumnWriter
from crfkit.model.model import Model
from crfkit.space import Dataset
from crfkit.structures import label_options, structures
from crfkit.structures.base import DecodeRequest

# Tokens per batch: large enough that numpy's per-call overhead is amortised,
# small enough that a file of sentences splits over the worker threads.
BATCH_TOKENS = 25_000
PLACEHOLDERS = frozenset({"_", ""})
PROGRESS_SECONDS = 0.25  # at most four progress updates a second


@dataclass
class LabelOptions:
    """What to decode and how to print it; :meth:`validate` refuses contradictions."""

    nbest: int | None = None  # None: not asked for (one path)
    marginals: bool = False
    posterior: bool = False
    force: bool = False
    constraints: str | None = None
    # output only (label_stream)
    scores: bool = False
    nbest_columns: bool = False
    check: bool = False
    labels_only: bool = False
    separator: str = " "
    # Decode the plain best path with Numba's decoder too (see kernel_decoding_pays)
    prefer_kernels: bool = False
    # Decode the plain best path with the fused compiled kernel (see fused_decoding_pays)
    fused: bool = False
    # the structures' label options (crfkit.structures.label_options) by name; None: not given
    structure: dict[str, Any] = field(default_factory=dict)

    @property
    def n(self) -> int:
        return 1 if self.nbest is None else self.nbest

    @property
    def needs_kernels(self) -> bool:
        """Whether labelling needs more than the best path (so Numba's decoder)."""
        return self.n > 1 or self.posterior or self.marginals or self.scores

    @property
    def uses_kernels(self) -> bool:
        """Whether Numba's decoder does the decoding (asked for, or preferred)."""
        return self.needs_kernels or self.prefer_kernels

    @property
    def blocks(self) -> bool:
        """n-best output as one block per path (rather than label columns)."""
        return self.n > 1 and not self.nbest_columns

    def validate(self) -> None:
        for option in label_options():
            value = self.structure.get(option.name)
            problem = option.check(value) if value is not None and option.check else None
            if problem:
                raise UsageError(problem)
        if self.nbest is not None and self.nbest < 1:
            raise UsageError(f"-n/--nbest must be >= 1, got {self.nbest}")
        if self.posterior and self.n > 1:
            raise UsageError("-p/--post gives one label per token: it cannot be combined "
                             "with -n/--nbest")
        if self.nbest_columns and self.nbest is None:
            raise UsageError("--nbest-columns needs -n/--nbest N")
        if self.force and self.check:
            raise UsageError("--force and -c/--check both read the last column: use one")
        if self.constraints is not None and self.constraints not in CONSTRAINTS:
            raise UsageError(f"unknown constraints {self.constraints!r} "
                             f"(expected one of: {', '.join(CONSTRAINTS)})")


@dataclass
class LabelResult:
    """The labelling of one sequence.

    ``ids[r]`` / ``paths[r]`` is the label path of rank ``r`` (best first;
    one path unless n-best, fewer than asked if fewer paths are allowed),
    ``log_probs[r]`` its log-probability given the input and the
    constraints, ``marginals[t, y]`` the probability of label ``y`` (model
    order) at token ``t`` when asked for.
    """

    paths: list[list[str]]
    ids: np.ndarray  # int32 (K, T)
    log_probs: np.ndarray  # float64 (K,)
    marginals: np.ndarray | None  # float64 (T, L)

    @property
    def labels(self) -> list[str]:
        """The output path (rank 0)."""
        return self.paths[0]


@dataclass
class LabelStats:
    """Counts gathered while labelling (token accuracy when gold labels are known)."""

    sequences: int = 0
    tokens: int = 0
    correct: int = 0
    unsettled: int = 0  # skip-chain documents whose belief propagation did not converge
    markers: int = 0  # document markers read (-DOCSTART- lines, or --doc-sep's)


# --- encoding and decoding of one batch -----------------------------------------------------
def encode(model: Model, sequences: list[Sequence], source: str = "<input>") -> Dataset:
    """Arrays for a batch of sequences under the model's frozen vocabulary."""
    return encode_sequences(model.featurizer, sequences, source)


def encode_sequences(featurizer: Featurizer, sequences: list[Sequence], source: str,
                     labels: np.ndarray | None = None) -> Dataset:
    """Arrays for sequences under a frozen vocabulary. ``labels``: their gold ids (a
    development set, which the kernels decode: it does not keep the observation matrix
    that only numpy's best path reads)."""
    pos, components = featurizer.components(sequences, grow=False)
    return encoded_dataset(featurizer, pos.seq_ptr, components, labels,
                           values=lambda obs: occurrence_values(value_matrix(
                               featurizer.patterns, featurizer.listed, sequences, source), obs))


def encoded_dataset(featurizer: Featurizer, seq_ptr: np.ndarray, components,
                    labels: np.ndarray | None = None, values=None) -> Dataset:
    """The kernels' arrays of a batch from its pattern components; ``values(obs)``: the
    tokens' feature values (None: every feature is 1)."""
    obs = featurizer.observations(components)
    tok_ptr, tok_obs = token_lists(obs)
    return Dataset(seq_ptr=seq_ptr, tok_ptr=tok_ptr, tok_obs=tok_obs,
                   labels=np.zeros(0, dtype=np.int32) if labels is None else labels,
                   obs_matrix=obs if labels is None else None,
                   tok_val=None if values is None else values(obs))


class Decoder:
    """Checks, masks and decodes batches under one set of options."""

    def __init__(self, model: Model, options: LabelOptions, source: str) -> None:
        options.validate()
        self.model, self.options, self.source = model, options, source
        self.structure = model.structure
        self.start_ok, self.trans_ok = constraint_masks(model.labels, options.constraints)
        self.label_index = {name: i for i, name in enumerate(model.labels)}
        self.structure.refuse_labelling({"-n/--nbest": options.n > 1,
                                         "-s/--score": options.scores,
                                         "--force": options.force,
                                         "--constraints": bool(options.constraints)})
        _refuse_foreign_options(model, options)

    def check_columns(self, n_columns: int, line: int) -> None:
        """Refuse a batch with fewer columns than the model and the options need."""
        opts = self.options
        expected = self.model.n_token_columns + (1 if opts.check or opts.force else 0)
        if n_columns < expected:
            what = ("token columns plus a gold label (-c)" if opts.check else
                    "token columns plus a forced-label column (--force)" if opts.force else
                    "token columns")
            raise InputError(f"the model needs {expected} columns ({what}), found {n_columns}",
                             path=self.source, line=line)

    def token_mask(self, batch: list[Sequence] | None, data: Dataset) -> np.ndarray | None:
        """Allowed labels per token: forced labels and sequence-start constraints."""
        if not self.options.force and self.start_ok is None:
            return None
        mask = np.ones((data.n_tokens, len(self.model.labels)), dtype=np.bool_)
        if self.options.force:
            forced = self.forced_ids(batch)
            rows = np.flatnonzero(forced >= 0)
            mask[rows] = False
            mask[rows, forced[rows]] = True
        if self.start_ok is not None:  # after forcing: a forced I-X at the start stays banned
            mask[data.seq_ptr[:-1]] &= self.start_ok
        return mask

    def forced_ids(self, batch: list[Sequence]) -> np.ndarray:
        """Label id of the last column of every token, -1 for a placeholder."""
        index = self.label_index
        out = []
        for seq in batch:
            for row, line in zip(seq.rows, seq.lines, strict=True):
                value = row[-1]
                if value in PLACEHOLDERS:
                    out.append(-1)
                    continue
                y = index.get(value)
                if y is None:
                    raise InputError(f"unknown label {value!r} in the forced-label column "
                                     f"(use _ to leave a token free)",
                                     path=self.source, line=line)
                out.append(y)
        return np.array(out, dtype=np.int64)

    def decode(self, batch: list[Sequence], *, log_z: bool, marginals: bool,
               markers: list[int] | None = None) -> Decoded:
        """Decode a batch; ``markers``: the sequences that start a document (structures
        that label documents; without any, every sequence is a document)."""
        self.check_columns(len(batch[0].rows[0]), batch[0].lines[0])
        data = encode(self.model, batch, self.source)
        return self.decode_data(data, self.token_mask(batch, data),
                                lambda s, t: batch[s].lines[t], log_z=log_z,
                                marginals=marginals, sequences=batch, markers=markers)

    def decode_data(self, data: Dataset, token_ok: np.ndarray | None,
                    line_of: Callable[[int, int], int], *, log_z: bool, marginals: bool,
                    sequences: list[Sequence] | None = None,
                    markers: list[int] | None = None) -> Decoded:
        """Decode an encoded batch; ``line_of(s, t)``: the line of token t of sequence s."""
        opts = self.options
        request = DecodeRequest(nbest=opts.n, log_z=log_z, marginals=marginals,
                                posterior=opts.posterior, token_ok=token_ok,
                                trans_ok=self.trans_ok, kernels=opts.prefer_kernels,
                                fused=opts.fused,
                                sequences=sequences, starts=markers or [],
                                values={k: v for k, v in opts.structure.items()
                                        if v is not None})
        dec = self.structure.decode(self.model, data, request)
        self.check_decoded(line_of, data, dec, token_ok,
                           log_z or marginals or opts.posterior)
        return dec

    def check_decoded(self, line_of: Callable[[int, int], int], data: Dataset, dec: Decoded,
                      token_ok: np.ndarray | None, normalised: bool) -> None:
        """One error line for a sequence no allowed path labels, or an underflow."""
        impossible = np.flatnonzero(~(dec.scores[:, 0] > -np.inf))
        if len(impossible):
            s = int(impossible[0])
            t0, t1 = int(data.seq_ptr[s]), int(data.seq_ptr[s + 1])
            t = 0 if token_ok is None else _first_dead_token(token_ok[t0:t1], self.trans_ok)
            raise InputError("no label sequence satisfies both the forced labels and "
                             f"--constraints {self.options.constraints}",
                             path=self.source, line=line_of(s, t))
        if normalised and not np.isfinite(dec.log_z).all():
            s = int(np.flatnonzero(~np.isfinite(dec.log_z))[0])
            raise CrfkitError("numerical underflow in forward-backward (extreme weights)",
                              path=self.source, line=line_of(s, 0))


def _refuse_foreign_options(model: Model, options: LabelOptions) -> None:
    """A structure's label option given for a model of another structure: one line."""
    mine = model.structure.label_options
    for option in label_options():
        if options.structure.get(option.name) is not None and option not in mine:
            owners = [c.name for c in structures() if option in c.label_options]
            raise UsageError(f"{option.flags[-1]} applies to {' and '.join(owners)} models "
                             f"only (this one is a {model.model_type}: a "
                             f"{model.structure.title})")


def _first_dead_token(token_ok: np.ndarray, trans_ok: np.ndarray | None) -> int:
    """First token of a sequence at which no allowed label path can continue."""
    L = token_ok.shape[1]
    step = (trans_ok if trans_ok is not None else np.ones((L, L), dtype=bool)).astype(np.int64)
    alive = token_ok[0]
    for t in range(len(token_ok)):
        if t:
            alive = (alive.astype(np.int64) @ step > 0) & token_ok[t]
        if not alive.any():
            return t
    return len(token_ok) - 1


# --- Python API ------------------------------------------------------------------------------
def label(model: Model, sequences: Iterable[Sequence | list[list[str]]], *, nbest: int = 1,
          marginals: bool = False, posterior: bool = False, force: bool = False,
          constraints: str | None = None) -> list[LabelResult]:
    """Label sequences (``Sequence`` objects or lists of token rows), one result each.

    ``nbest`` best paths, exact; ``posterior`` decoding instead of Viterbi;
    ``marginals`` keeps the token marginals; ``force`` reads the last column
    of each row as a partial labelling to respect (``_`` or ``""``: free);
    ``constraints="iob"`` forbids IOB2-invalid paths. Log-probabilities are
    always computed (one forward-backward per sequence).
    """
    options = LabelOptions(nbest=nbest, marginals=marginals, posterior=posterior, force=force,
                           constraints=constraints)
    decoder = Decoder(model, options, "<input>")
    names = np.array(model.labels, dtype=object)
    results = []
    for batch in batches((_as_sequence(s) for s in sequences), BATCH_TOKENS):
        dec = decoder.decode(batch, log_z=True, marginals=marginals)
        ptr = np.concatenate([[0], np.cumsum([len(seq.rows) for seq in batch])])
        for s in range(len(batch)):
            found = int(np.sum(dec.scores[s] > -np.inf))
            ids = np.ascontiguousarray(dec.paths[ptr[s]:ptr[s + 1], :found].T)
            results.append(LabelResult(
                paths=[names[row].tolist() for row in ids], ids=ids,
                log_probs=dec.scores[s, :found] - dec.log_z[s],
                marginals=None if dec.marginals is None
                else dec.marginals[ptr[s]:ptr[s + 1]].copy()))
    return results


def label_sequences(model: Model, sequences: list[Sequence]) -> list[list[str]]:
    """Predicted label strings of each sequence (its rows hold token columns first)."""
    return [result.labels for result in _viterbi_only(model, sequences)]


def _viterbi_only(model: Model, sequences: list[Sequence]) -> Iterator[LabelResult]:
    decoder = Decoder(model, LabelOptions(), "<input>")
    names = np.array(model.labels, dtype=object)
    for batch in batches(sequences, BATCH_TOKENS):
        dec = decoder.decode(batch, log_z=False, marginals=False)
        ptr = np.concatenate([[0], np.cumsum([len(seq.rows) for seq in batch])])
        for s in range(len(batch)):
            ids = dec.paths[ptr[s]:ptr[s + 1], 0]
            yield LabelResult([names[ids].tolist()], ids[None], dec.scores[s, :1], None)


def _as_sequence(seq: Sequence | list[list[str]]) -> Sequence:
    if isinstance(seq, Sequence):
        return seq
    rows = [list(row) for row in seq]
    if not rows:
        raise UsageError("cannot label an empty sequence")
    return Sequence(rows=rows, lines=list(range(1, len(rows) + 1)))


class TokenMeter:
    """Labelling progress on a terminal: tokens done and tokens/s, one line rewritten in
    place with ``\\r`` at most every :data:`PROGRESS_SECONDS`, erased by :meth:`close`.

    ``also`` adds tokens counted elsewhere (the forked half of a file).
    """

    def __init__(self, stream: TextIO, *, also: Callable[[], int] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.stream, self.also, self.clock = stream, also, clock
        self.tokens = 0
        self.start = self.last = clock()
        self.width = 0  # of the line on screen

    def add(self, tokens: int) -> None:
        self.tokens += tokens
        now = self.clock()
        if now - self.last >= PROGRESS_SECONDS:
            self.last = now
            total = self.tokens + (self.also() if self.also else 0)
            rate = total / max(now - self.start, 1e-9)
            self.show(f"crfkit label: {total:,} tokens, {rate:,.0f} tokens/s")

    def restart(self) -> None:
        """Count from zero again (labelling starts over in one process)."""
        self.tokens, self.also, self.start = 0, None, self.clock()

    def show(self, text: str) -> None:
        self.stream.write("\r" + text.ljust(self.width))
        self.stream.flush()
        self.width = len(text)

    def close(self) -> None:
        """Erase the line (the output or the -c summary follow on a clean screen)."""
        if self.width:
            self.stream.write("\r" + " " * self.width + "\r")
            self.stream.flush()
            self.width = 0


# --- column output ---------------------------------------------------------------------------
def label_stream(model: Model, sequences: Iterable[Item], out: TextIO,
                 options: LabelOptions | None = None, *, source: str = "<input>",
                 threads: int = 1, progress: Callable[[int], None] | None = None
                 ) -> LabelStats:
    """Label a stream of sequences and write column output (formats: module docstring).

    ``sequences`` may hold the other items of :func:`crfkit.io.reader.read_items`:
    document markers are copied, and the output is flushed at every pause.
    With ``options.check`` the last input column is a gold label: it is kept,
    the prediction appended, and token accuracy (of rank 0) counted.
    ``threads``: batches decoded at once (best-path labelling only).
    ``progress`` is called with the number of tokens of every batch written.
    """
    opts = options or LabelOptions()
    decoder = Decoder(model, opts, source)
    writer = ColumnWriter(model.labels, separator=opts.separator, labels_only=opts.labels_only,
                          scores=opts.scores, marginals=opts.marginals, blocks=opts.blocks,
                          paths=1 if opts.blocks else opts.n)
    names = np.array(model.labels, dtype=object)
    stats = LabelStats()
    # The Numba decoder is parallel inside; the numpy one gets a thread per batch.
    documents = model.structure.documents
    workers = 1 if opts.uses_kernels or documents else threads
    log_z, marginals = opts.scores or opts.blocks, opts.scores or opts.marginals

    def decode(batch: Batch) -> Decoded | None:
        if not batch.sequences:
            return None
        return decoder.decode(batch.sequences, log_z=log_z, marginals=marginals,
                              markers=[i for i, _ in batch.markers])

    for batch, dec in decoded_batches(
            decode, item_batches(sequences, BATCH_TOKENS, documents=documents), workers):
        seqs = batch.sequences
        rows = [row for seq in seqs for row in seq.rows]
        seq_ptr = np.concatenate([[0], np.cumsum([len(seq.rows) for seq in seqs])])
        if opts.check and rows:
            gold = np.array([row[-1] for row in rows], dtype=object)
            stats.correct += int(np.sum(gold == names[dec.paths[:, 0]]))
        stats.tokens += len(rows)
        stats.sequences += len(seqs)
        stats.unsettled += dec.unsettled if dec is not None else 0
        stats.markers += len(batch.markers)
        if not batch.empty:
            out.write(writer.format(rows, seq_ptr, dec, batch.markers))
        if batch.flush:
            out.flush()
        if progress is not None:
            progress(len(rows))
    return stats


# An input file this large labels faster through Numba's decoder, start-up included, when
# the model has observation bigrams (the manual gives the measurement).
KERNEL_DECODING_BYTES = 1 << 20


def kernel_decoding_pays(model: Model, input_file: str) -> bool:
    """Whether the plain best path of ``input_file`` is faster through Numba's decoder.

    numpy's best path (:mod:`crfkit.kernels.bestpath`) builds an L x L block per
    token when the model has observation bigrams (``*``/``b`` patterns), where Numba's
    decoder, once loaded, costs a few microseconds a token: a regular file of at least
    :data:`KERNEL_DECODING_BYTES` goes through Numba. A pipe or terminal keeps numpy:
    its size is unknown, and a co-process wants its first labels at once.
    """
    return (model.space.n_b > 0 and input_file != "-" and os.path.isfile(input_file)
            and os.path.getsize(input_file) >= KERNEL_DECODING_BYTES)


# An input file this large labels faster through the fused compiled best path, loading
# Numba included, when the model's structure has one (the manual gives the measurement:
# even at 8 MiB on one core; a file's two halves on two cores each save half as much).
FUSED_DECODING_BYTES = 16 << 20

# The label count of the measurements behind the compiled paths' thresholds (CoNLL-2000).
THRESHOLD_LABELS = 22


def labels_scaled(threshold: int, n_labels: int) -> int:
    """A file-size threshold measured with :data:`THRESHOLD_LABELS` labels, for a model of
    ``n_labels``: numpy's best path costs about L x L a token, so with more labels loading
    Numba pays on a smaller file (Brown's 92 tags: a seventeenth of the size). Fewer
    labels keep it: the other costs of a token do not shrink with them."""
    return int(threshold * min(1.0, (THRESHOLD_LABELS / max(1, n_labels)) ** 2))


def fused_decoding_pays(model: Model, input_file: str) -> bool:
    """Whether the plain best path of ``input_file`` is faster through the fused kernel
    (:mod:`crfkit.kernels.fusedpath`): its model's structure serves it
    (:meth:`~crfkit.structures.base.Structure.fused_best_path`) and the input is a regular
    file of at least :data:`FUSED_DECODING_BYTES` (:func:`labels_scaled`), enough tokens
    to repay the few tenths of a second that loading Numba costs. A pipe or terminal
    keeps numpy, as in :func:`kernel_decoding_pays`."""
    return (model.structure.fused_best_path(model) and input_file != "-"
            and os.path.isfile(input_file)
            and os.path.getsize(input_file)
            >= labels_scaled(FUSED_DECODING_BYTES, model.space.n_labels))


def check_output_encoding(model: Model, encoding: str) -> None:
    """Refuse up front an output encoding that cannot spell the model's labels."""
    for name in model.labels:
        try:
            name.encode(encoding)
        except UnicodeEncodeError:
            raise UsageError(f"the model label {name!r} cannot be written in {encoding}; "
                             f"choose another --encoding") from None
