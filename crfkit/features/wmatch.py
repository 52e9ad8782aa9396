"""Wapiti's own regex matcher, reproduced bug for bug (the ``wapiti`` regex mode).

crfkit's default reading of the dialect (:mod:`crfkit.features.wregex`) is a
regular greedy matcher. Wapiti 1.5's backtracking matcher (``src/pattern.c``)
differs in ways that change what ``%m`` returns, so a model trained by
Wapiti only labels as Wapiti does if its features are computed the same
way. This module interprets a regex exactly as Wapiti does:

* **Search.** Starts 0, 1, ..., ``len(text)`` are tried in order (only 0
  with a leading ``^``); the first start where the regex matches wins.
* **Order of choices.** ``x?`` first tries taking one ``x``, then none;
  ``x*`` first tries *zero* repetitions, then one more at a time (the
  fewest that let the rest match).
* **The length counter.** The length of a match is not measured from its
  end but counted while matching, and a failed attempt can leave counts
  behind: a plain atom counts itself *before* it is tested, and a failed
  ``x*`` leaves one extra count. After a failed ``x?``-taken branch only
  the ``x`` is uncounted, so whatever the failed rest counted stays: ``\\d?\\d``
  on ``"5"`` matches at 0 with length 2. A ``*`` restores the count of
  each attempt it abandons. ``%t`` only asks whether there is a match, so
  only ``%m``/``%M`` see the counter.
* **A length past the end.** Wapiti copies that many bytes from the start
  of the match, including the string's terminating NUL, and the
  observation string ends at that NUL: the value is what remains of the
  token from the start of the match (crfkit keeps the rest of the pattern
  line after it, Wapiti does not -- the same observation when ``%m`` ends
  the pattern line).
* **Classes** are C's ``<ctype.h>`` in the C locale: ASCII only. Wapiti
  reads bytes; here the unit is the character, and a non-ASCII character
  is outside every class (as each of its bytes is for Wapiti), so on ASCII
  text the two agree exactly.
* ``%M`` lower-cases ASCII letters of the match (C's ``tolower``).

Syntax (escapes, anchors, errors) is the dialect's: regexes are checked by
:func:`crfkit.features.wregex.compile_regex` when a pattern is parsed.
"""

from __future__ import annotations

import string
from functools import lru_cache

__all__ = ["WapitiMatcher", "ascii_lower", "padding_text", "wapiti_matcher"]

_DIGITS = frozenset(string.digits)
_LOWER = frozenset(string.ascii_lowercase)
_UPPER = frozenset(string.ascii_uppercase)
_ALPHA = _LOWER | _UPPER
_CLASSES: dict[str, frozenset[str]] = {
    "d": _DIGITS,
    "a": _ALPHA,
    "w": _ALPHA | _DIGITS,
    "l": _LOWER,
    "u": _UPPER,
    "p": frozenset(string.punctuation),
    "s": frozenset(" \t\n\v\f\r"),
}
_ANY = "any"
_LOWER_TABLE = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)


def ascii_lower(text: str) -> str:
    """Lower-case ASCII letters only, as C's ``tolower`` in the C locale."""
    return text.translate(_LOWER_TABLE)


def padding_text(distance: int) -> str:
    """The token Wapiti reads ``distance`` steps outside a sequence (``_x-1``, ``_x+#``)."""
    side = "-" if distance < 0 else "+"
    steps = abs(distance)
    return f"_x{side}{steps if steps <= 4 else '#'}"


# An atom is (set of characters or a single literal or _ANY, negated, quantifier).
Atom = tuple[object, bool, str]


def _atoms(source: str) -> tuple[bool, list[Atom], bool]:
    """(anchored at start, atoms, anchored at end) of a syntactically valid regex."""
    start = source.startswith("^")
    i = 1 if start else 0
    n = len(source)
    end = n > i and source[-1] == "$" and not _escaped(source, n - 1, i)
    stop = n - 1 if end else n
    atoms: list[Atom] = []
    while i < stop:
        char = source[i]
        if char == "\\":
            escaped = source[i + 1]
            cls = _CLASSES.get(escaped.lower())
            what: object = cls if cls is not None else escaped
            negated = cls is not None and escaped.isupper()
            i += 2
        else:
            what, negated = (_ANY if char == "." else char), False
            i += 1
        quantifier = ""
        if i < stop and source[i] in "*?":
            quantifier = source[i]
            i += 1
        atoms.append((what, negated, quantifier))
    return start, atoms, end


def _escaped(source: str, index: int, first: int) -> bool:
    """Whether ``source[index]`` is taken by a backslash before it (scanning from ``first``)."""
    i = first
    while i < index:
        i += 2 if source[i] == "\\" else 1
    return i > index


def _accepts(atom: Atom, char: str) -> bool:
    what, negated, _ = atom
    if what is _ANY:
        return True
    if isinstance(what, frozenset):
        return (char in what) != negated
    return char == what


class WapitiMatcher:
    """One regex, matched as Wapiti 1.5 matches it (see the module notes)."""

    __slots__ = ("source", "_start", "_atoms", "_end", "_count", "_text")

    def __init__(self, source: str) -> None:
        self.source = source
        self._start, self._atoms, self._end = _atoms(source)
        self._count = 0
        self._text = ""

    def find(self, text: str) -> tuple[int, int] | None:
        """``(start, counted length)`` of Wapiti's match in ``text``, or None."""
        self._text = text
        starts = range(1) if self._start else range(len(text) + 1)
        for begin in starts:
            self._count = 0
            if self._rest(0, begin):
                return begin, self._count
        return None

    def test(self, text: str) -> bool:
        """Whether Wapiti's ``%t`` answers true for ``text``."""
        return self.find(text) is not None

    def value(self, text: str) -> str:
        """What Wapiti's ``%m`` gives for ``text`` (``""`` without a match)."""
        found = self.find(text)
        if found is None:
            return ""
        begin, length = found
        return text[begin:begin + length]

    def _char_ok(self, atom: Atom, at: int) -> bool:
        return at < len(self._text) and _accepts(atom, self._text[at])

    def _rest(self, k: int, at: int) -> bool:
        """Whether atoms ``k:`` match from ``at``; updates the counter as Wapiti does."""
        if k == len(self._atoms):
            return at == len(self._text) if self._end else True
        atom = self._atoms[k]
        quantifier = atom[2]
        if quantifier == "*":
            while True:
                before = self._count
                if self._rest(k + 1, at):
                    return True
                self._count = before + 1
                if not self._char_ok(atom, at):
                    return False
                at += 1
        if quantifier == "?":
            if self._char_ok(atom, at):
                self._count += 1
                if self._rest(k + 1, at + 1):
                    return True
                self._count -= 1
            return self._rest(k + 1, at)
        self._count += 1
        return self._char_ok(atom, at) and self._rest(k + 1, at + 1)


@lru_cache(maxsize=4096)
def wapiti_matcher(source: str) -> WapitiMatcher:
    """The matcher of ``source`` (cached: patterns share regexes)."""
    return WapitiMatcher(source)
