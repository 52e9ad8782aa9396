"""Labelling: sequences -> features (frozen vocabulary) -> decoding -> labels and scores.

:func:`label` is the Python API (one :class:`LabelResult` per sequence);
:func:`label_stream` writes column output batch by batch over a streaming
reader, so memory stays bounded whatever the input size, and output order
is input order. Decoding itself lives in :mod:`crfkit.kernels.bestpath` when only
the best path is wanted (numpy only, so plain labelling never waits for
Numba to load), and in :mod:`crfkit.kernels.decoder` (Numba kernels, imported on
first use) for n-best, scores, marginals and posterior decoding.

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
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from itertools import islice
from typing import TextIO

import numpy as np

from crfkit.errors import CrfkitError, InputError, UsageError
from crfkit.features.extract import token_lists
from crfkit.features.values import occurrence_values, value_matrix
from crfkit.io.reader import PAUSE, DocStart, Item, Sequence
from crfkit.kernels.bestpath import Decoded, best_paths
from crfkit.labelling.constraints import CONSTRAINTS, constraint_masks
from crfkit.labelling.output import ColumnWriter
from crfkit.model.model import Model
from crfkit.model.types import MODEL_TYPES
from crfkit.space import Dataset

# Tokens per batch: large enough that numpy's per-call overhead is amortised,
# small enough that a file of sentences splits over the worker threads.
BATCH_TOKENS = 25_000
SERIAL_BATCHES = 2  # decoded in the calling thread before worker threads start
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
    # skip-chain models: belief propagation's damping and rounds instead of the recorded ones
    bp_damping: float | None = None
    bp_maxiter: int | None = None

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
        if self.bp_damping is not None and not 0 <= self.bp_damping < 1:
            raise UsageError(f"--bp-damping must be in [0, 1), got {self.bp_damping}")
        if self.bp_maxiter is not None and self.bp_maxiter < 1:
            raise UsageError(f"--bp-maxiter must be >= 1, got {self.bp_maxiter}")
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
    featurizer = model.featurizer
    pos, components = featurizer.components(sequences, grow=False)
    obs = featurizer.observations(components)
    tok_ptr, tok_obs = token_lists(obs)
    tok_val = occurrence_values(value_matrix(featurizer.patterns, featurizer.listed, sequences,
                                             source), obs)
    return Dataset(seq_ptr=pos.seq_ptr, tok_ptr=tok_ptr, tok_obs=tok_obs,
                   labels=np.zeros(0, dtype=np.int32), obs_matrix=obs, tok_val=tok_val)


class _Decoder:
    """Checks, masks and decodes batches under one set of options."""

    def __init__(self, model: Model, options: LabelOptions, source: str) -> None:
        options.validate()
        self.model, self.options, self.source = model, options, source
        self.start_ok, self.trans_ok = constraint_masks(model.labels, options.constraints)
        self.label_index = {name: i for i, name in enumerate(model.labels)}
        self.skip = MODEL_TYPES[model.model_type].skip_edges
        if self.skip:
            refused = [name for name, on in (("-n/--nbest", options.n > 1),
                                             ("-s/--score", options.scores),
                                             ("--force", options.force),
                                             ("--constraints", options.constraints))
                       if on]
            if refused:
                raise UsageError(f"{refused[0]} is not available with a {model.model_type} "
                                 f"model (its labels come from belief propagation; -p and "
                                 f"--marginals are)")
        elif options.bp_damping is not None or options.bp_maxiter is not None:
            name = "--bp-damping" if options.bp_damping is not None else "--bp-maxiter"
            raise UsageError(f"{name} applies to skipchain models only (this one is a "
                             f"{model.model_type}: it has no belief propagation)")

    def check_columns(self, batch: list[Sequence]) -> None:
        opts = self.options
        expected = self.model.n_token_columns + (1 if opts.check or opts.force else 0)
        n_columns = len(batch[0].rows[0])
        if n_columns < expected:
            what = ("token columns plus a gold label (-c)" if opts.check else
                    "token columns plus a forced-label column (--force)" if opts.force else
                    "token columns")
            raise InputError(f"the model needs {expected} columns ({what}), found {n_columns}",
                             path=self.source, line=batch[0].lines[0])

    def token_mask(self, batch: list[Sequence], data: Dataset) -> np.ndarray | None:
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
        """Decode a batch; ``markers``: the sequences that start a document (skip-chain
        models; without any, every sequence is a document)."""
        self.check_columns(batch)
        data = encode(self.model, batch, self.source)
        if self.skip:
            from crfkit.structures.skipchain.documents import batch_starts, decode_documents

            return decode_documents(self.model, batch, data, batch_starts(len(batch), markers),
                                    posterior=self.options.posterior, marginals=marginals,
                                    damping=self.options.bp_damping,
                                    maxiter=self.options.bp_maxiter)
        token_ok = self.token_mask(batch, data)
        opts = self.options
        if opts.n == 1 and not (log_z or marginals or opts.posterior or opts.prefer_kernels) \
                and data.tok_val is None and self.model.space.order == 1:
            dec = best_paths(self.model, data, token_ok=token_ok, trans_ok=self.trans_ok)
        else:
            # Numba: loaded only when needed; the decoder of the model's label order
            from crfkit.structures.order2.pair_decoder import decode_any

            dec = decode_any(self.model, data, nbest=opts.n, log_z=log_z, marginals=marginals,
                             posterior=opts.posterior, token_ok=token_ok,
                             trans_ok=self.trans_ok)
        impossible = np.flatnonzero(~(dec.scores[:, 0] > -np.inf))
        if len(impossible):
            s = int(impossible[0])
            t0, t1 = int(data.seq_ptr[s]), int(data.seq_ptr[s + 1])
            t = 0 if token_ok is None else _first_dead_token(token_ok[t0:t1], self.trans_ok)
            raise InputError("no label sequence satisfies both the forced labels and "
                             f"--constraints {opts.constraints}",
                             path=self.source, line=batch[s].lines[t])
        if (log_z or marginals or opts.posterior) and not np.isfinite(dec.log_z).all():
            s = int(np.flatnonzero(~np.isfinite(dec.log_z))[0])
            raise CrfkitError("numerical underflow in forward-backward (extreme weights)",
                              path=self.source, line=batch[s].lines[0])
        return dec


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
    decoder = _Decoder(model, options, "<input>")
    names = np.array(model.labels, dtype=object)
    results = []
    for batch in batches(_as_sequence(s) for s in sequences):
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
    decoder = _Decoder(model, LabelOptions(), "<input>")
    names = np.array(model.labels, dtype=object)
    for batch in batches(sequences):
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


def batches(sequences: Iterable[Sequence], max_tokens: int | None = None
            ) -> Iterator[list[Sequence]]:
    """Group a stream of sequences into lists of about ``max_tokens`` tokens
    (default :data:`BATCH_TOKENS`)."""
    if max_tokens is None:
        max_tokens = BATCH_TOKENS
    batch: list[Sequence] = []
    size = 0
    for seq in sequences:
        batch.append(seq)
        size += len(seq.rows)
        if size >= max_tokens:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


@dataclass
class Batch:
    """Sequences decoded together, the document markers among them, and whether the
    input paused after them (then the output is flushed: someone may be waiting)."""

    sequences: list[Sequence] = field(default_factory=list)
    markers: list[tuple[int, DocStart]] = field(default_factory=list)  # (before sequence i, m)
    flush: bool = False

    @property
    def empty(self) -> bool:
        return not (self.sequences or self.markers)


def item_batches(items: Iterable[Item], max_tokens: int | None = None, *,
                 documents: bool = False) -> Iterator[Batch]:
    """Group the reader's items into batches of about ``max_tokens`` tokens (default
    :data:`BATCH_TOKENS`), ending a batch early at every :data:`~crfkit.io.reader.PAUSE`.

    ``documents``: a full batch ends only before a ``-DOCSTART-`` (or, in a file
    without markers, at any sequence), so skip-chain models see whole documents.
    """
    if max_tokens is None:
        max_tokens = BATCH_TOKENS
    batch, size = Batch(), 0
    marked = False
    for item in items:
        if item is PAUSE:  # even an empty batch: what was written before must be flushed
            batch.flush = True
            yield batch
            batch, size = Batch(), 0
        elif isinstance(item, DocStart):
            if documents and size >= max_tokens:
                yield batch
                batch, size = Batch(), 0
            marked = True
            batch.markers.append((len(batch.sequences), item))
        else:
            batch.sequences.append(item)
            size += len(item.rows)
            if size >= max_tokens and not (documents and marked):
                yield batch
                batch, size = Batch(), 0
    if not batch.empty:
        yield batch


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
    decoder = _Decoder(model, opts, source)
    writer = ColumnWriter(model.labels, separator=opts.separator, labels_only=opts.labels_only,
                          scores=opts.scores, marginals=opts.marginals, blocks=opts.blocks,
                          paths=1 if opts.blocks else opts.n)
    names = np.array(model.labels, dtype=object)
    stats = LabelStats()
    # The Numba decoder is parallel inside; the numpy one gets a thread per batch.
    workers = 1 if opts.uses_kernels or decoder.skip else threads
    for batch, dec in decoded_batches(decoder, item_batches(sequences, documents=decoder.skip),
                                      workers,
                                      log_z=opts.scores or opts.blocks,
                                      marginals=opts.scores or opts.marginals):
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
# the model has observation bigrams (module docstring of kernel_decoding_pays).
KERNEL_DECODING_BYTES = 1 << 20


def kernel_decoding_pays(model: Model, input_file: str) -> bool:
    """Whether the plain best path of ``input_file`` is faster through Numba's decoder.

    numpy's best path (:mod:`crfkit.kernels.bestpath`) builds an L x L block per
    token when the model has observation bigrams (``*``/``b`` patterns): ~18 us a
    token on CoNLL-2000 with Wapiti's chunking patterns, against ~1 s to load Numba
    and its cached decoder, after which a token costs a few microseconds. The break
    even is ~60k tokens (~0.8 MB of CoNLL-2000 text); a regular file of at least
    :data:`KERNEL_DECODING_BYTES` goes through Numba. A pipe or terminal keeps numpy:
    its size is unknown, and a co-process wants its first labels at once.
    """
    return (model.space.n_b > 0 and input_file != "-" and os.path.isfile(input_file)
            and os.path.getsize(input_file) >= KERNEL_DECODING_BYTES)


def decoded_batches(decoder: _Decoder, batches: Iterable[Batch], threads: int, *,
                    log_z: bool, marginals: bool) -> Iterator[tuple[Batch, Decoded | None]]:
    """Each batch with its decoding (None without sequences), in input order, ``threads``
    batches decoding at once.

    numpy releases the GIL in parts of its array loops, so batches decoded in
    threads overlap somewhat (and overlap the reading of the next batch): on
    5M tokens two threads label in 19.0-20.0 s against 20.2-20.9 s with one.
    (Little more: ``take`` and ufuncs on arrays of a few thousand rows hold the
    GIL much of the time; two threads doing them run no faster than one.)
    At most ``threads + 1`` batches are in flight, so memory stays bounded; a
    batch to flush is handed over with all before it at once. An error is
    raised after the batches before it have been handed over, as it would be
    in one thread. The first :data:`SERIAL_BATCHES` are decoded in the calling
    thread: for a short input the hand-offs cost more than the overlap gains
    (CoNLL-2000 test, 2 batches: 0.35 s serial, 0.38 s with threads).
    """
    def decode(batch: Batch) -> Decoded | None:
        if not batch.sequences:
            return None
        return decoder.decode(batch.sequences, log_z=log_z, marginals=marginals,
                              markers=[i for i, _ in batch.markers])

    batches = iter(batches)
    for batch in islice(batches, None if threads <= 1 else SERIAL_BATCHES):
        yield batch, decode(batch)
    if threads <= 1:
        return
    with ThreadPoolExecutor(threads) as pool:
        pending: deque = deque()
        for batch in batches:
            pending.append((batch, pool.submit(decode, batch)))
            keep = 0 if batch.flush else threads
            while len(pending) > keep:
                done, future = pending.popleft()
                yield done, future.result()
        while pending:
            done, future = pending.popleft()
            yield done, future.result()


def check_output_encoding(model: Model, encoding: str) -> None:
    """Refuse up front an output encoding that cannot spell the model's labels."""
    for name in model.labels:
        try:
            name.encode(encoding)
        except UnicodeEncodeError:
            raise UsageError(f"the model label {name!r} cannot be written in {encoding}; "
                             f"choose another --encoding") from None
