"""What a pattern command computes from one token string.

A *transform* is ``(letter, column, regex)``; its value depends only on the
token text, so the extractor computes it once per distinct token of a
corpus rather than once per position.
"""

from __future__ import annotations

from functools import cache

from crfkit.patterns import padding_value

Transform = tuple[str, int, "str | None"]


@cache
def _regex(source: str, ignore_case: bool):
    from crfkit.wregex import compile_regex

    return compile_regex(source, ignore_case=ignore_case)


def padding_result(transform: Transform, distance: int) -> str:
    """Value of a command whose position is ``distance`` steps outside the sequence."""
    letter = transform[0]
    if letter in "xX":
        return padding_value(distance)
    return "false" if letter in "tT" else ""


def transform_values(transform: Transform, tokens: list[str]) -> list[str]:
    """Apply one transform to many distinct token strings."""
    letter, _, source = transform
    if letter == "x":
        return list(tokens)
    if letter == "X":
        return [token.lower() for token in tokens]
    regex = _regex(source, letter.isupper())
    if letter in "tT":
        test = regex.test
        return ["true" if test(token) else "false" for token in tokens]
    search = regex.search
    return [search(token) or "" for token in tokens]


def transform_value(transform: Transform, token: str | None, *, padding: int = 0) -> str:
    """Value for a single token, or for padding when ``token`` is None."""
    if token is None:
        return padding_result(transform, padding)
    return transform_values(transform, [token])[0]
