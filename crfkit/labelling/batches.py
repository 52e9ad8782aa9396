"""Labelling in batches: the reader's items grouped into batches of about N tokens, and the
batches decoded in input order, several at once.

A batch bounds memory whatever the input size; a pause of live input (a pipe or a
terminal: :data:`~crfkit.io.reader.PAUSE`) ends one early, so a co-process gets its labels
at once; structures that label whole documents see batches cut only before a document.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from itertools import islice

from crfkit.io.reader import PAUSE, DocStart, Item, Sequence
from crfkit.kernels.decoded import Decoded

SERIAL_BATCHES = 2  # decoded in the calling thread before worker threads start


def batches(sequences: Iterable[Sequence], max_tokens: int) -> Iterator[list[Sequence]]:
    """Group a stream of sequences into lists of about ``max_tokens`` tokens."""
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


def item_batches(items: Iterable[Item], max_tokens: int, *,
                 documents: bool = False) -> Iterator[Batch]:
    """Group the reader's items into batches of about ``max_tokens`` tokens, ending a batch
    early at every :data:`~crfkit.io.reader.PAUSE`.

    ``documents``: a full batch ends only before a ``-DOCSTART-`` (or, in a file
    without markers, at any sequence), so such structures see whole documents.
    """
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


def decoded_batches(decode: Callable[[Batch], Decoded | None], batches: Iterable[Batch],
                    threads: int) -> Iterator[tuple[Batch, Decoded | None]]:
    """Each batch with ``decode(batch)``, in input order, ``threads`` batches decoding at once.

    numpy releases the GIL in parts of its array loops, so batches decoded in threads
    overlap somewhat, and overlap the reading of the next batch. At most ``threads + 1``
    batches are in flight, so memory stays bounded; a batch to flush is handed over with
    all before it at once. An error is raised after the batches before it have been
    handed over, as it would be in one thread. The first :data:`SERIAL_BATCHES` are
    decoded in the calling thread: for a short input the hand-offs cost more than the
    overlap gains.
    """
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
