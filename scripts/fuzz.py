#!/usr/bin/env python3
"""Fuzz crfkit where untrusted input enters: reader, pattern parser, model loader, evaluator.

Usage::

    python scripts/fuzz.py --examples N [--target reader|patterns|model|eval|all]
                           [--seed S] [--time-limit SECONDS] [--boundscheck] [--no-shrink]
                           [--out DIR]

``N`` is the number of inputs *per target* (``--target all`` runs the four
targets, so ``--examples 2500`` gives 10,000 inputs).

The contract checked, for every generated input: crfkit either succeeds or
raises :class:`crfkit.errors.CrfkitError` (or a subclass).  A failure is

* any other exception (``IndexError``, ``ValueError``, ``OverflowError``...),
* a hang: an input that takes longer than ``--time-limit`` seconds (a
  SIGALRM stops Python code; a watchdog (faulthandler) kills the process if
  native code does not return),
* a crash: a segfault in a Numba kernel.  For the model target every model
  that *loads* is then used -- it labels a few sequences (Viterbi and the
  forward-backward paths), prints its observations and round-trips through
  its byte format -- so arrays that passed validation but would make a
  kernel index out of bounds are found.  Out-of-bounds reads in Numba code
  do not always segfault; ``--boundscheck`` re-runs the script with
  ``NUMBA_BOUNDSCHECK=1`` (separate Numba cache, the first run compiles for
  about a minute) so that every such read raises instead,
* a wrong result where an oracle exists (the reader must give the same
  sequences whatever its block size; a loaded model must re-serialise and
  reload to the same labelling).

Inputs come from hypothesis strategies (random bytes, and mutations of real
inputs: the sample corpus in several encodings, the shipped pattern files,
models trained in-process).  Model mutations include byte flips and
truncations (caught by the checksum), byte flips with a *recomputed*
checksum, edits of the JSON header's array table, and -- most importantly --
models decoded with :func:`crfkit.io.fileformat.loads`, mutated (labels,
patterns, column count, wrong dtypes and shapes, missing arrays, out-of-range
indices, negative or non-monotonic pointers, NaN weights...) and re-encoded
with :func:`crfkit.io.fileformat.dumps`, so that only :class:`crfkit.model.model.Model`
validation stands between them and the kernels.

On a failure hypothesis shrinks the input, the script prints the falsifying
case and the traceback, writes the input bytes to ``DIR/fuzz-failure-TARGET.*``
and exits with status 1.  Otherwise it prints, per target, how many inputs
ran, how many were accepted and how many refused (per error class), and the
time taken.
"""

from __future__ import annotations

import argparse
import faulthandler
import gzip
import io
import itertools
import json
import os
import signal
import struct
import sys
import tempfile
import time
import traceback
import zlib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

TARGETS = ("reader", "patterns", "model", "eval")


# --- outcome bookkeeping ------------------------------------------------------------------------
class ExampleTimeout(BaseException):
    """Raised by SIGALRM inside an example (a BaseException: ``except Exception`` can't eat it)."""


class FuzzFailure(Exception):
    """A broken contract that is not an exception of crfkit's own: hang or wrong result."""


@dataclass
class Stats:
    target: str
    runs: int = 0
    accepted: int = 0
    refused: Counter = field(default_factory=Counter)
    failures: int = 0
    seconds: float = 0.0
    last_failure: tuple[Any, bytes | None] | None = None
    error: BaseException | None = None

    def summary(self) -> str:
        refused = ", ".join(f"{name} {n}" for name, n in sorted(self.refused.items()))
        return (f"{self.target:<8} {self.runs:>6} inputs: {self.accepted:>6} accepted, "
                f"{sum(self.refused.values()):>6} refused ({refused or 'none'}); "
                f"{self.failures} failures; {self.seconds:.1f}s")


class Runner:
    """Runs one example under a time limit and classifies its outcome."""

    def __init__(self, stats: Stats, time_limit: float, current: Path) -> None:
        self.stats = stats
        self.time_limit = time_limit
        self.current = current

    def __call__(self, case: Any, materialise: Callable[[Any], bytes | None],
                 check: Callable[[Any], None]) -> None:
        from crfkit.errors import CrfkitError

        stats = self.stats
        stats.runs += 1
        data = materialise(case)
        if data is not None:  # left on disk in case the process dies (segfault, watchdog)
            self.current.write_bytes(data)
        signal.setitimer(signal.ITIMER_REAL, self.time_limit)
        faulthandler.dump_traceback_later(self.time_limit * 3 + 30, exit=True,
                                          file=sys.__stderr__)
        try:
            check(case)
        except CrfkitError as err:
            stats.refused[type(err).__name__] += 1
            _check_message(err)
        except ExampleTimeout:
            stats.failures += 1
            stats.last_failure = (case, data)
            raise FuzzFailure(f"hang: the example took more than {self.time_limit}s") from None
        except BaseException:
            stats.failures += 1
            stats.last_failure = (case, data)
            raise
        else:
            stats.accepted += 1
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            faulthandler.cancel_dump_traceback_later()


def _check_message(err: BaseException) -> None:
    """crfkit errors are printed as one line: they must not contain a line break."""
    text = str(err)
    if "\n" in text or "\r" in text:
        raise FuzzFailure(f"error message spans several lines: {text!r}")


def _on_alarm(signum, frame) -> None:
    raise ExampleTimeout()


# --- shared byte mutations ----------------------------------------------------------------------
INTERESTING_BYTES = [
    b"\n", b"\r\n", b"\r", b"\t", b" ", b"  ", b"\x00", b"\xff", b"\x80", b"\xc3", b"\xe3\x80",
    b"\xef\xbb\xbf", b"\x1f\x8b", b"\x8e", b"\xa4", b"\x8f\xa2", b"\xfe\xff", b"-X-", b"%",
    b"\n\n", b"\t\t", b"\xe3\x80\x80", b"\xc2\xa0", b"~{", b"\x1b$B", b"+AGE-",
    b"+2AA-", b"\\ud800", b"\\U0010ffff",  # lone surrogates in UTF-7, raw_unicode_escape
]
BYTE_OPS = ("flip", "set", "insert", "delete", "duplicate", "truncate", "interesting", "swap")


def byte_ops(max_ops: int = 6):
    from hypothesis import strategies as st

    return st.lists(
        st.tuples(st.sampled_from(BYTE_OPS), st.integers(0, 1 << 24), st.integers(0, 1 << 24),
                  st.integers(0, 255)),
        max_size=max_ops)


def apply_byte_ops(data: bytes, ops: list[tuple[str, int, int, int]]) -> bytes:
    buf = bytearray(data)
    for op, a, b, v in ops:
        n = len(buf)
        i = a % (n + 1)
        if op == "flip" and n:
            buf[a % n] ^= 1 << (v % 8)
        elif op == "set" and n:
            buf[a % n] = v
        elif op == "insert":
            buf[i:i] = bytes([v]) * (1 + b % 4)
        elif op == "delete" and n:
            del buf[i:i + 1 + b % 16]
        elif op == "duplicate" and n:
            j = a % n
            piece = buf[j:j + 1 + b % 64]
            buf[b % (n + 1):b % (n + 1)] = piece
        elif op == "truncate":
            del buf[i:]
        elif op == "interesting":
            buf[i:i] = INTERESTING_BYTES[v % len(INTERESTING_BYTES)]
        elif op == "swap" and n:
            j, k = a % n, b % n
            buf[j], buf[k] = buf[k], buf[j]
    return bytes(buf)


def mostly(valid: list, invalid, odds: int = 16):
    """One of ``valid`` (uniformly), or an ``invalid`` draw one time in ``odds``."""
    from hypothesis import strategies as st

    # Hypothesis favours the ends of a range: the rare branch sits in its middle.
    return st.integers(0, odds - 1).flatmap(
        lambda k: invalid if k == odds // 2 else st.sampled_from(valid))


ENCODINGS = [
    "utf-8", "utf-8-sig", "UTF8", "latin-1", "iso-8859-15", "ascii", "euc-jp", "shift_jis",
    "cp932", "gbk", "gb18030", "big5", "euc-kr", "cp1256", "cp1252", "koi8-r", "iso2022_jp",
    "hz", "utf-7", "raw_unicode_escape", "unicode_escape", "idna", "punycode", "undefined",
    "utf-16", "utf-32", "cp037", "rot13", "hex", "base64", "zlib", "no-such-codec", "",
]


def encodings():
    from hypothesis import strategies as st

    return st.one_of(st.sampled_from(ENCODINGS), st.text(max_size=12))


# --- target: reader -----------------------------------------------------------------------------
JAPANESE = ("東京 名詞 B-LOC\nに 助詞 O\n行く 動詞 O\n\n"
            "大阪 名詞 B-LOC\nの 助詞 O\n「たこ焼き」 名詞 B-FOOD\n")
ARABIC = "القاهرة اسم B-LOC\nفي حرف O\n\nمصر اسم B-LOC\n"
LATIN = "Ça Pro O\nété Nom B-X\n\nnaïve Adj O\n£ Sym O\n"
CHINESE = "北京 NR B-LOC\n欢迎 VV O\n你 PN O\n"


def reader_seeds() -> list[tuple[bytes, str]]:
    with open(ROOT / "data/address-train.txt", "rb") as sample:
        head = b"".join(itertools.islice(sample, 80))
    return [
        (head, "utf-8"),
        (head.replace(b"\n", b"\r\n"), "utf-8"),
        (b"\xef\xbb\xbf" + JAPANESE.encode(), "utf-8-sig"),
        (JAPANESE.encode("euc-jp"), "euc-jp"),
        (JAPANESE.encode("shift_jis"), "shift_jis"),
        (ARABIC.encode("cp1256"), "cp1256"),
        (LATIN.encode("latin-1"), "latin-1"),
        (CHINESE.encode("gbk"), "gbk"),
        (b"a\t\tB\nb c\td\tO\n \t\n\te\tI\n", "utf-8"),
        (b"a+AGE- N B\nb+2AA- V O\n", "utf-7"),
        (b"a\\u00e9 N B\nb\\ud800 V O\n", "raw_unicode_escape"),
        ("a\u3000b X\nc\u00a0d Y\n\n\n".encode(), "utf-8"),
    ]


class ReaderTarget:
    name = "reader"

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.seeds = reader_seeds()

    def strategy(self):
        from hypothesis import strategies as st

        mutated = st.tuples(st.just("mutated"), st.integers(0, len(self.seeds) - 1), byte_ops(8))
        random_bytes = st.tuples(st.just("bytes"), st.binary(max_size=600), st.just([]))
        return st.fixed_dictionaries({
            "input": st.one_of(mutated, mutated, random_bytes),
            # Mostly valid options, so that most inputs reach the parser.
            "encoding": mostly([None], encodings()),  # None: the seed's own
            "sep": mostly(["auto", "auto", "tab", "space"], st.text(max_size=3)),
            "min_columns": mostly([1, 1, 2, 3], st.integers(-3, 10)),
            "via": st.sampled_from(["stream", "stream", "path", "gzpath", "gzstream", "gzbroken",
                                    "gzname", "unseekable"]),
            "block": st.sampled_from([1, 2, 3, 5, 8, 16, 64, 1000]),
            "gz_ops": byte_ops(3),
        })

    def materialise(self, case) -> bytes:
        kind, seed, ops = case["input"]
        data = self.seeds[seed][0] if kind == "mutated" else seed
        return apply_byte_ops(data, ops)

    def encoding(self, case) -> str:
        if case["encoding"] is not None:
            return case["encoding"]
        kind, seed, _ = case["input"]
        return self.seeds[seed][1] if kind == "mutated" else "utf-8"

    def check(self, case) -> None:
        from crfkit.io import text_input

        data = self.materialise(case)
        sequences, error = self.read(case, data)
        if case["via"] in ("stream", "path", "unseekable"):
            original = text_input._BLOCK_SIZE
            text_input._BLOCK_SIZE = case["block"]
            try:
                again, error_again = self.read(case, data)
            finally:
                text_input._BLOCK_SIZE = original
            first, second = (sequences, str(error)), (again, str(error_again))
            if first != second:
                raise FuzzFailure(f"block size {case['block']} changes the result:\n"
                                  f"  64 KiB: {first!r:.500}\n  small:  {second!r:.500}")
        if error is not None:
            raise error

    def read(self, case, data: bytes):
        """(sequences read, the CrfkitError that stopped reading or None)."""
        from crfkit.errors import CrfkitError
        from crfkit.io.reader import read_sequences

        out = []
        source: Any
        via = case["via"]
        if via in ("gzpath", "gzstream", "gzbroken"):
            data = gzip.compress(data, mtime=0)
            if via == "gzbroken":
                data = apply_byte_ops(data, case["gz_ops"])
        if via in ("path", "gzpath", "gzname", "gzbroken"):
            path = self.tmp / ("input.gz" if via != "path" else "input.txt")
            path.write_bytes(data)
            source = str(path)
        elif via == "unseekable":
            source = _Unseekable(data)
        else:
            source = io.BytesIO(data)
        error = None
        try:
            for seq in read_sequences(source, encoding=self.encoding(case), sep=case["sep"],
                                      min_columns=case["min_columns"]):
                _check_sequence(seq, case["min_columns"], out)
                out.append((seq.rows, seq.lines))
        except CrfkitError as err:
            error = err
        return out, error

    def __repr__(self) -> str:
        return "ReaderTarget"


class _Unseekable(io.RawIOBase):
    """A pipe-like binary stream: no seek, no peek, no read1."""

    def __init__(self, data: bytes) -> None:
        self._data = io.BytesIO(data)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        chunk = self._data.read(min(len(buffer), 7))
        buffer[:len(chunk)] = chunk
        return len(chunk)


def _check_sequence(seq, min_columns: int, previous: list) -> None:
    """Invariants of a Sequence: non-empty, same column count, increasing line numbers."""
    if not seq.rows or len(seq.rows) != len(seq.lines):
        raise FuzzFailure(f"empty or inconsistent sequence {seq!r:.200}")
    width = len(previous[0][0][0]) if previous else len(seq.rows[0])
    if any(len(row) != width for row in seq.rows) or width < min_columns:
        raise FuzzFailure(f"sequence with inconsistent columns {seq!r:.200}")
    try:  # model files, string tables and UTF-8 output all need valid Unicode
        "".join(itertools.chain.from_iterable(seq.rows)).encode("utf-8")
    except UnicodeEncodeError:
        raise FuzzFailure(f"the reader yielded a lone surrogate: {seq!r:.200}") from None
    last = previous[-1][1][-1] if previous else 0
    if any(b <= a for a, b in zip([last, *seq.lines], seq.lines, strict=False)):
        raise FuzzFailure(f"line numbers not increasing: {seq.lines!r:.200}")


# --- target: patterns ---------------------------------------------------------------------------
EXTRA_PATTERN_LINES = [
    'u:cap=%t[0,0,"^\\u"]', 'U:num=%T[0,0,"^\\d*$"]', 'u:suf=%m[0,0,".?.?.$"]',
    'u:pre=%M[0,0,"^\\a?\\a?"]', '*:x=%x[@1,0]/%X[@-1,0]', 'b:s=%x[-1,1]', "B", "*", "u", "b",
    'u:q=%t[0,0,"\\""]', 'u:esc=%m[0,0,"\\\\"]', "u:[%x[0,0]]", "U00:%x[ -1 , 0 ]",
    "u:%x[+2,0]/%x[-2,1]", 'u:w=%m[1,0,"\\w*"]', 'u:s=%t[0,0,"\\s"]', 'u:p=%t[0,0,"\\p\\P?"]',
    "u:big=%x[99999999999999999999,0]", "u:abs=%x[@-99999,0]", "u:col=%x[0,99999999]",
    'u:star=%m[0,0,"a*a*a*a*a*a*a*a*b"]', "u:日本=%x[0,0]", "# comment", "",
]
PATTERN_ALPHABET = "uUbB*%xXtTmM[],@-+0123456789\"\\ :/^$.*?dDaAwWlLuUpPsS#\t\n()|{}_é日"


def pattern_pool() -> list[str]:
    lines = []
    for name in ("address.pat", "chunking.pat", "chunking-rich.pat"):
        path = ROOT / "patterns" / name
        if path.exists():
            lines += path.read_text(encoding="utf-8").splitlines()
    return [line for line in lines if line.strip()] + EXTRA_PATTERN_LINES


def pattern_text_strategy(pool: list[str]):
    from hypothesis import strategies as st

    text_ops = st.lists(
        st.tuples(st.sampled_from(["insert", "delete", "replace", "duplicate"]),
                  st.integers(0, 1 << 16), st.text(PATTERN_ALPHABET, max_size=4)),
        max_size=5)
    pool_line = st.sampled_from(pool)
    mutated_line = st.builds(_mutate_text, pool_line, text_ops)
    random_line = st.text(PATTERN_ALPHABET, max_size=40)
    prefixed = st.builds(lambda k, body: k + body, st.sampled_from(["u:", "U00:", "b:", "*:"]),
                         st.text(PATTERN_ALPHABET, max_size=30))
    return pick([pool_line, mutated_line, mutated_line, mutated_line, prefixed, prefixed,
                 mutated_line, random_line, st.text(max_size=20), pool_line])


def pick(strategies: list):
    """One of ``strategies``, each equally likely (``st.one_of`` favours the first)."""
    from hypothesis import strategies as st

    return st.integers(0, len(strategies) - 1).flatmap(lambda k: strategies[k])


def _mutate_text(text: str, ops: list[tuple[str, int, str]]) -> str:
    chars = list(text)
    for op, position, piece in ops:
        i = position % (len(chars) + 1)
        if op == "insert":
            chars[i:i] = piece
        elif op == "delete":
            del chars[i:i + 1 + len(piece)]
        elif op == "replace":
            chars[i:i + len(piece)] = piece
        elif op == "duplicate":
            chars[i:i] = chars[i:i + 1 + len(piece) * 3]
    return "".join(chars)


TOKEN_ALPHABET = "aAbZ09_-.:/%#\"\\ éÉßЖ東京٣７\u3000"


class PatternsTarget:
    name = "patterns"

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.pool = pattern_pool()
        # Compile the feature kernels now, not inside an example's time limit.
        self.check({"lines": self.pool[:20], "newline": "\n", "bom": False,
                    "file_encoding": None, "tokens": [["a", "B", "c"], ["d", "E", "f"]]})

    def strategy(self):
        from hypothesis import strategies as st

        token = st.text(TOKEN_ALPHABET, min_size=1, max_size=12)
        return st.fixed_dictionaries({
            "lines": st.lists(pattern_text_strategy(self.pool), min_size=1, max_size=6),
            "newline": st.sampled_from(["\n", "\r\n", "\r", "\x0b", "\u2028"]),
            "bom": st.booleans(),
            "file_encoding": mostly([None], st.sampled_from(
                ["utf-8", "latin-1", "euc-jp", "utf-16", "undefined", "rot13", "no-such-codec",
                 "a\x00"]), odds=4),
            "tokens": st.lists(st.lists(token, min_size=3, max_size=3), min_size=1, max_size=5),
        })

    def materialise(self, case) -> bytes:
        return self.text(case).encode("utf-8", "surrogatepass")

    @staticmethod
    def text(case) -> str:
        return ("\ufeff" if case["bom"] else "") + case["newline"].join(case["lines"])

    def check(self, case) -> None:
        from crfkit.features.explain import apply_pattern
        from crfkit.features.patterns import (
            check_columns,
            parse_patterns,
            read_patterns,
        )
        from crfkit.io.reader import Sequence

        text = self.text(case)
        if case["file_encoding"] is not None:
            path = self.tmp / "patterns.pat"
            try:
                raw = text.encode(case["file_encoding"])
            except (ValueError, LookupError):  # (UnicodeError is a ValueError)
                raw = text.encode("utf-8", "surrogatepass")
            path.write_bytes(raw)
            read_patterns(path, encoding=case["file_encoding"])
        patterns = parse_patterns(text, path="<fuzz>")
        for pattern in patterns:
            pattern.render([""] * len(pattern.commands))
        if not patterns:
            return
        rows = case["tokens"]
        check_columns(patterns, len(rows[0]), label_column=False)
        seq = Sequence([list(r) for r in rows], list(range(1, len(rows) + 1)))
        reference = {apply_pattern(p, seq.rows, i) for p in self.featurized(patterns)
                     for i in range(len(rows))}
        strings = self.observation_strings(patterns, seq)
        if set(strings) != reference:
            raise FuzzFailure("vectorised observations differ from apply_pattern:\n"
                              f"  vectorised: {sorted(set(strings))!r:.600}\n"
                              f"  reference:  {sorted(reference)!r:.600}")

    @staticmethod
    def featurized(patterns):
        return [p for p in patterns if not (p.is_constant and p.kind == "b")]

    @staticmethod
    def observation_strings(patterns, seq) -> list[str]:
        from crfkit.features.extract import Featurizer

        featurizer = Featurizer(patterns)
        _, components = featurizer.components([seq], grow=True)
        featurizer.build_vocab(components)
        return featurizer.observation_strings()


# --- target: model ------------------------------------------------------------------------------
TINY_CORPUS = (
    "東京 N B-地名\nに P O\n行く V O\n\n"
    "a:b N B-X/1\n%d P I-X/1\n#1 V O\n\n"
    "_B-1 N B-地名\n_B+1 N O\n\n"
    "é N O\nß N B-X/1\n"
)
BIGRAM_PATTERNS = [
    "u:w=%x[0,0]", "b:s=%x[0,1]", "*:W/S=%X[-1,0]/%x[0,1]", '*:pre=%m[0,0,"^.?.?"]',
    'u:num=%T[@-1,0,"\\d"]', "u:first=%x[@1,1]", "b",
]
DECODE_MODES = ["viterbi", "nbest", "marginals", "posterior", "iob", "scores"]
META_KEYS = ["kind", "type", "labels", "patterns", "n_token_columns", "has_trans", "info"]
ARRAY_NAMES = ["weights", "u_ptr", "u_lab", "b_ptr", "b_prev", "b_cur", "obs_keys",
               "obs_pattern", "obs_values"] + [f"table{i}_{s}" for i in range(8)
                                               for s in ("blob", "offsets")]
META_OPS = ("meta_del", "meta_set", "labels_del", "labels_dup", "labels_set", "labels_add",
            "labels_swap", "labels_clear", "pat_del", "pat_dup", "pat_swap", "pat_text",
            "pat_line", "pat_add", "pat_entry", "pat_del_constant", "ncols", "trans_flip",
            "type", "info")
ARRAY_OPS = ("arr_del", "arr_add", "arr_astype", "arr_reshape", "arr_truncate", "arr_extend",
             "arr_set", "arr_fill", "arr_shuffle", "arr_reverse", "arr_swap", "arr_bytes",
             "arr_step", "arr_step", "arr_set", "arr_empty", "weights", "weights")
HEADER_FIELDS = ("name", "dtype", "shape", "offset", "nbytes")
SPECIAL_INTS = [0, 1, -1, 2, -2, 3, 7, 8, 12, 127, 128, 255, 256, 32767, 65535, 2**31 - 1,
                2**31, -2**31, 2**32, 2**53, 2**63 - 1, -2**63, 2**64, 10**30]
SPECIAL_FLOATS = [0.0, -0.0, 1.5, float("nan"), float("inf"), float("-inf"), 1e308, 5e-324]


def json_values():
    from hypothesis import strategies as st

    scalars = st.one_of(st.none(), st.booleans(), st.sampled_from(SPECIAL_INTS),
                        st.integers(), st.sampled_from(SPECIAL_FLOATS), st.text(max_size=8))
    return st.recursive(scalars, lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=4)),
        max_leaves=8)


def train_base_models() -> list[bytes]:
    """Three small models trained in-process: the sample, bigram/regex patterns, odd strings."""
    from crfkit.features.patterns import parse_patterns, read_patterns
    from crfkit.io.reader import read_sequences
    from crfkit.training.train import TrainOptions, train

    sample = list(itertools.islice(read_sequences(ROOT / "data/address-train.txt"), 200))
    models = [train(read_patterns(ROOT / "patterns/address.pat"), sample,
                    TrainOptions(maxiter=5))]
    models.append(train(parse_patterns("\n".join(BIGRAM_PATTERNS)), sample[:60],
                        TrainOptions(maxiter=3)))
    tiny = list(read_sequences(io.BytesIO(TINY_CORPUS.encode())))
    models.append(train(parse_patterns("u:%x[0,0]\nu:%x[-1,1]/%x[0,1]\n*"), tiny,
                        TrainOptions(maxiter=3)))
    return [m.to_bytes() for m in models]


def fresh_base_models(tmp: Path) -> list[bytes]:
    """:func:`train_base_models` in a new interpreter. The bases' bits must not depend on
    what this process ran before: a Numba reduction compiled for one array layout can serve
    another, so the first specialisation a process made can move a weight's last bit."""
    import subprocess

    code = ("import runpy, sys; from pathlib import Path; "
            "m = runpy.run_path(sys.argv[1]); "
            "[Path(sys.argv[2], str(i)).write_bytes(b) "
            "for i, b in enumerate(m['train_base_models']())]")
    out = tmp / "bases"
    out.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-c", code, __file__, str(out)], check=True)
    return [(out / str(i)).read_bytes() for i in range(len(list(out.iterdir())))]


class ModelTarget:
    name = "model"

    def __init__(self, tmp: Path) -> None:
        from crfkit.io import fileformat
        from crfkit.io.reader import read_sequences

        self.tmp = tmp
        self.bases = fresh_base_models(tmp)
        self.decoded = [fileformat.loads(b) for b in self.bases]
        self.headers = [_split_container(b) for b in self.bases]
        test = list(itertools.islice(read_sequences(ROOT / "data/address-test.txt"), 4))
        self.rows = [[row[:-1] for row in seq.rows] for seq in test]
        self.rows.append([["東京", "N"]])
        self.rows.append([["zzz-unseen", "Q"], ["a:b", "%"], ["_B-1", "#"]])
        self.pattern_pool = pattern_pool()
        self.warm_up()

    def warm_up(self) -> None:
        """Compile every labelling kernel now, not inside an example's time limit."""
        from crfkit.model.model import Model

        for data in self.bases:
            for decode in DECODE_MODES:
                self.exercise(Model.from_bytes(data), decode)

    def strategy(self):
        from hypothesis import strategies as st

        base = st.integers(0, len(self.bases) - 1)
        raw_ops = st.lists(st.tuples(st.integers(0, 1 << 24), st.integers(1, 255),
                                     st.booleans()), min_size=1, max_size=4)
        meta_op = st.tuples(st.sampled_from(META_OPS), st.integers(0, 1 << 16),
                            st.integers(0, 1 << 16), json_values())
        array_op = st.tuples(st.sampled_from(ARRAY_OPS), st.integers(0, 1 << 16),
                             st.integers(0, 1 << 16),
                             st.one_of(st.sampled_from(SPECIAL_INTS),
                                       st.sampled_from(SPECIAL_FLOATS), st.integers(-5, 5000)))
        header_op = st.tuples(st.sampled_from(("field", "field", "del", "dup", "swap", "meta")),
                              st.integers(0, 1 << 16), st.sampled_from(HEADER_FIELDS),
                              json_values())
        structured = st.lists(st.one_of(meta_op, array_op, array_op), min_size=1, max_size=4)
        return st.fixed_dictionaries({
            "mode": st.sampled_from(["bytes", "magic", "truncate", "flip", "flip_crc",
                                     "flip_crc_header", "header", "header", "version",
                                     *["structured"] * 7, *["weights"] * 3]),
            "base": base,
            "raw": raw_ops,
            "cut": st.integers(0, 1 << 24),
            "random": st.binary(max_size=200),
            "version": st.sampled_from([0, 2, 3, 255, 2**31, 2**32 - 1]),
            "header_ops": st.lists(header_op, min_size=1, max_size=3),
            "ops": structured,
            "decode": st.sampled_from(DECODE_MODES),
        })

    # -- building the input bytes ---------------------------------------------------------------
    def materialise(self, case) -> bytes:
        from crfkit.io import fileformat

        mode, base = case["mode"], self.bases[case["base"]]
        if mode == "bytes":
            return case["random"]
        if mode == "magic":
            return fileformat.MAGIC + struct.pack("<I", 1) + case["random"]
        if mode == "truncate":
            return base[:case["cut"] % len(base)]
        if mode == "flip":
            return apply_flips(base, case["raw"])
        if mode == "flip_crc":
            return with_crc(apply_flips(base[:-4], case["raw"]))
        if mode == "flip_crc_header":
            prefix, header, _ = self.headers[case["base"]]
            limit = 20 + len(header)
            ops = [(pos % limit, xor, f) for pos, xor, f in case["raw"]]
            return with_crc(apply_flips(base[:-4], ops))
        if mode == "version":
            patched = base[:8] + struct.pack("<I", case["version"]) + base[12:]
            return with_crc(patched[:-4]) if case["cut"] % 2 else patched
        if mode == "header":
            return self.header_mutation(case)
        if mode == "weights":
            return self.weight_mutation(case)
        return self.structured_mutation(case)

    def weight_mutation(self, case) -> bytes:
        """A valid model with other weights (finite, up to +-16): the accepted side of the
        target, whatever else the draws hit (their values depend on the process's loaded
        modules, which Hypothesis reads constants from)."""
        from crfkit.io import fileformat

        meta, arrays = self.decoded[case["base"]]
        arrays = {name: arr.copy() for name, arr in arrays.items()}
        weights = arrays["weights"]
        for pos, value, _ in case["raw"]:
            weights[pos % weights.size] = (value - 128) / 8.0
        return fileformat.dumps(meta, arrays)

    def header_mutation(self, case) -> bytes:
        prefix, header, payload = self.headers[case["base"]]
        header = json.loads(json.dumps(header))  # a deep copy
        entries = header["arrays"]
        for op, index, key, value in case["header_ops"]:
            i = index % len(entries) if entries else 0
            if op == "field" and entries:
                entries[i][key] = value if not isinstance(value, int) or index % 3 else \
                    _nudge(entries[i][key], value)
            elif op == "del" and entries:
                del entries[i]
            elif op == "dup" and entries:
                entries.append(dict(entries[i]))
            elif op == "swap" and len(entries) > 1:
                j = (index // 7) % len(entries)
                entries[i][key], entries[j][key] = entries[j][key], entries[i][key]
            elif op == "meta":
                header["meta"][META_KEYS[index % len(META_KEYS)]] = value
        raw = json.dumps(header).encode()
        out = prefix[:12] + struct.pack("<Q", len(raw)) + raw
        out += bytes(-len(out) % 8) + payload
        return with_crc(out)

    def structured_mutation(self, case) -> bytes:
        from crfkit.io import fileformat

        meta, arrays = self.decoded[case["base"]]
        meta = json.loads(json.dumps(meta))
        arrays = {name: arr.copy() for name, arr in arrays.items()}
        for op in case["ops"]:
            if op[0] in META_OPS:
                self.mutate_meta(meta, *op)
            else:
                mutate_arrays(arrays, *op)
        return fileformat.dumps(meta, arrays)

    def mutate_meta(self, meta: dict, op: str, a: int, b: int, value: Any) -> None:
        labels = meta.get("labels") if isinstance(meta.get("labels"), list) else None
        patterns = meta.get("patterns") if isinstance(meta.get("patterns"), list) else None
        if op == "meta_del" and meta:
            del meta[sorted(meta)[a % len(meta)]]
        elif op == "meta_set":
            meta[META_KEYS[a % len(META_KEYS)]] = value
        elif op == "ncols":
            meta["n_token_columns"] = value if b % 2 else [-1, 0, 1, 2, 3, 7, 2**31][a % 7]
        elif op == "trans_flip":
            meta["has_trans"] = not meta.get("has_trans") if b % 3 else value
        elif op == "type":
            meta["type"] = ["crf", "memm", "maxent", "hmm", value][a % 5]
        elif op == "info":
            meta["info"] = {"note": value} if b % 4 else value
        elif labels is not None and op.startswith("labels"):
            i = a % len(labels) if labels else 0
            if op == "labels_del" and labels:
                del labels[i]
            elif op == "labels_dup" and labels:
                labels.insert(b % (len(labels) + 1), labels[i])
            elif op == "labels_set" and labels:
                labels[i] = value if b % 2 else ["", " ", "B-X\n", "_", "O", "é:/%#"][b % 6]
            elif op == "labels_add":
                labels.append(value if b % 2 else f"NEW-{b}")
            elif op == "labels_swap" and labels:
                j = b % len(labels)
                labels[i], labels[j] = labels[j], labels[i]
            elif op == "labels_clear":
                labels.clear()
        elif patterns is not None and op.startswith("pat"):
            i = a % len(patterns) if patterns else 0
            if op == "pat_del" and patterns:
                del patterns[i]
            elif op == "pat_dup" and patterns:
                patterns.insert(b % (len(patterns) + 1), json.loads(json.dumps(patterns[i])))
            elif op == "pat_swap" and patterns:
                j = b % len(patterns)
                patterns[i], patterns[j] = patterns[j], patterns[i]
            elif op == "pat_text" and patterns and isinstance(patterns[i], dict):
                patterns[i]["text"] = value if b % 3 == 0 else \
                    self.pattern_pool[b % len(self.pattern_pool)]
            elif op == "pat_line" and patterns and isinstance(patterns[i], dict):
                patterns[i]["line"] = value
            elif op == "pat_add":
                patterns.append({"text": self.pattern_pool[b % len(self.pattern_pool)],
                                 "line": a})
            elif op == "pat_entry" and patterns:
                patterns[i] = value
            elif op == "pat_del_constant":  # e.g. a bare "b" while has_trans stays true
                constant = [k for k, p in enumerate(patterns)
                            if isinstance(p, dict) and "%" not in str(p.get("text"))]
                if constant:
                    del patterns[constant[b % len(constant)]]

    # -- using the model -------------------------------------------------------------------------
    def check(self, case) -> None:
        from crfkit.model.model import Model

        data = self.materialise(case)
        model = Model.from_bytes(data, name="<fuzz>")
        first = self.exercise(model, case["decode"])
        again = Model.from_bytes(model.to_bytes(), name="<re-saved>")
        if self.exercise(again, case["decode"]) != first:
            raise FuzzFailure("a loaded model labels differently after to_bytes/from_bytes")

    def exercise(self, model, decode: str) -> str:
        """Label a few sequences with the model (proves its arrays are safe to index)."""
        from crfkit.io.reader import Sequence
        from crfkit.labelling import label as label_module

        n = model.n_token_columns
        width = n if 1 <= n <= 8 else 2
        seqs = []
        for rows in self.rows:
            fitted = [(row + ["x"] * width)[:width] for row in rows]
            seqs.append(Sequence(fitted, list(range(1, len(fitted) + 1))))
        out = io.StringIO()
        model.featurizer.observation_strings()
        try:  # crfkit dump / crfkit info, where they exist
            from crfkit.model import describe as inspect_module
        except ImportError:
            inspect_module = None
        if inspect_module is not None:
            inspect_module.dump(model, io.StringIO(), top=2)
            inspect_module.write_info(model, io.StringIO())
        labelled = label_module.label_sequences(model, seqs)
        out.write(repr(labelled))
        options_class = getattr(label_module, "LabelOptions", None)
        if options_class is not None:
            options = {"viterbi": {}, "nbest": {"nbest": 3, "scores": True},
                       "marginals": {"marginals": True}, "posterior": {"posterior": True},
                       "iob": {"constraints": "iob"}, "scores": {"scores": True}}[decode]
            label_module.label_stream(model, seqs, out, options_class(**options))
        return out.getvalue()


def _split_container(data: bytes) -> tuple[bytes, dict, bytes]:
    (header_length,) = struct.unpack_from("<Q", data, 12)
    header = json.loads(data[20:20 + header_length])
    start = 20 + header_length
    start += -start % 8
    return data[:20], header, data[start:-4]


def with_crc(body: bytes) -> bytes:
    return body + struct.pack("<I", zlib.crc32(body))


def apply_flips(data: bytes, ops: list[tuple[int, int, bool]]) -> bytes:
    buf = bytearray(data)
    for position, xor, in_header in ops:
        # Bias half of the flips to the first 2 KiB: prefix, header and the first arrays.
        limit = min(len(buf), 2048) if in_header else len(buf)
        if limit:
            buf[position % limit] ^= xor
    return bytes(buf)


def _nudge(old: Any, value: int) -> Any:
    """An off-by-something change of an integer header field (offsets, sizes, shapes)."""
    if isinstance(old, int) and not isinstance(old, bool):
        return old + (value % 17) - 8
    if isinstance(old, list) and old and isinstance(old[0], int):
        return [old[0] + (value % 5) - 2, *old[1:]]
    return value


def mutate_arrays(arrays: dict, op: str, a: int, b: int, value: Any) -> None:
    import numpy as np

    from crfkit.io.fileformat import ALLOWED_DTYPES

    names = sorted(arrays)
    if not names and op != "arr_add":
        return
    name = names[a % len(names)] if names else ""
    arr = arrays.get(name)
    if op == "arr_del":
        del arrays[name]
    elif op == "arr_add":
        new = ARRAY_NAMES[b % len(ARRAY_NAMES)] if b % 4 else f"extra{b}"
        arrays[new] = np.full(b % 9, _coerce(value, np.dtype("<i8")), dtype=np.int64)
    elif op == "arr_astype":
        dtype = np.dtype(sorted(ALLOWED_DTYPES)[b % len(ALLOWED_DTYPES)])
        with np.errstate(all="ignore"):
            arrays[name] = arr.astype(dtype)
    elif op == "arr_reshape":
        shapes = [(arr.size, 1), (1, arr.size), (), (arr.size, 0), (0, arr.size)]
        shape = shapes[b % len(shapes)]
        if shape == ():
            arrays[name] = arr.reshape(-1)[:1].reshape(()) if arr.size else arr.reshape(0)
        elif 0 in shape:
            arrays[name] = np.zeros(shape, dtype=arr.dtype)
        else:
            arrays[name] = arr.reshape(shape)
    elif op == "arr_truncate":
        arrays[name] = arr.reshape(-1)[:b % (arr.size + 1)]
    elif op == "arr_extend":
        extra = np.full(1 + b % 5, _coerce(value, arr.dtype), dtype=arr.dtype)
        arrays[name] = np.concatenate([arr.reshape(-1), extra])
    elif op == "arr_set" and arr.size:
        flat = arr.reshape(-1).copy()
        flat[[b % arr.size, -1, 0][a % 3] if b % 5 else b % arr.size] = _coerce(value, arr.dtype)
        arrays[name] = flat.reshape(arr.shape)
    elif op == "arr_fill":
        arrays[name] = np.full(arr.shape, _coerce(value, arr.dtype), dtype=arr.dtype)
    elif op == "arr_shuffle":
        arrays[name] = np.random.default_rng(b).permutation(arr.reshape(-1)).reshape(arr.shape)
    elif op == "arr_reverse":
        arrays[name] = arr.reshape(-1)[::-1].reshape(arr.shape).copy()
    elif op == "arr_swap":
        other = names[b % len(names)]
        arrays[name], arrays[other] = arrays[other], arrays[name]
    elif op == "arr_bytes" and arr.nbytes:
        raw = bytearray(arr.tobytes())
        raw[b % len(raw)] ^= 1 << (a % 8)
        arrays[name] = np.frombuffer(bytes(raw), dtype=arr.dtype).reshape(arr.shape).copy()
    elif op == "arr_step" and arr.size:
        # Off-by-one (or -n) on one element: pointers, label ids, value ids, keys.
        flat = arr.reshape(-1).copy()
        i = [b % arr.size, -1, 0][a % 3]
        with np.errstate(all="ignore"):
            flat[i] = flat[i] + (1 if value == 0 else _coerce(value, arr.dtype) % 3 - 1 or 1)
        arrays[name] = flat.reshape(arr.shape)
    elif op == "arr_empty":
        arrays[name] = np.zeros(0, dtype=arr.dtype)
    elif op == "weights" and "weights" in arrays:
        # Valid but unusual weights: huge, tiny, all equal (ties), one dominating.
        w = arrays["weights"].astype(np.float64).reshape(-1)
        v = float(value) if isinstance(value, int) or np.isfinite(value) else 1e300
        with np.errstate(all="ignore"):
            choices = [np.full_like(w, v), w * v, -w,
                       np.where(np.arange(w.size) == b % max(w.size, 1), v, w)]
            arrays["weights"] = np.nan_to_num(choices[a % len(choices)], nan=0.0,
                                              posinf=1e308, neginf=-1e308)


def _coerce(value: Any, dtype) -> Any:
    """``value`` as a scalar of ``dtype``, wrapping integers like C would."""
    import numpy as np

    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return float(value)
    if dtype.kind == "b":
        return bool(value)
    info = np.iinfo(dtype)
    number = int(value) if not isinstance(value, float) or np.isfinite(value) else 0
    span = info.max - info.min + 1
    return dtype.type((number - info.min) % span + info.min)


# --- target: eval -------------------------------------------------------------------------------
TAGS = ["O", "B-NP", "I-NP", "E-NP", "S-NP", "B-VP", "I-VP", "B-", "I-", "-", "B-0", "[", "]",
        ".", "-X-", "B-DATE-TIME", "I-é", "B-東京", "x", "0", "O-X", "B-NP-"]


EVAL_SEEDS = [
    (b"w B-+2AA- O\nv I-X I-X\n", "utf-7"),  # UTF-7 can spell a lone surrogate
    (b"w B-\\ud800 O\n\nv B-X B-X\n", "raw_unicode_escape"),
    ("東京 B-LOC B-LOC\nに O O\n\n大阪 B-LOC I-LOC\n".encode("euc-jp"), "euc-jp"),
    ("Ça B-X B-X\nété I-X O\n".encode("latin-1"), "latin-1"),
    ("القاهرة B-LOC B-LOC\n".encode("cp1256"), "cp1256"),
    ("東京\u3000都 B-LOC B-LOC\n-X- O O\nx\u00a0y O B-Y\n".encode(), "utf-8"),
]


class EvalTarget:
    name = "eval"

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp

    def strategy(self):
        from hypothesis import strategies as st

        tag = pick([st.sampled_from(TAGS)] * 3
                   + [st.text(st.characters(exclude_categories=["Cs"]), max_size=5)])
        line = st.one_of(
            st.lists(tag, min_size=0, max_size=4).map(" ".join),
            st.tuples(st.sampled_from(["w", "-X-", "東京", "-DOCSTART-"]), tag, tag).map(
                lambda t: "\t".join(t)),
            st.just(""),
        )
        tag_file = st.lists(line, max_size=30).map(lambda lines: "\n".join(lines).encode(
            "utf-8", "surrogatepass"))
        seeded = st.tuples(st.sampled_from(EVAL_SEEDS), st.none()).map(
            lambda t: t[0])  # (bytes, their encoding)
        generated = st.tuples(pick([tag_file, tag_file, st.binary(max_size=300)]), st.none())
        return st.fixed_dictionaries({
            "data": pick([generated, generated, generated, seeded]),
            "ops": byte_ops(3),
            "delimiter": mostly([None, None, " ", "\t", "\\s+"], st.one_of(st.sampled_from(
                ["\\t", "  +", "|", "(", "[", "\\", "a*", "x|", "", "-", "(?P<x>y)",
                 "((((a))))", "\\b"]), st.text(max_size=3)), odds=6),
            "outside": mostly(["O"], st.one_of(st.sampled_from(TAGS), st.text(max_size=3)),
                              odds=4),
            "raw": mostly([False], st.just(True), odds=4),
            "latex": mostly([False], st.just(True), odds=4),
            "fmt": st.sampled_from(["text", "json"]),
            "tokens": st.booleans(),
            "scheme": mostly([None], st.sampled_from(["iob1", "iob2", "iobes", "bioes"]),
                             odds=4),
            "encoding": mostly([None], encodings(), odds=6),  # None: utf-8 or the seed's
        })

    def materialise(self, case) -> bytes:
        return apply_byte_ops(case["data"][0], case["ops"])

    @staticmethod
    def encoding(case) -> str:
        return case["encoding"] or case["data"][1] or "utf-8"

    def check(self, case) -> None:
        from crfkit.evaluation.run_eval import run_eval_command

        path = self.tmp / "tags.txt"
        path.write_bytes(self.materialise(case))
        out = io.StringIO()
        run_eval_command(str(path), delimiter=case["delimiter"], outside=case["outside"],
                         raw=case["raw"], latex=case["latex"], fmt=case["fmt"],
                         tokens=case["tokens"], scheme=case["scheme"],
                         encoding=self.encoding(case), out=out)
        # The report is written to a terminal or a file in the input's encoding.
        out.getvalue().encode("utf-8", "surrogateescape")


TARGET_CLASSES = {"reader": ReaderTarget, "patterns": PatternsTarget, "model": ModelTarget,
                  "eval": EvalTarget}


# --- driver -------------------------------------------------------------------------------------
def run_target(name: str, examples: int, seed: int = 0, *, time_limit: float = 10.0,
               shrink: bool = True, out_dir: Path | None = None, quiet: bool = False) -> Stats:
    """Fuzz one target with ``examples`` inputs; ``Stats.error`` holds the failure, if any."""
    from hypothesis import HealthCheck, Phase, Verbosity, given, settings
    from hypothesis import seed as hypothesis_seed

    stats = Stats(name)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix=f"crfkit-fuzz-{name}-") as tmp:
        target = TARGET_CLASSES[name](Path(tmp))
        runner = Runner(stats, time_limit, Path(tmp) / "current-input")
        phases = [Phase.generate, Phase.shrink] if shrink else [Phase.generate]

        @hypothesis_seed(seed)
        @settings(max_examples=examples, deadline=None, database=None, phases=phases,
                  suppress_health_check=list(HealthCheck), derandomize=False,
                  verbosity=Verbosity.quiet if quiet else Verbosity.normal,
                  report_multiple_bugs=False)
        @given(case=target.strategy())
        def fuzz(case) -> None:
            runner(case, target.materialise, target.check)

        previous = signal.signal(signal.SIGALRM, _on_alarm)
        try:
            fuzz()
        except BaseException as err:  # noqa: BLE001 - every failure is reported
            if isinstance(err, KeyboardInterrupt):
                raise
            stats.error = err
            if stats.last_failure is not None and out_dir is not None:
                _save_reproducer(stats, out_dir)
        finally:
            signal.signal(signal.SIGALRM, previous)
    stats.seconds = time.perf_counter() - started
    return stats


def _save_reproducer(stats: Stats, out_dir: Path) -> None:
    case, data = stats.last_failure
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / f"fuzz-failure-{stats.target}.case.txt").write_text(repr(case) + "\n")
    if data is not None:
        (out_dir / f"fuzz-failure-{stats.target}.bin").write_bytes(data)


def _reexec_with_boundscheck() -> None:
    if os.environ.get("NUMBA_BOUNDSCHECK") == "1":
        return
    env = dict(os.environ, NUMBA_BOUNDSCHECK="1")
    env.setdefault("NUMBA_CACHE_DIR", str(Path(tempfile.gettempdir()) / "crfkit-fuzz-numba"))
    print(f"* re-running with NUMBA_BOUNDSCHECK=1, NUMBA_CACHE_DIR={env['NUMBA_CACHE_DIR']}",
          flush=True)
    os.execve(sys.executable, [sys.executable, *sys.argv], env)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=200, help="inputs per target")
    parser.add_argument("--target", choices=[*TARGETS, "all"], default="all")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--time-limit", type=float, default=10.0,
                        help="seconds one input may take before it counts as a hang")
    parser.add_argument("--boundscheck", action="store_true",
                        help="turn Numba out-of-bounds accesses into exceptions")
    parser.add_argument("--no-shrink", action="store_true", help="report failures unshrunk")
    parser.add_argument("--out", type=Path,
                        default=Path(tempfile.gettempdir()) / "crfkit-fuzz",
                        help="directory for the reproducer of a failure")
    args = parser.parse_args(argv)
    if args.boundscheck:
        _reexec_with_boundscheck()
    faulthandler.enable(file=sys.__stderr__)  # tracebacks of a segfault in native code
    targets = TARGETS if args.target == "all" else (args.target,)
    print(f"* fuzzing {', '.join(targets)}: {args.examples} inputs each, seed {args.seed}, "
          f"time limit {args.time_limit}s per input, boundscheck "
          f"{'on' if os.environ.get('NUMBA_BOUNDSCHECK') == '1' else 'off'}", flush=True)
    started = time.perf_counter()
    all_stats = []
    for name in targets:
        stats = run_target(name, args.examples, args.seed, time_limit=args.time_limit,
                           shrink=not args.no_shrink, out_dir=args.out)
        all_stats.append(stats)
        print(stats.summary(), flush=True)
        if stats.error is not None:
            print(f"\n*** {name}: failure (a foreign exception, a hang or a wrong result)",
                  file=sys.stderr)
            traceback.print_exception(stats.error, file=sys.stderr)
            if stats.last_failure is not None:
                print(f"falsifying case: {stats.last_failure[0]!r:.3000}", file=sys.stderr)
                print(f"reproducer written to {args.out}/fuzz-failure-{name}.*",
                      file=sys.stderr)
            break
    total = sum(s.runs for s in all_stats)
    failures = sum(s.failures for s in all_stats)
    print(f"* total: {total} inputs, {failures} failures, "
          f"{time.perf_counter() - started:.1f}s", flush=True)
    return 1 if any(s.error is not None for s in all_stats) else 0


if __name__ == "__main__":
    sys.exit(main())
