"""Pattern (template) files of CRF++ and Wapiti, parsed into plain data.

Syntax, one pattern per line (blank lines and lines starting with ``#`` are
ignored; a ``#`` elsewhere is ordinary text; spaces around a line are
ignored, a UTF-8 byte-order mark and CRLF line ends are accepted)::

    KIND [NAME] [TEXT %c[OFFSET,COLUMN] TEXT %c[OFFSET,COLUMN,"REGEX"] ...]

* ``KIND`` is the first character: ``u``/``U`` unigram (observation x label),
  ``b``/``B`` bigram (observation x previous label x label), ``*`` both,
  ``s``/``S`` skip edge (its commands are the key that joins positions of one
  document: :mod:`crfkit.structures.skipchain.graph`; it makes the model a skip-chain CRF),
  ``e`` skip-edge observation (its value at either end of a skip edge
  conditions the edge's label-pair weights; skip-chain models only).
  ``t`` trigram (observation x the labels of t-2, t-1 and t; second-order
  models only, ``crfkit train --order 2``).
* The whole line with every command replaced by its value is the
  observation string, so the name (``U01:`` or ``u:wrd``; :attr:`Pattern.name`
  is the text before the first ``:``) is part of it and two patterns that
  differ only by name are different features.
* A line without commands is a constant observation: ``b``, ``B`` (CRF++'s
  bare ``B``) give plain label transitions, ``*`` transitions and a label
  bias, ``u``/``U`` a label bias, ``t`` plain label-trigram weights. In a
  second-order model a constant bigram line (``B``) gives both the label
  transitions and the label-trigram weights.
* Commands (``OFFSET`` is relative to the current token -- ``-1``, ``+2``,
  ``10`` -- or ``@N`` for an absolute position: ``@1`` the first token,
  ``@-1`` the last; ``COLUMN`` is 0-based and never negative; spaces inside
  the brackets are allowed: ``%x[ -1, 0]``). Any number of commands per
  line, with any literal text between them:

  ====  ================================================================
  %x    the token text                     %X  the same, case folded
  %t    ``true``/``false``: does REGEX match somewhere in the token
  %T    the same, ignoring case
  %m    the first substring REGEX matches (empty if none)
  %M    the same, ignoring case, and the match case folded
  %v    the feature's *value*: the number in the column (unigram patterns,
        one per pattern); kept as written in the observation, whose
        weights it multiplies (``u:emb3 %v[0,3]``: one weight per label,
        times column 3)
  ====  ================================================================

  REGEX is Wapiti's small dialect (see :mod:`crfkit.features.wregex`), kept as
  written: ``\\"`` puts a quote inside it (the dialect reads an escaped
  character literally), so ``\\`` must be doubled before the closing quote.
* Positions outside the sequence give padding values distinct per side and
  distance: ``_B-1``, ``_B-2``, ... before and ``_B+1``, ... after (CRF++'s
  spelling; ``%X`` does not fold them). ``%t`` of padding is ``false``,
  ``%m`` of padding is empty.

Errors (:class:`~crfkit.errors.PatternError`) name the file, the line and the
1-based column in that line: an unknown kind or command letter, a missing
``[``, ``,``, ``]`` or quote, a bad integer, ``@0``, a negative column, a
regex on ``%x``/``%X`` or none on ``%t``..``%M``, a regex that does not
compile (``*``/``?`` with nothing to repeat, a ``\\`` escaping the closing
quote), and brackets in literal text that do not pair up (``%x[0,0]]`` is
a typo; ``u:[%x[0,0]]`` is fine). A column the data does not have is
refused by :func:`check_columns` once the data is known.

Parsing is pure Python and happens once; turning patterns into feature ids
over a whole corpus is vectorised in :mod:`crfkit.features`;
:func:`apply_pattern` is the slow reference it is tested against.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace

from crfkit.errors import PatternError, UsageError

KINDS = {"u": "u", "U": "u", "b": "b", "B": "b", "*": "*", "s": "s", "S": "s", "t": "t",
         "e": "e"}
TEXT_COMMANDS = "xX"
REGEX_COMMANDS = "tTmM"
VALUE_COMMAND = "v"
MAX_OFFSET = 1000
"""Largest relative offset or absolute position a command may name (either sign)."""


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
    regex_mode: str = "crfkit"  # or "wapiti": Wapiti's own matcher (features/wmatch.py)

    @property
    def transform(self) -> tuple:
        """What the command computes from one token, regardless of position.

        Commands that share a transform share one table of values, so each
        distinct token is transformed once per corpus. ``(letter, column,
        regex)``, with ``"wapiti"`` appended for a regex in the wapiti mode.
        """
        if self.regex is not None and self.regex_mode == "wapiti":
            return (self.letter, self.column, self.regex, "wapiti")
        return (self.letter, self.column, self.regex)

    def position(self, i: int, n: int) -> int:
        """Index addressed in a sequence of length ``n`` from token ``i``."""
        if not self.absolute:
            return i + self.offset
        return self.offset - 1 if self.offset > 0 else n + self.offset

    @property
    def spelling(self) -> str:
        """The command written canonically: ``%x[-1,0]``, ``%t[@1,0,"^\\u"]``."""
        where = f"@{self.offset}" if self.absolute else str(self.offset)
        regex = f',"{self.regex}"' if self.regex is not None else ""
        return f"%{self.letter}[{where},{self.column}{regex}]"

    def describe(self) -> str:
        """What the command computes, in words (for ``crfkit patterns``)."""
        regex = f'"{self.regex}"'
        what = {
            "x": "the token",
            "X": "the token case folded",
            "t": f"true/false: does {regex} match",
            "T": f"true/false: does {regex} match ignoring case",
            "m": f"the first match of {regex} (empty if none)",
            "M": f"the first match of {regex} ignoring case, case folded (empty if none)",
            "v": "the number in the column, the value multiplying the weights",
        }[self.letter]
        if self.absolute:
            where = "first token" if self.offset == 1 else \
                "last token" if self.offset == -1 else \
                f"token {self.offset} from the start" if self.offset > 0 else \
                f"token {-self.offset} from the end"
            where = f"absolute @{self.offset} ({where})"
        else:
            where = "current token" if self.offset == 0 else \
                f"offset {self.offset:+d} ({abs(self.offset)} " \
                f"{'before' if self.offset < 0 else 'after'})"
        return f"{self.spelling}  {what}, column {self.column}, {where}"


@dataclass(frozen=True)
class Pattern:
    """A parsed pattern line: literal pieces interleaved with commands.

    ``literals`` has one more element than ``commands``; the observation is
    ``literals[0] + v0 + literals[1] + v1 + ... + literals[-1]``. ``value`` is
    the ``%v`` command (None without one): its spelling stays in the literal
    text, and the number it reads multiplies the observation's weights.
    """

    kind: str
    text: str
    literals: tuple[str, ...]
    commands: tuple[Command, ...]
    line: int = 0
    path: str | None = field(default=None, compare=False)
    column: int = field(default=1, compare=False)  # 1-based column of the pattern in its line
    value: Command | None = None

    @property
    def name(self) -> str:
        """The literal text before the first ``:`` (``U00``, ``u``), or all of it if none."""
        head = self.literals[0]
        return head.split(":", 1)[0] if ":" in head else head

    @property
    def kind_name(self) -> str:
        return {"u": "unigram", "b": "bigram", "*": "unigram+bigram", "s": "skip",
                "t": "trigram", "e": "skip-edge observation"}[self.kind]

    @property
    def is_constant(self) -> bool:
        return not self.commands

    @property
    def has_unigram(self) -> bool:
        return self.kind in "u*"

    @property
    def has_bigram(self) -> bool:
        return self.kind in "b*"

    @property
    def has_trigram(self) -> bool:
        """Observation x (y[t-2], y[t-1], y[t]): second-order models only (``--order 2``)."""
        return self.kind == "t"

    @property
    def regex_mode(self) -> str:
        """``"wapiti"`` if the regexes use Wapiti's own matcher, else ``"crfkit"``."""
        return "wapiti" if any(c.regex_mode == "wapiti" for c in self.commands) else "crfkit"

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
    if text.startswith("\ufeff"):
        text = text[1:]
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        indent = len(raw) - len(raw.lstrip())
        patterns.append(parse_pattern_line(line, lineno=lineno, path=path, indent=indent))
    return patterns


REGEX_MODES = ("crfkit", "wapiti")


def with_regex_mode(patterns: list[Pattern], mode: str) -> list[Pattern]:
    """The patterns with their regex commands matched in ``mode`` (one of REGEX_MODES).

    ``"wapiti"`` reproduces Wapiti's matcher bug for bug (lazy ``*``, its
    ``%m`` length counter, ASCII classes, regexes run on its padding tokens):
    what converted Wapiti models need, and what ``train --regex wapiti`` gives.
    """
    if mode not in REGEX_MODES:
        raise ValueError(f"unknown regex mode {mode!r}")
    return [replace(p, commands=tuple(
        replace(c, regex_mode=mode) if c.regex is not None else c for c in p.commands))
        for p in patterns]


def read_patterns(path: str | os.PathLike, *, encoding: str = "utf-8",
                  regex_mode: str = "crfkit") -> list[Pattern]:
    """Read and parse a pattern file (its regexes matched in ``regex_mode``)."""
    name = os.fspath(path)
    try:
        with open(name, "rb") as handle:
            data = handle.read()
    except OSError as err:
        raise PatternError(f"cannot read pattern file: {err.strerror}", path=name) from None
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise PatternError(f"cannot decode as {encoding} at byte offset {err.start}: "
                           f"{err.reason} (give the file's encoding with --encoding)",
                           path=name, line=line) from None
    except UnicodeError as err:  # a codec that decodes nothing ("undefined")
        raise PatternError(f"cannot decode pattern file as {encoding}: {err}",
                           path=name) from None
    except (LookupError, ValueError, TypeError):  # unknown or not a text encoding
        raise UsageError(f"unknown encoding {encoding!r}") from None
    text = text.replace("\r\n", "\n").replace("\r", "\n")  # as text mode read it
    patterns = parse_patterns(text, path=name)
    if not patterns:
        raise PatternError("pattern file has no patterns", path=name)
    return patterns if regex_mode == "crfkit" else with_regex_mode(patterns, regex_mode)


def parse_pattern_line(text: str, *, lineno: int = 0, path: str | None = None,
                       indent: int = 0) -> Pattern:
    """Parse one non-blank, non-comment pattern line (without surrounding spaces).

    ``indent`` is how many characters were stripped from the start of the
    line in its file, so that error columns point into the file's line.
    """
    return _LineParser(text, lineno, path, indent).parse()


class _LineParser:
    """Recursive-descent parser over one pattern line; positions are 0-based."""

    def __init__(self, text: str, lineno: int, path: str | None, indent: int = 0) -> None:
        self.text = text
        self.lineno = lineno
        self.path = path
        self.indent = indent
        self.pos = 0
        self.open_brackets: list[int] = []  # positions of unclosed '[' in literal text

    def error(self, message: str, pos: int) -> PatternError:
        return PatternError(f"{message} in pattern {self.text!r}", path=self.path,
                            line=self.lineno, column=self.indent + pos + 1)

    def parse(self) -> Pattern:
        text = self.text
        kind = KINDS.get(text[0])
        if kind is None:
            raise self.error(
                f"a pattern starts with u, b, * or s (CRF++: U or B), t (trigram) or e "
                f"(skip-edge observation), not {text[0]!r}", 0)
        literals: list[str] = []
        commands: list[Command] = []
        current: list[str] = []
        value = None
        while self.pos < len(text):
            char = text[self.pos]
            if char != "%":
                self.literal_bracket(char)
                current.append(char)
                self.pos += 1
                continue
            if text[self.pos + 1:self.pos + 2] == VALUE_COMMAND:
                value = self.value_command(kind, value)
                current.append(value.spelling)
                continue
            literals.append("".join(current))
            current = []
            commands.append(self.command())
        if self.open_brackets:
            raise self.error("unbalanced '[': never closed", self.open_brackets[-1])
        literals.append("".join(current))
        if kind == "s" and not commands:
            raise self.error("a skip pattern needs a command: its values are the key that "
                             "joins positions (e.g. s:%x[0,0])", 0)
        if kind == "e" and not commands:
            raise self.error("a skip-edge observation pattern needs a command: its value at "
                             "the ends of an edge conditions it (e.g. e:pos=%x[0,1])", 0)
        return Pattern(kind=kind, text=text, literals=tuple(literals),
                       commands=tuple(commands), line=self.lineno, path=self.path,
                       column=self.indent + 1, value=value)

    def value_command(self, kind: str, before: Command | None) -> Command:
        """``%v[offset,column]``: the one value of a unigram pattern."""
        start = self.pos
        if before is not None:
            raise self.error("a pattern takes one %v (value) command", start)
        if kind != "u":
            raise self.error("%v (a value) needs a unigram pattern (u or U)", start)
        self.pos += 2
        self.expect("[", "expected '[' after %v")
        absolute, offset = self.offset()
        self.expect(",", "expected ',' between offset and column")
        column = self.integer("column", allow_sign=True)
        if column < 0:
            raise self.error(f"negative column {column}", start)
        self.expect("]", "expected ']' to close %v[offset,column] (it takes no regex)")
        return Command(letter=VALUE_COMMAND, offset=offset, absolute=absolute, column=column,
                       source_column=self.indent + start + 1)

    def literal_bracket(self, char: str) -> None:
        """Brackets in literal text must pair up: a stray one is almost always a typo.

        (``%x[0,0]]`` or ``%x0,0]``); balanced ones (``u:[%x[0,0]]``) are plain text.
        """
        if char == "[":
            self.open_brackets.append(self.pos)
        elif char == "]":
            if not self.open_brackets:
                raise self.error("unbalanced ']': no command or '[' to close", self.pos)
            self.open_brackets.pop()

    def command(self) -> Command:
        start = self.pos
        self.pos += 1
        if self.pos >= len(self.text):
            raise self.error("'%' at end of pattern: expected a command such as %x[0,0]", start)
        letter = self.text[self.pos]
        if letter not in TEXT_COMMANDS + REGEX_COMMANDS:
            raise self.error(f"unknown command %{letter} (known: %x %X %t %T %m %M %v)",
                             self.pos)
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
        elif self.pos < len(self.text) and self.text[self.pos] == ",":
            raise self.error(f"%{letter} takes no regex (only %t %T %m %M do): "
                             f"%{letter}[offset,column]", self.pos)
        self.expect("]", "expected ']' to close the command (unbalanced brackets)")
        return Command(letter=letter, offset=offset, absolute=absolute, column=column,
                       regex=regex, source_column=self.indent + start + 1)

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
        if abs(value) > MAX_OFFSET:  # padding tables grow with the offset
            raise self.error(f"offset {value} is out of range (at most {MAX_OFFSET} tokens "
                             "away)", start)
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
        escaped_quote = -1  # position of the last \" inside the regex
        while pos < len(self.text) and self.text[pos] != '"':
            if self.text[pos] == "\\":
                if self.text[pos + 1:pos + 2] == '"':
                    escaped_quote = pos
                pos += 2
            else:
                pos += 1
        if pos >= len(self.text):
            if escaped_quote >= 0:
                raise self.error(
                    "dangling '\\' before the closing quote: \\\" is a quote inside the regex, "
                    "so the regex is not closed (write \\\\ for a backslash)", escaped_quote)
            raise self.error("unbalanced quote: the regex is not closed", start - 1)
        # Kept as written: in the dialect \" is a literal quote, and error
        # columns then map straight onto the line.
        source = self.text[start:pos]
        self.pos = pos + 1
        self.check_regex(source, letter, start)
        return source

    def check_regex(self, source: str, letter: str, start: int) -> None:
        from crfkit.features.wregex import RegexSyntaxError, compile_regex

        try:
            compile_regex(source, ignore_case=letter.isupper())
        except RegexSyntaxError as err:
            raise self.error(f"bad regex {source!r}: {err.args[0]}",
                             start + max(err.column, 1) - 1) from None


def check_columns(patterns: list[Pattern], n_columns: int, *, label_column: bool) -> None:
    """Refuse commands that address a column the data does not have."""
    for pattern in patterns:
        for command in pattern.commands + ((pattern.value,) if pattern.value else ()):
            if command.column >= n_columns:
                extra = " (the last column is the label, which patterns cannot read)" \
                    if label_column else ""
                raise PatternError(
                    f"%{command.letter} reads column {command.column} but the data has "
                    f"{n_columns} token column(s), numbered 0..{n_columns - 1}{extra}",
                    path=pattern.path, line=pattern.line, column=command.source_column)
