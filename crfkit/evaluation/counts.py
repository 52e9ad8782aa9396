"""The counts of a chunk evaluation and the report built from them: precision, recall and
FB1 derive from the counts, computed in conlleval's order (the same floats).

Scores
------
------
Precision, recall and FB1 are percentages; a ratio with a zero denominator is
0. The per-type list is the union of gold and predicted chunk types, sorted by
byte value (the empty type is listed once per side it occurs on, as conlleval
does). Empty input prints only the ``processed 0 tokens`` line.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from itertools import chain


def _ratio(num: int, den: int) -> float:
    """``100 * num / den`` or 0.0, computed in conlleval's order (same float)."""
    return 100 * num / den if den > 0 else 0.0


@dataclass(frozen=True)
class ChunkCounts:
    """Counts for one chunk type (or one tag, or all): scores derive from them."""

    correct: int = 0
    found: int = 0
    support: int = 0

    @property
    def precision(self) -> float:
        """Percentage of found items that are correct (0 when none found)."""
        return _ratio(self.correct, self.found)

    @property
    def recall(self) -> float:
        """Percentage of gold items that were found correctly (0 when none)."""
        return _ratio(self.correct, self.support)

    @property
    def f1(self) -> float:
        """Harmonic mean of precision and recall, as conlleval's FB1."""
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r > 0 else 0.0

    def as_dict(self) -> dict[str, float | int]:
        """The JSON *score object* (see module docstring)."""
        return {"precision": self.precision, "recall": self.recall, "f1": self.f1,
                "support": self.support, "found": self.found, "correct": self.correct}


@dataclass(frozen=True)
class EvalReport:
    """Everything conlleval counts, plus token-level tag pairs for ``--tokens``.

    Scores are percentages (0–100), like conlleval prints them.
    """

    tokens: int
    correct_tags: int
    overall: ChunkCounts
    types: dict[str, ChunkCounts]
    """Chunk counts per type, sorted; union of gold and predicted types."""
    gold_types: frozenset[str] = frozenset()
    """Types with at least one gold chunk (conlleval lists ``""`` once per side)."""
    found_types: frozenset[str] = frozenset()
    """Types with at least one predicted chunk."""
    tag_pairs: dict[tuple[str, str], int] = field(default_factory=dict)
    """Token counts per (gold tag, predicted tag), sentence breaks excluded."""
    outside: str = "O"
    raw: bool = False
    scheme: str | None = None
    encoding: str = "utf-8"
    """Encoding of the input: conlleval pads and sorts bytes, so we measure in it."""

    @property
    def accuracy(self) -> float:
        """Percentage of tokens whose predicted tag equals the gold tag."""
        return _ratio(self.correct_tags, self.tokens)

    @property
    def precision(self) -> float:
        """Overall chunk precision (percent)."""
        return self.overall.precision

    @property
    def recall(self) -> float:
        """Overall chunk recall (percent)."""
        return self.overall.recall

    @property
    def f1(self) -> float:
        """Overall chunk FB1 (percent)."""
        return self.overall.f1

    def listed_types(self) -> list[str]:
        """Types in the order (and multiplicity) conlleval prints them.

        conlleval sorts the gold and found type names together and drops a name
        equal to the previous one, except after the empty name (Perl treats it
        as false): so ``""`` appears twice when both sides have untyped chunks.
        """
        names = sorted(chain(self.gold_types, self.found_types), key=self._bytes)
        listed: list[str] = []
        last: str | None = None
        for name in names:
            if not last or last != name:
                listed.append(name)
            last = name
        return listed

    def labels(self) -> dict[str, ChunkCounts]:
        """Token-level counts per full tag (``B-NP``, ``O``...), sorted by tag."""
        support: Counter[str] = Counter()
        found: Counter[str] = Counter()
        correct: Counter[str] = Counter()
        for (gold, pred), n in self.tag_pairs.items():
            support[gold] += n
            found[pred] += n
            if gold == pred:
                correct[gold] += n
        return {tag: ChunkCounts(correct[tag], found[tag], support[tag])
                for tag in sorted(support.keys() | found.keys(), key=self._bytes)}

    def _bytes(self, text: str) -> bytes:
        return text.encode(self.encoding, "surrogateescape")

    def _width(self, text: str) -> int:
        """Width printf gives ``text``: conlleval counts bytes, not characters."""
        return len(self._bytes(text))
