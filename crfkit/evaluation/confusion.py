"""Error analysis for ``crfkit eval --confusion``: which tags and which chunks go wrong.

conlleval says how many chunks are right; this says how the others are
wrong. Two views:

* **Token confusion**: for each gold tag (row), how many of its tokens got
  each predicted tag (column); the diagonal is the correct tokens. Counted
  from :attr:`crfkit.evaluation.counts.EvalReport.tag_pairs`.
* **Chunk error classes**. Chunks are read with conlleval's rules
  (:mod:`crfkit.evaluation.scoring`: the same options ``-r``, ``-o``, ``--scheme``);
  a chunk is a span of tokens and the type of its first token. Every gold
  chunk falls in exactly one class:

  - *correct*: a predicted chunk has the same span and type;
  - *wrong type*: a predicted chunk has the same span, another type;
  - *wrong boundary*: no predicted chunk has its span, but one overlaps it;
  - *missed*: no predicted chunk overlaps it;

  and a predicted chunk that overlaps no gold chunk is *spurious*. So
  ``gold = correct + wrong type + wrong boundary + missed`` and
  ``found = correct + wrong type + spurious + (predicted chunks with a wrong
  boundary)``, the last reported as ``found_wrong_boundary``. For tag files
  that follow their scheme, *correct* is conlleval's count of correct chunks.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import chain

import numpy as np

from crfkit.evaluation.counts import EvalReport
from crfkit.evaluation.scoring import chunk_end, chunk_start, split_tag

__all__ = ["CLASSES", "ChunkErrors", "chunk_errors", "chunk_spans", "confusion_document",
           "confusion_matrix", "format_confusion"]

CLASSES = ("correct", "wrong_type", "wrong_boundary", "missed", "spurious")
"""The chunk error classes, in the order they are printed."""

Span = tuple[int, int, str]  # first token, one past the last, type


@dataclass
class ChunkErrors:
    """Counts of the chunk classes (module docstring), overall and per type.

    ``by_type[t]`` counts gold chunks of type ``t`` by class, and under
    ``spurious`` the spurious predicted chunks of type ``t``.
    ``type_confusions[(gold, predicted)]`` counts the wrong-type pairs.
    """

    gold: int = 0
    found: int = 0
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CLASSES, 0))
    found_wrong_boundary: int = 0
    by_type: dict[str, dict[str, int]] = field(default_factory=dict)
    type_confusions: dict[tuple[str, str], int] = field(default_factory=dict)

    def as_dict(self) -> dict:
        """The JSON form (``eval --format json --confusion``: ``chunk_errors``)."""
        return {"gold": self.gold, "found": self.found, **self.counts,
                "found_wrong_boundary": self.found_wrong_boundary,
                "types": self.by_type,
                "type_confusions": [{"gold": g, "predicted": p, "count": n}
                                    for (g, p), n in self.type_confusions.items()]}


def chunk_spans(tags: Sequence[str | None], *, outside: str = "O", raw: bool = False,
                scheme: str | None = None) -> list[Span]:
    """The chunks of one tag column (``None`` a sentence break), by conlleval's rules."""
    iobes = scheme == "iobes"
    spans: list[Span] = []
    prev, prev_type = "O", ""
    start, start_type = -1, ""
    for i, tag in enumerate(chain(tags, [None])):  # a break after the last line ends all
        cur, cur_type = split_tag(tag, raw, outside, scheme is not None)
        if start >= 0 and chunk_end(prev, cur, prev_type, cur_type, iobes):
            spans.append((start, i, start_type))
            start = -1
        if chunk_start(prev, cur, prev_type, cur_type, iobes):
            if start >= 0:  # a start without an end (ill-formed tags): the open chunk ends
                spans.append((start, i, start_type))
            start, start_type = i, cur_type
        prev, prev_type = cur, cur_type
    return spans


def _owners(spans: list[Span], n: int) -> np.ndarray:
    """Per token, the index of the chunk covering it, or -1."""
    owner = np.full(n + 1, -1, dtype=np.int64)
    for k, (s, e, _) in enumerate(spans):
        owner[s:e] = k
    return owner


def chunk_errors(gold: Sequence[str | None], pred: Sequence[str | None], *,
                 outside: str = "O", raw: bool = False,
                 scheme: str | None = None) -> ChunkErrors:
    """Classify every gold and predicted chunk (module docstring)."""
    g = chunk_spans(gold, outside=outside, raw=raw, scheme=scheme)
    p = chunk_spans(pred, outside=outside, raw=raw, scheme=scheme)
    n = len(gold)
    pred_owner, gold_owner = _owners(p, n), _owners(g, n)
    pred_at = {(s, e): t for s, e, t in p}
    gold_at = {(s, e): t for s, e, t in g}
    out = ChunkErrors(gold=len(g), found=len(p))
    types: dict[str, Counter[str]] = {}
    confusions: Counter[tuple[str, str]] = Counter()
    for s, e, t in g:
        other = pred_at.get((s, e))
        if other == t:
            kind = "correct"
        elif other is not None:
            kind = "wrong_type"
            confusions[(t, other)] += 1
        elif (pred_owner[s:e] >= 0).any():
            kind = "wrong_boundary"
        else:
            kind = "missed"
        types.setdefault(t, Counter())[kind] += 1
    for s, e, t in p:
        if (s, e) in gold_at:
            continue
        if (gold_owner[s:e] >= 0).any():
            out.found_wrong_boundary += 1
        else:
            types.setdefault(t, Counter())["spurious"] += 1
    for t in sorted(types):
        out.by_type[t] = {kind: types[t][kind] for kind in CLASSES}
        for kind in CLASSES:
            out.counts[kind] += types[t][kind]
    out.type_confusions = dict(sorted(confusions.items(), key=lambda kv: (-kv[1], kv[0])))
    return out


def confusion_matrix(report: EvalReport) -> tuple[list[str], np.ndarray]:
    """Tags (sorted as ``--tokens`` lists them) and the token counts: row gold, column predicted."""
    tags = list(report.labels())
    index = {tag: i for i, tag in enumerate(tags)}
    matrix = np.zeros((len(tags), len(tags)), dtype=np.int64)
    for (gold, pred), count in report.tag_pairs.items():
        matrix[index[gold], index[pred]] += count
    return tags, matrix


def confusion_document(report: EvalReport, errors: ChunkErrors) -> dict:
    """The keys ``eval --format json --confusion`` adds: ``confusion`` and ``chunk_errors``."""
    tags, matrix = confusion_matrix(report)
    return {"confusion": {"tags": tags, "matrix": matrix.tolist()},
            "chunk_errors": errors.as_dict()}


def format_confusion(report: EvalReport, errors: ChunkErrors) -> str:
    """The text ``--confusion`` appends to the report: the matrix, then the chunk classes."""
    tags, matrix = confusion_matrix(report)
    first = max([len(t) for t in tags], default=0)
    widths = [max(len(t), len(str(int(matrix[:, j].max())))) + 1 for j, t in enumerate(tags)]
    out = ["token confusion: rows are gold tags, columns predicted tags ('.' is 0)\n",
           " " * first + "".join(f"{t:>{w}}" for t, w in zip(tags, widths, strict=True))
           + "\n"]
    for tag, row in zip(tags, matrix.tolist(), strict=True):
        cells = "".join(f"{(str(v) if v else '.'):>{w}}" for v, w in zip(row, widths,
                                                                           strict=True))
        out.append(f"{tag:>{first}}{cells}\n")
    c = errors.counts
    out.append(f"chunk errors: {errors.gold} gold chunks, {errors.found} found, "
               f"{c['correct']} correct\n")
    notes = {"wrong_type": "same span, another type",
             "wrong_boundary": f"overlapped by {errors.found_wrong_boundary} predicted "
                               f"chunk(s) with other bounds",
             "missed": "no predicted chunk overlaps",
             "spurious": "predicted, overlaps no gold chunk"}
    for kind, note in notes.items():
        out.append(f"  {kind.replace('_', ' '):<15}{c[kind]:>8}  ({note})\n")
    type_width = max([4] + [len(t) for t in errors.by_type]) + 1
    out.append(f"{'type':>{type_width}}" + "".join(f"{k.replace('_', ' '):>15}"
                                                   for k in CLASSES) + "\n")
    for t, counts in errors.by_type.items():
        out.append(f"{t:>{type_width}}" + "".join(f"{counts[k]:>15}" for k in CLASSES) + "\n")
    if errors.type_confusions:
        shown = list(errors.type_confusions.items())[:10]
        out.append("wrong types (gold -> predicted): "
                   + ", ".join(f"{g} -> {p} {n}" for (g, p), n in shown) + "\n")
    return "".join(out)
