"""Labelling: sequences -> features (frozen vocabulary) -> Viterbi -> label strings.

Works batch by batch over a streaming reader, so memory stays bounded
whatever the input size, and output order is input order.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TextIO

import numpy as np

from crfkit import config, kernels
from crfkit.errors import InputError
from crfkit.features import token_lists
from crfkit.model import Model
from crfkit.objective import partition_blocks
from crfkit.patterns import check_columns
from crfkit.reader import Sequence
from crfkit.space import Dataset

BATCH_TOKENS = 50_000


@dataclass
class LabelStats:
    """Counts gathered while labelling (token accuracy when gold labels are known)."""

    sequences: int = 0
    tokens: int = 0
    correct: int = 0


def encode(model: Model, sequences: list[Sequence]) -> Dataset:
    """Arrays for a batch of sequences under the model's frozen vocabulary."""
    featurizer = model.featurizer
    pos, components = featurizer.components(sequences, grow=False)
    tok_ptr, tok_obs = token_lists(featurizer.observations(components))
    return Dataset(seq_ptr=pos.seq_ptr, tok_ptr=tok_ptr, tok_obs=tok_obs,
                   labels=np.zeros(0, dtype=np.int32))


def viterbi(model: Model, data: Dataset) -> tuple[np.ndarray, np.ndarray]:
    """Best label id of every token and the score of every sequence."""
    s = model.space
    labels = np.zeros(data.n_tokens, dtype=np.int32)
    scores = np.zeros(data.n_seqs)
    if data.n_seqs:
        blocks = partition_blocks(data.lengths, config.N_BLOCKS)
        kernels.viterbi_blocks(model.weights, data.seq_ptr, data.tok_ptr, data.tok_obs, s.u_ptr,
                               s.u_lab, s.b_ptr, s.b_prev, s.b_cur, s.n_u, s.trans_offset,
                               s.has_trans, s.n_b > 0, s.n_labels, blocks, labels, scores)
    return labels, scores


def label_sequences(model: Model, sequences: list[Sequence]) -> list[list[str]]:
    """Predicted label strings of each sequence (its rows hold token columns first)."""
    data = encode(model, sequences)
    ids, _ = viterbi(model, data)
    names = np.array(model.labels, dtype=object)
    out = names[ids]
    return [out[a:b].tolist() for a, b in zip(data.seq_ptr[:-1], data.seq_ptr[1:], strict=False)]


def batches(sequences: Iterable[Sequence], max_tokens: int = BATCH_TOKENS
            ) -> Iterator[list[Sequence]]:
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


def label_stream(model: Model, sequences: Iterable[Sequence], out: TextIO, *,
                 check: bool = False, labels_only: bool = False, separator: str = " ",
                 source: str = "<input>") -> LabelStats:
    """Label a stream of sequences and write column output, one blank line between sequences.

    With ``check`` the last input column is a gold label: it is kept, the
    prediction appended, and token accuracy counted.
    """
    stats = LabelStats()
    expected = model.n_token_columns + (1 if check else 0)
    for batch in batches(sequences):
        n_columns = len(batch[0].rows[0])
        if n_columns < expected:
            what = "token columns plus a gold label (-c)" if check else "token columns"
            raise InputError(f"the model needs {expected} columns ({what}), found {n_columns}",
                             path=source, line=batch[0].lines[0])
        check_columns(model.patterns, n_columns, label_column=False)
        predicted = label_sequences(model, batch)
        lines = []
        for seq, labels in zip(batch, predicted, strict=False):
            for row, label in zip(seq.rows, labels, strict=False):
                if labels_only:
                    lines.append(label)
                else:
                    lines.append(separator.join(row) + separator + label)
                if check:
                    stats.correct += row[-1] == label
            lines.append("")
            stats.tokens += len(labels)
        stats.sequences += len(batch)
        out.write("\n".join(lines) + "\n")
    return stats
