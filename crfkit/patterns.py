"""Pattern (template) files of CRF++ and Wapiti, parsed into plain data.

Syntax, one pattern per line (blank lines and lines starting with ``#`` are
ignored; a ``#`` elsewhere is ordinary text)::

    KIND [NAME] [TEXT %c[OFFSET,COLUMN] TEXT %c[OFFSET,COLUMN,"REGEX"] ...]

* ``KIND`` is the first character: ``u``/``U`` unigram (observation x label),
  ``b``/``B`` bigram (observation x previous label x label), ``*`` both.
* The whole line with every command replaced by its value is the
  observation string, so the name (``U01:`` or ``u:wrd``) is part of it and
  two patterns that differ only by name are different features.
* A line that is only ``b``, ``B`` or ``*`` has no command: a constant
  observation, i.e. plain label transitions (CRF++'s bare ``B``).
* Commands (``OFFSET`` is relative to the current token, or ``@N`` for an
  absolute position: ``@1`` the first token, ``@-1`` the last; ``COLUMN`` is
  0-based; spaces inside the brackets are allowed):

  ====  ================================================================
  %x    the token text                     %X  the same, case folded
  %t    ``true``/``false``: does REGEX match somewhere in the token
  %T    the same, ignoring case
  %m    the first substring REGEX matches (empty if none)
  %M    the same, ignoring case
  ====  ================================================================

  REGEX is Wapiti's small dialect (see :mod:`crfkit.wregex`); ``\\"`` puts a
  quote inside it.
* Positions outside the sequence give padding values distinct per side and
  distance: ``_B-1``, ``_B-2``, ... before and ``_B+1``, ... after (CRF++'s
  spelling). ``%t`` of padding is ``false``, ``%m`` of padding is empty.

Parsing is pure Python and happens once; turning patterns into feature ids
over a whole corpus is vectorised in :mod:`crfkit.features`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from crfkit.errors import PatternError

KINDS = {"u": "u", "U": "u", "b": "b", "B": "b", "*": "*"}
TEXT_COMMANDS = "xX"
REGEX_COMMANDS = "tTmM"


def padding_value(distance: int) -> str:
    """CRF++'s padding token for a position ``distance`` steps outside the sequence."""
    return f"_B{distance:+d}"


@dataclass(frozen=True)
class Command:
    """One ``%c[offset,column(,"regex")]`` command of a pattern."""

    letter: str
    offset: int
    absolute: bool
    column: int
    regex: str | None = None
    source_column: int = 0  # 1-based column of the '%' in the pattern line

    @property
    def transform(self) -> tuple[str, int, str | None]:
        """What the command computes from one token, regardless of position.

        Commands that share a transform share one table of values, so each
        distinct token is transformed once per corpus.
        """
        return (self.letter, self.column, self.regex)

    def position(self, i: int, n: int) -> int:
        """Index addressed in a sequence of length ``n`` from token ``i``."""
        if not self.absolute:
            return i + self.offset
        return self.offset - 1 if self.offset > 0 else n + self.offset

    def describe(self) -> str:
        where = f"@{self.offset}" if self.absolute else f"{self.offset:+d}"
        what = {
            "x": "token",
            "X": "token, case folded",
            "t": "regex test",
            "T": "regex test, ignoring case",
            "m": "regex match",
            "M": "regex match, ignoring case",
        }[self.letter]
        regex = f' "{self.regex}"' if self.regex is not None else ""
        return f"%{self.letter} {what}{regex} of column {self.column} at {where}"


@dataclass(frozen=True)
class Pattern:
    """A parsed pattern line: literal pieces interleaved with commands.

    ``literals`` has one more element than ``commands``; the observation is
    ``literals[0] + v0 + literals[1] + v1 + ... + literals[-1]``.
    """

    kind: str
    text: str
    literals: tuple[str, ...]
    commands: tuple[Command, ...]
    line: int = 0
    path: str | None = field(default=None, compare=False)

    @property
    def is_constant(self) -> bool:
        return not self.commands

    @property
    def has_unigram(self) -> bool:
        return self.kind in "u*"

    @property
    def has_bigram(self) -> bool:
        return self.kind in "b*"

    def render(self, values: list[str] | tuple[str, ...]) -> str:
        """Build the observation string from one value per command."""
        parts = [self.literals[0]]
        for value, literal in zip(values, self.literals[1:], strict=False):
            parts.append(value)
            parts.append(literal)
        return "".join(parts)


def parse_patterns(text: str, *, path: str | None = None) -> list[Pattern]:
    """Parse the text of a pattern file; raise PatternError naming line and column."""
    patterns = []
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        patterns.append(parse_pattern_line(line, lineno=lineno, path=path))
    return patterns


def read_patterns(path: str | os.PathLike, *, encoding: str = "utf-8") -> list[Pattern]:
    """Read and parse a pattern file."""
    name = os.fspath(path)
    try:
        with open(name, encoding=encoding) as handle:
            text = handle.read()
    except OSError as err:
        raise PatternError(f"cannot read pattern file: {err.strerror}", path=name) from None
    except UnicodeDecodeError as err:
        raise PatternError(f"cannot decode pattern file as {encoding}: {err.reason}",
                           path=name) from None
    patterns = parse_patterns(text, path=name)
    if not patterns:
        raise PatternError("pattern file has no patterns", path=name)
    return patterns


def parse_pattern_line(text: str, *, lineno: int = 0, path: str | None = None) -> Pattern:
    """Parse one non-blank, non-comment pattern line."""
    return _LineParser(text, lineno, path).parse()


class _LineParser:
    """Recursive-descent parser over one pattern line; positions are 0-based."""

    def __init__(self, text: str, lineno: int, path: str | None) -> None:
        self.text = text
        self.lineno = lineno
        self.path = path
        self.pos = 0

    def error(self, message: str, pos: int) -> PatternError:
        return PatternError(f"{message} in pattern {self.text!r}", path=self.path,
                            line=self.lineno, column=pos + 1)

    def parse(self) -> Pattern:
        text = self.text
        kind = KINDS.get(text[0])
        if kind is None:
            raise self.error(
                f"a pattern starts with u, b or * (CRF++: U or B), not {text[0]!r}", 0)
        literals: list[str] = []
        commands: list[Command] = []
        current: list[str] = []
        while self.pos < len(text):
            char = text[self.pos]
            if char != "%":
                current.append(char)
                self.pos += 1
                continue
            literals.append("".join(current))
            current = []
            commands.append(self.command())
        literals.append("".join(current))
        return Pattern(kind=kind, text=text, literals=tuple(literals),
                       commands=tuple(commands), line=self.lineno, path=self.path)

    def command(self) -> Command:
        start = self.pos
        self.pos += 1
        if self.pos >= len(self.text):
            raise self.error("'%' at end of pattern: expected a command such as %x[0,0]", start)
        letter = self.text[self.pos]
        if letter not in TEXT_COMMANDS + REGEX_COMMANDS:
            raise self.error(f"unknown command %{letter} (known: %x %X %t %T %m %M)", self.pos)
        self.pos += 1
        self.expect("[", f"expected '[' after %{letter}")
        absolute, offset = self.offset()
        self.expect(",", "expected ',' between offset and column")
        column = self.integer("column", allow_sign=True)
        if column < 0:
            raise self.error(f"negative column {column}", start)
        regex = None
        if letter in REGEX_COMMANDS:
            self.expect(",", f'%{letter} needs a regex: %{letter}[offset,column,"regex"]')
            regex = self.regex(letter)
        self.expect("]", "expected ']' to close the command (unbalanced brackets)")
        return Command(letter=letter, offset=offset, absolute=absolute, column=column,
                       regex=regex, source_column=start + 1)

    def skip_spaces(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos] in " \t":
            self.pos += 1

    def expect(self, char: str, message: str) -> None:
        self.skip_spaces()
        if self.pos >= len(self.text) or self.text[self.pos] != char:
            raise self.error(message, self.pos)
        self.pos += 1

    def offset(self) -> tuple[bool, int]:
        self.skip_spaces()
        absolute = self.pos < len(self.text) and self.text[self.pos] == "@"
        if absolute:
            self.pos += 1
        start = self.pos
        value = self.integer("offset", allow_sign=True)
        if absolute and value == 0:
            raise self.error("absolute position @0 does not exist (@1 is the first token)",
                             start)
        return absolute, value

    def integer(self, what: str, *, allow_sign: bool) -> int:
        self.skip_spaces()
        start = self.pos
        if allow_sign and self.pos < len(self.text) and self.text[self.pos] in "+-":
            self.pos += 1
        while self.pos < len(self.text) and self.text[self.pos].isdigit():
            self.pos += 1
        digits = self.text[start:self.pos]
        if digits in ("", "+", "-") or not digits.lstrip("+-").isascii():
            raise self.error(f"expected an integer {what}", start)
        self.skip_spaces()
        return int(digits)

    def regex(self, letter: str) -> str:
        self.skip_spaces()
        if self.pos >= len(self.text) or self.text[self.pos] != '"':
            raise self.error(f'%{letter} needs a quoted regex, e.g. "\\d"', self.pos)
        start = self.pos + 1
        pos = start
        while pos < len(self.text) and self.text[pos] != '"':
            pos += 2 if self.text[pos] == "\\" else 1
        if pos >= len(self.text):
            raise self.error("unbalanced quote: the regex is not closed", start - 1)
        source = self.text[start:pos].replace('\\"', '"') if '\\"' in self.text[start:pos] \
            else self.text[start:pos]
        self.pos = pos + 1
        self.check_regex(source, letter, start)
        return source

    def check_regex(self, source: str, letter: str, start: int) -> None:
        from crfkit.wregex import RegexSyntaxError, compile_regex

        try:
            compile_regex(source, ignore_case=letter.isupper())
        except RegexSyntaxError as err:
            raise self.error(f"bad regex {source!r}: {err.args[0]}",
                             start + max(err.column, 1) - 1) from None


def check_columns(patterns: list[Pattern], n_columns: int, *, label_column: bool) -> None:
    """Refuse commands that address a column the data does not have."""
    for pattern in patterns:
        for command in pattern.commands:
            if command.column >= n_columns:
                extra = " (the last column is the label, which patterns cannot read)" \
                    if label_column else ""
                raise PatternError(
                    f"%{command.letter} reads column {command.column} but the data has "
                    f"{n_columns} token column(s), numbered 0..{n_columns - 1}{extra}",
                    path=pattern.path, line=pattern.line, column=command.source_column)


def apply_pattern(pattern: Pattern, rows: list[list[str]], i: int) -> str:
    """Observation string of ``pattern`` at token ``i`` (slow, obviously correct).

    The vectorised extractor is tested against this; ``crfkit patterns`` uses
    it to show users what their patterns produce.
    """
    from crfkit.transforms import transform_value

    values = []
    for command in pattern.commands:
        p = command.position(i, len(rows))
        if 0 <= p < len(rows):
            values.append(transform_value(command.transform, rows[p][command.column]))
        else:
            distance = p if p < 0 else p - len(rows) + 1
            values.append(transform_value(command.transform, None, padding=distance))
    return pattern.render(values)
