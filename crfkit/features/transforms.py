"""What a pattern command computes from one token string.

A *transform* is ``(letter, column, regex)``; its value depends only on the
token text, so the extractor computes it once per distinct token of a
corpus rather than once per position.

======  =====================================================================
``x``   the token unchanged
``X``   the token case folded (:meth:`str.casefold`: ``"Straße"`` and
        ``"STRASSE"`` both give ``"strasse"``; on ASCII this is ``lower()``)
``t``   ``"true"`` if the regex matches somewhere in the token, else ``"false"``
``T``   the same, matching case-insensitively
``m``   the first (leftmost, greedy) substring the regex matches, ``""`` if none
``M``   the same, matching case-insensitively, and the match case folded (so
        ``%M[0,0,"..$"]`` gives ``"ng"`` for ``"going"``, ``"GOING"`` and
        ``"GoiNG"`` alike, as Wapiti's ``%M`` lower-cases its result)
======  =====================================================================

Positions outside the sequence give :func:`padding_result` instead: the
padding token (``_B-1``, ``_B+2``, ... for ``x`` and ``X`` alike), ``"false"``
for ``t``/``T`` and ``""`` for ``m``/``M``.

A regex command in the ``wapiti`` regex mode (its transform ends with
``"wapiti"``) is computed by :mod:`crfkit.features.wmatch` instead, Wapiti's
matcher bug for bug, on Wapiti's padding token outside the sequence.

:func:`transform_values` (the extractor's path, once per distinct token) has
two fast paths, each tested against the regex engine: a regex made only of
dots (``"...$"``, ``"^.."``: affixes) is a slice, and a regex with a literal
every match must contain (``"\\w-\\w"``) is searched only in tokens that
contain it. :func:`transform_value` is the plain definition, used by the
slow reference :func:`crfkit.features.explain.apply_pattern`.
"""

from __future__ import annotations

import re
from functools import cache

from crfkit.features.patterns import padding_value

Transform = tuple  # (letter, column, regex), plus "wapiti" in that regex mode


_DOTS = re.compile(r"(\^?)((?:\.[?*]?)*)(\$?)")

DotShape = tuple[str, int, "int | None"]


@cache
def dot_affix(source: str) -> DotShape | None:
    """``(anchor, n_required, max_length)`` if ``source`` is only dots, else None.

    Regexes made only of ``.``, ``.?`` and ``.*`` with optional ``^``/``$``
    anchors (``"...$"`` a suffix, ``"^.."`` a prefix, ``".?.?.$"`` up to three
    last characters) need no regex engine: ``.`` matches any character, so
    the leftmost greedy match is a slice. (Searching ``...$`` with :mod:`re`
    tries every start position, which made affixes the slowest transforms.)
    ``anchor`` is ``"start"`` (no ``$``: the match starts at 0), ``"end"``
    or ``"whole"`` (both anchors); ``max_length`` is None with a ``.*``.
    """
    m = _DOTS.fullmatch(source)
    if m is None:
        return None
    body = m.group(2)
    n_required = body.count(".") - body.count("?") - body.count("*")
    max_length = None if "*" in body else n_required + body.count("?")
    anchor = ("whole" if m.group(1) else "end") if m.group(3) else "start"
    return anchor, n_required, max_length


def _dot_values(shape: DotShape, tokens: list[str]) -> list[str | None]:
    """The leftmost greedy match of a dots-only regex in each token (None if none)."""
    anchor, low, high = shape
    if anchor == "whole":
        return [token if low <= len(token) and (high is None or len(token) <= high) else None
                for token in tokens]
    if high is None:
        return [token if len(token) >= low else None for token in tokens]
    if anchor == "end":
        if high == 0:
            return ["" for _ in tokens]
        return [token[-high:] if len(token) >= low else None for token in tokens]
    return [token[:high] if len(token) >= low else None for token in tokens]


_CLASS_LETTERS = frozenset("daswlupDASWLUP")


@cache
def required_char(source: str, ignore_case: bool) -> str | None:
    """A character every match of ``source`` contains, if the regex has one.

    A literal not followed by ``*`` or ``?`` must be in the token for the
    regex to match, and ``c in token`` is far cheaper than a regex search:
    ``"\\w-\\w"`` only needs searching in tokens that contain ``-``. Ignoring
    case, only ASCII non-letters qualify (the dialect matches them exactly).
    Punctuation is preferred, being rarer in tokens than letters.
    """
    found = []
    i = 1 if source.startswith("^") else 0
    n = len(source)
    while i < n:
        char = source[i]
        if char == "\\" and i + 1 < n:
            literal = None if source[i + 1] in _CLASS_LETTERS else source[i + 1]
            i += 2
        elif char == "." or (char == "$" and i == n - 1):
            literal = None
            i += 1
        else:
            literal = char
            i += 1
        if i < n and source[i] in "*?":  # optional: skip the atom and its quantifier
            i += 1
            continue
        if literal is not None and not (ignore_case and (literal >= "\x80" or literal.isalpha())):
            found.append(literal)
    if not found:
        return None
    return min(found, key=lambda c: c.isalnum())


@cache
def _regex(source: str, ignore_case: bool):
    from crfkit.features.wregex import compile_regex

    return compile_regex(source, ignore_case=ignore_case)


def padding_result(transform: Transform, distance: int) -> str:
    """Value of a command whose position is ``distance`` steps outside the sequence.

    In the wapiti regex mode a regex reads Wapiti's padding token (``_x-1``),
    as Wapiti's does: ``%t[-1,0,"\\d"]`` is true at the first token.
    """
    letter = transform[0]
    if letter in "xX":
        return padding_value(distance)
    if _is_wapiti(transform):
        from crfkit.features.wmatch import padding_text

        return _wapiti_values(transform, [padding_text(distance)])[0]
    return "false" if letter in "tT" else ""


def _is_wapiti(transform: Transform) -> bool:
    return len(transform) > 3 and transform[3] == "wapiti"


def _wapiti_values(transform: Transform, tokens: list[str]) -> list[str]:
    """%t/%T/%m/%M as Wapiti computes them (:mod:`crfkit.features.wmatch`)."""
    from crfkit.features.wmatch import ascii_lower, wapiti_matcher

    letter, source = transform[0], transform[2]
    # Affixes made of "." and ".?" come out as the same slices as in the default
    # mode (a failed attempt there only runs out of token: checked exhaustively).
    shape = None if "*" in source else dot_affix(source)
    if shape is not None:
        found = _dot_values(shape, tokens)
        if letter in "tT":
            return ["false" if f is None else "true" for f in found]
        values = [f or "" for f in found]
    else:
        matcher = wapiti_matcher(source)
        if letter in "tT":  # %T matches case-sensitively: "true"/"false" are lower already
            return ["true" if matcher.test(token) else "false" for token in tokens]
        values = [matcher.value(token) for token in tokens]
    return [ascii_lower(v) for v in values] if letter == "M" else values


def transform_values(transform: Transform, tokens: list[str]) -> list[str]:
    """Apply one transform to many token strings (the caller passes distinct ones).

    One list comprehension per transform, with the bound method hoisted:
    the per-token cost is a single C-level regex search (or casefold).
    """
    letter, source = transform[0], transform[2]
    if letter == "x":
        return list(tokens)
    if letter == "X":
        return [token.casefold() for token in tokens]
    if _is_wapiti(transform):
        return _wapiti_values(transform, tokens)
    shape = dot_affix(source)
    if shape is not None:
        found = _dot_values(shape, tokens)
        if letter in "tT":
            return ["false" if f is None else "true" for f in found]
        if letter == "m":
            return [f or "" for f in found]
        return ["" if f is None else f.casefold() for f in found]
    search = _regex(source, letter.isupper()).pattern.search
    needed = required_char(source, letter.isupper())
    if letter in "tT":
        if needed is None:
            return ["false" if search(token) is None else "true" for token in tokens]
        return ["true" if needed in token and search(token) is not None else "false"
                for token in tokens]
    if needed is None:
        matches = [search(token) for token in tokens]
    else:
        matches = [search(token) if needed in token else None for token in tokens]
    if letter == "m":
        return ["" if m is None else m.group() for m in matches]
    return ["" if m is None else m.group().casefold() for m in matches]


def transform_value(transform: Transform, token: str | None, *, padding: int = 0) -> str:
    """Value for a single token, or for padding (``padding`` steps out) when ``token`` is None.

    The plain definition, without the fast paths of :func:`transform_values`:
    :func:`crfkit.features.explain.apply_pattern` uses it, so comparing the reference
    with the vectorised extractor also checks those fast paths.
    """
    if token is None:
        return padding_result(transform, padding)
    letter, source = transform[0], transform[2]
    if letter == "x":
        return token
    if letter == "X":
        return token.casefold()
    if _is_wapiti(transform):
        return _wapiti_values(transform, [token])[0]
    found = _regex(source, letter.isupper()).search(token)
    if letter in "tT":
        return "false" if found is None else "true"
    found = found or ""
    return found.casefold() if letter == "M" else found
