"""Column output of ``crfkit label``: token lines, n-best blocks, probabilities.

Formats (``SEP`` is the output column separator: a space, or a tab with
``--sep tab``):

* each token line is the input row, ``SEP``, the predicted label (``-l``:
  the label alone); a blank line ends each sequence;
* ``-s/--score``: a line ``# LOGPROB`` (log-probability of the output path,
  given the input and the constraints) before each sequence, and each
  predicted label written ``LABEL/PROB``, PROB its token marginal;
* ``--marginals``: after the predicted label(s), one ``LABEL/PROB`` column
  per model label, in model label order (``crfkit info`` lists it);
* ``-n N``: N blocks per sequence, best first, each a header
  ``# RANK LOGPROB`` (RANK from 0, as CRF++) then the token lines and a
  blank line; fewer blocks when fewer label sequences are allowed;
* ``-n N --nbest-columns``: one block per sequence with N label columns
  (rank 0 first); missing ranks are ``_``, and the ``-s`` header lists N
  log-probabilities (``-inf`` for missing ones).

A ``-DOCSTART-`` line (a document marker, not labelled) is written as read,
then the outside label ``O`` in every predicted cell (``-l``: the cells
alone), so that the output stays aligned with the input and ``crfkit eval``
scores it as one O/O token; a marker with fewer columns than the token lines
is padded with ``O`` to their width. Its blank line follows it only if the
input had one. No header or block is written for it.

Probabilities and log-probabilities have four decimals. ``--marginals`` on
CoNLL-2000 writes 23 cells per token, a million for the test file: cells
with probabilities are formatted by a Numba kernel (:mod:`crfkit.labelling.cells`)
into one byte buffer, since a million Python f-strings would take longer
than the labelling itself. Bare labels (the plain output) are only a lookup
and a join, done without Numba so that plain labelling never loads it.
"""

from __future__ import annotations

from collections.abc import Sequence as Seq

import numpy as np

from crfkit.config import PROB_STEPS
from crfkit.io.reader import DocStart
from crfkit.kernels.bestpath import Decoded

OUTSIDE = "O"  # the cells of a document marker


class ColumnWriter:
    """Formats decoded batches as column text (see the module docstring)."""

    def __init__(self, labels: list[str], *, separator: str = " ", labels_only: bool = False,
                 scores: bool = False, marginals: bool = False, blocks: bool = False,
                 paths: int = 1) -> None:
        encoded = [name.encode("utf-8") for name in labels]
        self.blob = np.frombuffer(b"".join(encoded), dtype=np.uint8) if encoded else \
            np.zeros(0, np.uint8)
        self.offsets = np.concatenate([[0], np.cumsum([len(b) for b in encoded])]).astype(
            np.int64)
        self.names = np.array([*labels, "_"], dtype=object)
        self.n_labels = len(labels)
        self.sep = separator
        self.labels_only = labels_only
        self.scores = scores
        self.marginals = marginals
        self.blocks = blocks
        # Cells after the input row: ``paths`` labels (columns), then the marginals.
        self.n_cells = paths + (len(labels) if marginals else 0)
        self.width = 0  # columns of the input's token lines, once seen

    def cells(self, ids: np.ndarray, q: np.ndarray) -> list[str]:
        """One string per row of ``ids`` (n, K): its cells joined by the separator.

        ``q`` holds probabilities in steps of 1/10000, or -1 for a bare label.
        """
        if not (q >= 0).any():
            return self.label_cells(ids)
        from crfkit.labelling.cells import cells_text  # Numba: only when probabilities are printed

        text = cells_text(self.blob, self.offsets, np.ascontiguousarray(ids, dtype=np.int64),
                          np.ascontiguousarray(q, dtype=np.int64), ord(self.sep))
        return text.tobytes().decode("utf-8").split("\n")[:-1]

    def label_cells(self, ids: np.ndarray) -> list[str]:
        """Bare-label cells: label names (``_`` for a missing rank, id -1) joined per row."""
        names = self.names[ids]  # id -1 picks the trailing "_"
        if names.shape[1] == 1:
            return names[:, 0].tolist()
        return [self.sep.join(row) for row in names.tolist()]

    def marker_lines(self, marker: DocStart) -> list[str]:
        """A document marker's output lines (module docstring)."""
        cells = [OUTSIDE] * self.n_cells
        if not self.labels_only:
            pad = [OUTSIDE] * (self.width - len(marker.fields))
            cells = [*marker.fields, *pad, *cells]
        line = self.sep.join(cells)
        return [line, ""] if marker.blank_after else [line]

    def format(self, rows: list[list[str]], seq_ptr: np.ndarray, dec: Decoded | None,
               markers: Seq[tuple[int, DocStart]] = ()) -> str:
        """Text of one batch: ``rows`` are the input rows, ``seq_ptr`` the sequence offsets,
        ``markers`` the document markers, each before the sequence of its index."""
        if dec is None:  # markers only
            lines = [line for _, marker in markers for line in self.marker_lines(marker)]
            return "\n".join(lines) + "\n" if lines else ""
        self.width = len(rows[0])
        sep = self.sep
        paths = dec.paths  # (n_tokens, K), -1 for a missing rank
        K = paths.shape[1]
        if self.scores:
            q_paths = _steps(np.take_along_axis(dec.marginals, np.maximum(paths, 0), axis=1))
        else:
            q_paths = np.full(paths.shape, -1, dtype=np.int64)
        spans = [slice(r, r + 1) for r in range(K)] if self.blocks else [slice(0, K)]
        columns = []
        for span in spans:
            ids, q = paths[:, span], q_paths[:, span]
            if self.marginals:  # every label's cell after the predicted label(s)
                every = np.broadcast_to(np.arange(self.n_labels), dec.marginals.shape)
                ids = np.hstack([ids, every])
                q = np.hstack([q, _steps(dec.marginals)])
            col = self.cells(ids, q)
            if not self.labels_only:  # the row, then the cells (one join a line: the fastest)
                col = [sep.join([*row, cell]) for row, cell in zip(rows, col, strict=True)]
            columns.append(col)

        want_lp = self.scores or self.blocks
        log_probs = dec.scores - dec.log_z[:, None] if want_lp else None
        lines: list[str] = []
        m = 0  # next marker
        for s in range(len(seq_ptr) - 1):
            while m < len(markers) and markers[m][0] == s:
                lines.extend(self.marker_lines(markers[m][1]))
                m += 1
            t0, t1 = int(seq_ptr[s]), int(seq_ptr[s + 1])
            if self.blocks:
                for r in range(int(np.sum(dec.scores[s] > -np.inf))):
                    lines.append(f"# {r} {log_probs[s, r]:.4f}")
                    lines.extend(columns[r][t0:t1])
                    lines.append("")
                continue
            if self.scores:
                lines.append("# " + " ".join(f"{x:.4f}" for x in log_probs[s].tolist()))
            lines.extend(columns[0][t0:t1])
            lines.append("")
        for _, marker in markers[m:]:
            lines.extend(self.marker_lines(marker))
        return "\n".join(lines) + "\n" if lines else ""


def _steps(probs: np.ndarray) -> np.ndarray:
    """Probabilities as integers in 0..PROB_STEPS (what four decimals show)."""
    return np.rint(np.clip(probs, 0.0, 1.0) * PROB_STEPS).astype(np.int64)
