"""Typed errors: library code raises these, only the CLI turns them into messages.

Every error a user can cause (bad data, bad pattern, bad model file, bad option)
is a :class:`CrfkitError`; its ``str`` is one line that names the place
(``file:line:column: message``) so that editors and humans can jump to it.
"""

from __future__ import annotations


class CrfkitError(Exception):
    """Base class of every error crfkit reports to a user."""

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        line: int | None = None,
        column: int | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.path = path
        self.line = line
        self.column = column

    def __str__(self) -> str:
        where = [str(p) for p in (self.path, self.line, self.column) if p is not None]
        return ":".join(where + [" " + self.message]) if where else self.message


class InputError(CrfkitError, ValueError):
    """A data file (column file, evaluation file) or data given to the library cannot be
    read as such (a ValueError too: what callers of a library catch for bad input)."""


class PatternError(CrfkitError):
    """A pattern (template) line cannot be parsed or does not fit the data."""


class ModelFormatError(CrfkitError):
    """A file is not a crfkit model, is truncated or corrupted, or is too new."""


class UsageError(CrfkitError, ValueError):
    """Options or arguments that contradict each other or are out of range (a ValueError
    too, as a bad argument to a function is)."""


class OutputError(CrfkitError):
    """An output file (or standard output) cannot be written: full disk, read-only..."""
