"""Plain labelling of column blocks: the best path, written after each token's line.

The common ``crfkit label`` (one best path, bare labels, a file or a redirected
file) reads :class:`crfkit.io.columnar.TokenBlock` items instead of row lists:
a column to intern is a slice of a block's fields, the gold labels of ``-c``
another, and an output line is the token's line as read plus the label, so
no pass walks a list per token. The decoding is :class:`Decoder`'s, as for
rows, and the text written is :func:`label_stream`'s, byte for byte. When
the reader meets text it hands to its row parser (document markers, a
column count that changes), the rest of the input goes through
:func:`label_stream`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import fields
from itertools import chain, repeat
from operator import add
from typing import TextIO

import numpy as np

from crfkit.features.columns import columns_of_fields
from crfkit.io.columnar import TokenBlock
from crfkit.io.reader import Item
from crfkit.labelling import label as labelling
from crfkit.labelling.label import (
    Decoder,
    LabelOptions,
    LabelStats,
    encoded_dataset,
    label_stream,
)
from crfkit.model.model import Model
from crfkit.space import Dataset


def columnar_applies(model: Model, options: LabelOptions, *, sep: str, live: bool,
                     doc_sep: str | None) -> bool:
    """Whether :func:`label_blocks` serves this labelling: one best path with bare labels
    (no n-best, scores, marginals, posterior or forced labels), no valued patterns, no
    documents to keep whole, input that is not live, and the reading separator written
    back."""
    featurizer = model.featurizer
    valued = any(featurizer.patterns[p].value for p in featurizer.listed)
    return not (options.needs_kernels or options.force or valued or live or doc_sep
                or model.structure.documents
                or options.separator != ("\t" if sep == "tab" else " "))


def label_blocks(model: Model, items: Iterable[TokenBlock | Item], out: TextIO,
                 options: LabelOptions, *, source: str,
                 progress: Callable[[int], None] | None = None) -> LabelStats:
    """Label :func:`crfkit.io.columnar.read_token_blocks`'s items into ``out`` (the text
    and stats of :func:`label_stream` on the same input)."""
    labeller = _BlockLabeller(model, options, source)
    items = iter(items)
    stats = LabelStats()
    for batch, rest in _block_batches(items):
        if batch:
            labeller.label(batch, out, stats)
            if progress is not None:
                progress(sum(block.n_tokens for block in batch))
        if rest is not None:
            more = label_stream(model, chain([rest], items), out, options, source=source,
                                progress=progress)
            for name in (f.name for f in fields(LabelStats)):
                setattr(stats, name, getattr(stats, name) + getattr(more, name))
    return stats


def _block_batches(items: Iterator[TokenBlock | Item]
                   ) -> Iterator[tuple[list[TokenBlock], Item | None]]:
    """Blocks cut into the batches :func:`crfkit.labelling.batches.item_batches` makes of
    the same sequences (:data:`~crfkit.labelling.label.BATCH_TOKENS` tokens: a batch ends
    with the sequence that reaches it); the last batch comes with the first item that is
    not a block (the row reader's), if any."""
    batch: list[TokenBlock] = []
    size = 0
    for item in items:
        if not isinstance(item, TokenBlock):
            yield batch, item
            return
        rest: TokenBlock | None = item
        while rest is not None:
            block, rest = rest.split(labelling.BATCH_TOKENS - size)
            batch.append(block)
            size += block.n_tokens
            if size >= labelling.BATCH_TOKENS:
                yield batch, None
                batch, size = [], 0
    if batch:
        yield batch, None


class _BlockLabeller:
    """Encodes, decodes and writes batches of blocks under one set of options."""

    def __init__(self, model: Model, options: LabelOptions, source: str) -> None:
        self.model, self.options = model, options
        self.decoder = Decoder(model, options, source)
        sep = "" if options.labels_only else options.separator
        self.tails = np.array([sep + name for name in model.labels], dtype=object)

    def label(self, blocks: list[TokenBlock], out: TextIO, stats: LabelStats) -> None:
        n_columns = blocks[0].n_columns
        fields = list(chain.from_iterable(block.fields for block in blocks))
        lines = np.concatenate([block.lines for block in blocks])
        lengths = np.concatenate([block.lengths for block in blocks])
        self.decoder.check_columns(n_columns, int(lines[0]))
        data = self.encode(fields, n_columns, lengths, int(lines[0]))
        seq_ptr = data.seq_ptr
        dec = self.decoder.decode_data(
            data, self.decoder.token_mask(None, data),
            lambda s, t: int(lines[seq_ptr[s] + t]), log_z=False, marginals=False)
        path = dec.paths[:, 0]
        if self.options.check:
            gold = fields[n_columns - 1::n_columns]
            ids = np.fromiter(map(self.decoder.label_index.get, gold, repeat(-1)), dtype=np.int64,
                              count=len(gold))
            stats.correct += int(np.sum(ids == path))
        stats.tokens += len(path)
        stats.sequences += len(lengths)
        tails = self.tails[path]
        ends = seq_ptr[1:] - 1
        tails[ends] = tails[ends] + "\n"  # a blank line after each sequence
        if self.options.labels_only:
            text = "\n".join(tails.tolist())
        else:
            texts = chain.from_iterable(block.texts for block in blocks)
            text = "\n".join(map(add, texts, tails.tolist()))
        out.write(text + "\n")

    def encode(self, fields: list[str], n_columns: int, lengths: np.ndarray,
               first_line: int) -> Dataset:
        """The batch's arrays (as :func:`crfkit.labelling.label.encode_sequences` makes
        them of rows)."""
        featurizer = self.model.featurizer
        wanted = {t[1] for t in featurizer.transforms}
        columns = columns_of_fields(fields, n_columns, lengths, wanted, first_line)
        pos, components = featurizer.components_of(columns, grow=False)
        return encoded_dataset(featurizer, pos.seq_ptr, components)
