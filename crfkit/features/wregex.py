"""Wapiti's small regex dialect, translated once into a Python :mod:`re` pattern.

Pattern commands ``%t``/``%T`` (does the regex match somewhere in the token?) and
``%m``/``%M`` (the first substring it matches) take a regex written in the dialect
of Wapiti's own matcher (``rex_*`` functions in Wapiti's ``src/pattern.c``).  This
module parses that dialect once, reports syntax errors with a column, and hands
an equivalent Python pattern to :func:`re.compile`.  The raw dialect is never
given to :mod:`re`: ``\\a``, ``\\l``, ``\\u``, ``\\p`` mean different things there.

The dialect
-----------

========  ==================================================================
``.``     any single character (code point), newline included
``\\d``    decimal digit: ``str.isdecimal()`` (Unicode Nd: ``7``, ``٣``, ``７``)
``\\a``    letter: ``str.isalpha()`` (Unicode L*: ``é``, ``ß``, ``Ж``, ``λ``, ``中``)
``\\w``    letter or digit: ``\\a`` or ``\\d`` (so *not* ``_``, ``²`` or ``½``)
``\\l``    lower-case letter: ``isalpha() and islower()`` (``a``, ``é``, ``ß``, ``ª``)
``\\u``    upper-case letter: ``isalpha() and isupper()`` (``A``, ``É``, ``Ж``)
``\\p``    punctuation: Unicode categories P* and S* (see below)
``\\s``    white space: ``str.isspace()``
``\\D``..  upper-case class letters ``\\D \\A \\W \\L \\U \\P \\S`` match one
          character that is *not* in the class
``\\x``    any other escaped character matches itself literally: ``\\.``,
          ``\\\\``, ``\\*``, ``\\^``, ``\\$`` -- and ``\\n`` is the letter ``n``,
          ``\\t`` the letter ``t`` (Wapiti has no control-character escapes)
``^``     anchors at the start of the token, *only* as the first character of
          the regex; anywhere else it is a literal ``^``
``$``     anchors at the end of the token, *only* as the last character of the
          regex (and not escaped); anywhere else it is a literal ``$``
``*``     zero or more of the preceding character or class (greedy)
``?``     zero or one of the preceding character or class (greedy)
x         any other character matches itself
========  ==================================================================

Searching finds the leftmost match; at that position alternatives are tried
greedily with backtracking, exactly as Python's :mod:`re` does.

Decisions, and how they relate to Wapiti 1.5 (``src/pattern.c``):

* **Unicode.** Wapiti matches *bytes* with the C ``<ctype.h>`` functions, so
  ``.`` matches a single byte of a UTF-8 character and no non-ASCII byte is a
  letter.  Here the unit is the code point and the classes use Python's Unicode
  database; on ASCII text every class agrees with the C locale's ``ctype``
  (``\\s`` additionally contains ``\\x1c``-``\\x1f``, which ``str.isspace``
  treats as separators).  CJK ideographs are letters (category Lo, as
  ``str.isalpha`` says); titlecase letters such as ``ǅ`` are letters but
  neither ``\\l`` nor ``\\u``.
* **Punctuation** ``\\p`` = Unicode categories P* and S*.  On ASCII this is
  exactly C's ``ispunct`` (``string.punctuation``, which contains the symbols
  ``$+<=>^`|~`` -- categories Sc/Sm/Sk), and beyond ASCII it adds e.g. ``«``,
  ``—``, ``€``, ``©``, ``°``.
* **Greedy star.** Wapiti's ``rex_matchme`` tries *zero* repetitions of ``x*``
  first and only then more (a lazy star; ``?`` is greedy there).  That only
  changes what ``%m`` returns, never what ``%t`` answers: Wapiti gives ``""``
  for ``\\d*`` on ``"123"``, we give ``"123"``.  ``compile_regex(...,
  lazy_star=True)`` reproduces Wapiti's order.  Wapiti's ``%m`` can also
  return a too long match after a failed ``x?`` branch (its length counter is
  not restored); this module does not reproduce that bug, the ``wapiti`` regex
  mode (:mod:`crfkit.features.wmatch`) reproduces all of them.
* **Errors** are found at compile time (Wapiti finds some only while matching,
  with a fatal error): a dangling ``\\`` at the end, and a ``*``/``?`` with
  nothing to repeat -- at the start, right after the ``^`` anchor, or right
  after another ``*``/``?``.  The empty regex is valid and matches the empty
  string at position 0 (as in Wapiti): ``search`` returns ``""``, ``test`` is
  true.
* **ignore_case.** In Wapiti an upper-case command (``%T``, ``%M``) matches
  case-*sensitively* and lower-cases the *result* (so ``%T`` is ``%t``, and
  ``%M`` is ``%m`` followed by ``tolower``).  ``ignore_case=True`` offers real
  caseless matching instead: a *literal* character matches every character with
  the same ``str.casefold()`` (``k`` matches ``k``, ``K`` and the Kelvin sign,
  ``ß`` matches ``ẞ``, ``σ`` matches ``Σ`` and ``ς``), while ``.`` and the
  classes keep their meaning on the *original* text, so ``^\\u`` still asks for
  an upper-case initial.  (Folding the text itself would make ``\\u`` useless
  and, since ``"İ".lower()`` has two code points, would break the mapping of a
  match back to the token.)  ``search`` always returns the substring of the
  original text; lower-casing it is the caller's business.

The class tables for ``\\a \\w \\l \\u \\p`` are built lazily from the Unicode
database on first use (about 0.2 s each, once per process); importing this
module builds nothing.
"""

from __future__ import annotations

import json
import os
import re
import sys
import unicodedata
from collections.abc import Callable
from functools import cache, lru_cache

__all__ = ["RegexSyntaxError", "WapitiRegex", "compile_regex"]


class RegexSyntaxError(ValueError):
    """A Wapiti regex that cannot be compiled; ``column`` is 1-based in the source."""

    def __init__(self, message: str, column: int) -> None:
        super().__init__(message)
        self.message = message
        self.column = column

    def __str__(self) -> str:
        return self.message


# --------------------------------------------------------------------------
# Character classes, built lazily.


_CLASS_SPECIALS = frozenset("\\]^-[&~|")


def _char_escape(cp: int) -> str:
    """One code point, written so that it is literal inside ``[...]``."""
    ch = chr(cp)
    if ch.isprintable() and ch not in _CLASS_SPECIALS and not ch.isspace():
        return ch
    if cp <= 0xFFFF:
        return f"\\u{cp:04x}"
    return f"\\U{cp:08x}"


def _ranges(pred: Callable[[str], bool]) -> str:
    """The body of a ``[...]`` class matching the code points satisfying ``pred``."""
    out: list[str] = []
    start = -1
    for cp in range(sys.maxunicode + 2):
        inside = cp <= sys.maxunicode and pred(chr(cp))
        if inside:
            if start < 0:
                start = cp
        elif start >= 0:
            last = cp - 1
            out.append(_char_escape(start))
            if last > start:
                out.append("-" + _char_escape(last))
            start = -1
    return "".join(out)


def _is_alnum_non_digit_non_letter(ch: str) -> bool:
    # e.g. "²", "½", "Ⅻ": re's \w has them (it is str.isalnum plus "_"), we do not
    return ch.isalnum() and not ch.isalpha() and not ch.isdecimal()


def _is_lower_letter(ch: str) -> bool:
    return ch.isalpha() and ch.islower()


def _is_upper_letter(ch: str) -> bool:
    return ch.isalpha() and ch.isupper()


def _is_punct(ch: str) -> bool:
    return unicodedata.category(ch)[0] in "PS"


_PREDICATES: dict[str, Callable[[str], bool]] = {
    "n": _is_alnum_non_digit_non_letter,
    "l": _is_lower_letter,
    "u": _is_upper_letter,
    "p": _is_punct,
}


def _mask_ranges(mask) -> str:
    """Class body for the code points where a boolean numpy mask is true."""
    import numpy as np

    padded = np.concatenate([[False], mask, [False]]).astype(np.int8)
    edges = np.flatnonzero(np.diff(padded))
    out = []
    for start, stop in zip(edges[::2].tolist(), edges[1::2].tolist(), strict=True):
        out.append(_char_escape(start))
        if stop - 1 > start:
            out.append("-" + _char_escape(stop - 1))
    return "".join(out)


def _vectorised_body(name: str) -> str | None:
    """The letter classes from numpy's per-character predicates (C speed), else None."""
    import numpy as np

    chars = np.arange(sys.maxunicode + 1, dtype=np.uint32).view("<U1")
    alpha = np.char.isalpha(chars)
    if name == "l":
        return _mask_ranges(alpha & np.char.islower(chars))
    if name == "u":
        return _mask_ranges(alpha & np.char.isupper(chars))
    if name == "n":
        return _mask_ranges(np.char.isalnum(chars) & ~alpha & ~np.char.isdecimal(chars))
    return None


def _cache_file() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    version = f"{unicodedata.unidata_version}-py{sys.version_info[0]}.{sys.version_info[1]}"
    return os.path.join(base, "crfkit", f"wregex-classes-{version}.json")


@cache
def _class_body(name: str) -> str:
    """Class body (ranges) for one of the ``_PREDICATES``, built once per machine.

    Scanning all of Unicode costs up to a second, so bodies are kept in a
    small JSON file in the user's cache directory, keyed by the Unicode
    database version; an unwritable cache only means recomputing.
    """
    path = _cache_file()
    try:
        with open(path, encoding="utf-8") as handle:
            stored = json.load(handle)
        if isinstance(stored, dict) and isinstance(stored.get(name), str):
            return stored[name]
    except (OSError, ValueError):
        stored = {}
    body = _vectorised_body(name)
    if body is None:
        body = _ranges(_PREDICATES[name])
    try:
        stored = stored if isinstance(stored, dict) else {}
        stored[name] = body
        os.makedirs(os.path.dirname(path), exist_ok=True)
        temp = f"{path}.{os.getpid()}.tmp"
        with open(temp, "w", encoding="utf-8") as handle:
            json.dump(stored, handle)
        os.replace(temp, path)
    except OSError:
        pass
    return body


def _class(letter: str) -> str:
    """The :mod:`re` text for the dialect class ``\\<letter>`` (either case)."""
    neg = letter.isupper()
    low = letter.lower()
    if low == "d":
        # re's \d on str is exactly str.isdecimal (Unicode Nd).
        return "\\D" if neg else "\\d"
    if low == "s":
        # re's \s on str is exactly str.isspace.
        return "\\S" if neg else "\\s"
    if low in "aw":
        # re's \w on str is str.isalnum plus "_"; isalnum is isalpha, isdecimal
        # or a few other numerics ("²", "½", "Ⅻ"), so letters are
        # \w - \d - "_" - those numerics, written as one negated class (far
        # cheaper to compile than the ~700 ranges of the letters themselves).
        digits = "\\d" if low == "a" else ""
        inner = f"\\W{digits}_{_class_body('n')}"
        return f"[{inner}]" if neg else f"[^{inner}]"
    return f"[{'^' if neg else ''}{_class_body(low)}]"


_CLASS_LETTERS = frozenset("daswlupDASWLUP")


@lru_cache(maxsize=1)
def _casefold_groups() -> dict[str, frozenset[str]]:
    """casefold key -> every other code point with that key (built once)."""
    groups: dict[str, set[str]] = {}
    for cp in range(sys.maxunicode + 1):
        ch = chr(cp)
        key = ch.casefold()
        if key != ch:
            groups.setdefault(key, set()).add(ch)
            if len(key) == 1 and key.casefold() == key:
                groups[key].add(key)
    return {key: frozenset(chars) for key, chars in groups.items()}


def _literal(ch: str, ignore_case: bool) -> str:
    # No other code point casefolds to an ASCII non-letter (checked by the
    # tests), so those never need the (lazily built) casefold table.
    if ignore_case and (ch >= "\x80" or ch.isalpha()):
        variants = _casefold_groups().get(ch.casefold())
        if variants:
            members = sorted(variants | {ch})
            if len(members) > 1:
                return "[" + "".join(_char_escape(ord(c)) for c in members) + "]"
    return re.escape(ch)


# --------------------------------------------------------------------------
# Translation.


def _translate(source: str, ignore_case: bool, lazy_star: bool) -> str:
    """The :mod:`re` pattern equivalent to the dialect regex ``source``."""
    parts: list[str] = []
    n = len(source)
    i = 0
    if source.startswith("^"):
        parts.append("\\A")
        i = 1
    # What precedes position i: "atom" (can be repeated), "anchor" (the ^
    # anchor), "quant" (a * or ?) or "start".
    before = "anchor" if i else "start"
    while i < n:
        c = source[i]
        if c in "*?":
            if before != "atom":
                if before == "quant":
                    why = f"{source[i - 1]!r} cannot be followed by {c!r}"
                elif before == "anchor":
                    why = f"the '^' anchor cannot be repeated with {c!r}"
                else:
                    why = f"{c!r} at the start of the regex has nothing to repeat"
                raise RegexSyntaxError(f"{why} (write \\{c} to match a literal {c!r})", i + 1)
            parts[-1] += "*?" if (c == "*" and lazy_star) else c
            before = "quant"
            i += 1
            continue
        if c == "\\":
            if i + 1 == n:
                raise RegexSyntaxError(
                    "dangling '\\' at the end of the regex (write \\\\ for a backslash)",
                    i + 1,
                )
            e = source[i + 1]
            parts.append(_class(e) if e in _CLASS_LETTERS else _literal(e, ignore_case))
            i += 2
        elif c == ".":
            parts.append(".")
            i += 1
        elif c == "$" and i == n - 1:
            parts.append("\\Z")
            i += 1
        else:
            parts.append(_literal(c, ignore_case))
            i += 1
        before = "atom"
    return "".join(parts)


class WapitiRegex:
    """A compiled Wapiti regex (treat as immutable); hashable, cheap to apply."""

    __slots__ = ("source", "ignore_case", "lazy_star", "pattern", "_search")

    source: str
    ignore_case: bool
    lazy_star: bool
    pattern: re.Pattern[str]

    def __init__(self, source: str, *, ignore_case: bool = False, lazy_star: bool = False):
        self.source = source
        self.ignore_case = ignore_case
        self.lazy_star = lazy_star
        #: the translated Python pattern (for debugging; DOTALL, no other flags)
        self.pattern = re.compile(_translate(source, ignore_case, lazy_star), re.DOTALL)
        self._search = self.pattern.search

    def search(self, text: str) -> str | None:
        """The leftmost match in ``text`` (possibly ``""``), or ``None``."""
        m = self._search(text)
        return None if m is None else m.group()

    def test(self, text: str) -> bool:
        """Whether the regex matches somewhere in ``text``."""
        return self._search(text) is not None

    def _key(self) -> tuple[str, bool, bool]:
        return (self.source, self.ignore_case, self.lazy_star)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, WapitiRegex):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        extra = ", ignore_case=True" if self.ignore_case else ""
        extra += ", lazy_star=True" if self.lazy_star else ""
        return f"compile_regex({self.source!r}{extra})"


@lru_cache(maxsize=4096)
def _compile_cached(source: str, ignore_case: bool, lazy_star: bool) -> WapitiRegex:
    return WapitiRegex(source, ignore_case=ignore_case, lazy_star=lazy_star)


def compile_regex(
    source: str, *, ignore_case: bool = False, lazy_star: bool = False
) -> WapitiRegex:
    """Compile a regex written in Wapiti's dialect (see the module docstring).

    Raises :class:`RegexSyntaxError` (with a 1-based column into ``source``) for a
    dangling ``\\`` or a ``*``/``?`` with nothing to repeat.  ``lazy_star=True``
    makes ``*`` try the fewest repetitions first, as Wapiti's own matcher does.
    Results are cached: equal arguments give the same object.
    """
    return _compile_cached(source, bool(ignore_case), bool(lazy_star))
