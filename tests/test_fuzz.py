"""A short run of scripts/fuzz.py per target, and the crashes it found, as regressions.

The script runs many more inputs (``python scripts/fuzz.py --examples 2500``); here
each target gets a few dozen, so that a change that lets a foreign exception escape
is caught by the ordinary test run.
"""

from __future__ import annotations

import importlib.util
import io
import json
import struct
import sys
import zlib
from pathlib import Path

import pytest

from crfkit.errors import CrfkitError, ModelFormatError, PatternError, UsageError
from crfkit.io import fileformat

ROOT = Path(__file__).resolve().parents[1]


def load_fuzz_script():
    spec = importlib.util.spec_from_file_location("crfkit_fuzz_script", ROOT / "scripts/fuzz.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


fuzz = load_fuzz_script()


@pytest.mark.parametrize("target", fuzz.TARGETS)
def test_fuzz_target_raises_only_crfkit_errors(target, tmp_path):
    stats = fuzz.run_target(target, 40, seed=1234, time_limit=30.0, shrink=False,
                            out_dir=tmp_path, quiet=True)
    assert stats.error is None, f"{stats.summary()}\n{stats.last_failure!r:.2000}"
    assert stats.runs == 40 and stats.accepted + sum(stats.refused.values()) == 40
    assert stats.accepted > 0 and stats.refused  # both outcomes are exercised


def test_fuzz_script_command_line(tmp_path, capsys):
    assert fuzz.main(["--examples", "15", "--target", "eval", "--seed", "3",
                      "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "eval" in out and "15 inputs" in out and "0 failures" in out


def test_a_foreign_exception_is_reported_with_its_reproducer(tmp_path, monkeypatch, capsys):
    """The script itself: a check that raises ValueError fails the run and saves the input."""

    def broken(self, case):
        if self.materialise(case):
            raise ValueError("planted")

    monkeypatch.setattr(fuzz.EvalTarget, "check", broken)
    assert fuzz.main(["--examples", "30", "--target", "eval", "--out", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "ValueError: planted" in err and "falsifying case" in err
    assert (tmp_path / "fuzz-failure-eval.bin").read_bytes()


def test_a_hang_is_reported(tmp_path, monkeypatch, capsys):
    import time

    def slow(self, case):
        time.sleep(5)

    monkeypatch.setattr(fuzz.EvalTarget, "check", slow)
    stats = fuzz.run_target("eval", 3, time_limit=0.2, shrink=False, out_dir=tmp_path,
                            quiet=True)
    assert isinstance(stats.error, fuzz.FuzzFailure) and "hang" in str(stats.error)


# --- regressions: every crash the fuzzer found ---------------------------------------------------
@pytest.mark.parametrize("encoding", ["a\x00", "idna"])
def test_reader_refuses_odd_encodings_as_usage_errors(encoding):
    from crfkit.io.reader import read_sequences

    with pytest.raises(UsageError, match="encoding"):
        list(read_sequences(io.BytesIO(b"a B\n"), encoding=encoding))


@pytest.mark.parametrize("data,encoding", [(b"a N B\nb+2AA- N O\n", "utf-7"),
                                           (b"a N B\nb\\ud800 N O\n", "raw_unicode_escape")])
def test_reader_refuses_lone_surrogates(data, encoding):
    """They would crash the model writer (UTF-8 string tables) and UTF-8 output later."""
    from crfkit.errors import InputError
    from crfkit.io.reader import read_sequences

    got = []
    with pytest.raises(InputError, match="lone surrogate") as caught:
        for seq in read_sequences(io.BytesIO(data), encoding=encoding):
            got.append(seq.rows)
    assert caught.value.line == 2 and got == []  # (one sequence: lines 1-2)


@pytest.mark.parametrize("block_size", [1, 8, 1 << 16])
def test_a_surrogate_before_an_undecodable_byte_is_reported_first(monkeypatch, block_size):
    """The first bad line wins whatever the block size (found by the block-size oracle)."""
    from crfkit.errors import InputError
    from crfkit.io import reader, text_input

    monkeypatch.setattr(text_input, "_BLOCK_SIZE", block_size)
    data = b"a N B\n\nb+2AA- N O\nc N O\nd+\xff N O\n"
    with pytest.raises(InputError, match="lone surrogate") as caught:
        list(reader.read_sequences(io.BytesIO(data), encoding="utf-7"))
    assert caught.value.line == 3


def test_train_with_lone_surrogates_is_one_error_line(tmp_path):
    from click.testing import CliRunner

    from crfkit.cli import cli

    pat, data = tmp_path / "p.pat", tmp_path / "d.txt"
    pat.write_text("u:%x[0,0]\n")
    data.write_bytes(b"a N B\n\nb+2AA- N O\n")
    result = CliRunner().invoke(cli, ["train", "-q", "-p", str(pat), "--encoding", "utf-7",
                                      str(data), str(tmp_path / "m.model")])
    assert result.exit_code == 1 and result.exception.__class__ is SystemExit
    assert result.stderr.strip().splitlines() == [result.stderr.strip()]
    assert f"{data}:3" in result.stderr and "lone surrogate" in result.stderr


def test_eval_refuses_lone_surrogates(tmp_path):
    from crfkit.errors import InputError
    from crfkit.evaluation.reading import read_eval_file

    path = tmp_path / "tags.txt"
    path.write_bytes(b"w O O\nw B-+2AA- O\n")
    with pytest.raises(InputError, match="lone surrogate") as caught:
        read_eval_file(path, encoding="utf-7")
    assert caught.value.line == 2


@pytest.mark.parametrize("encoding,error", [
    ("no-such-codec", UsageError), ("rot13", UsageError), ("a\x00", UsageError),
    ("undefined", PatternError),
])
def test_read_patterns_with_a_bad_encoding(tmp_path, encoding, error):
    from crfkit.features.patterns import read_patterns

    path = tmp_path / "p.pat"
    path.write_text("u:%x[0,0]\n")
    with pytest.raises(error):
        read_patterns(path, encoding=encoding)


@pytest.mark.parametrize("line", ["u:%x[99999999999999999999,0]", "u:%x[@-2147483648,0]",
                                  "u:%x[1001,0]"])
def test_huge_offsets_are_pattern_errors(line):
    from crfkit.features.patterns import parse_patterns

    with pytest.raises(PatternError, match="out of range"):
        parse_patterns(line)


def test_largest_offset_still_works():
    from crfkit.features.extract import Featurizer
    from crfkit.features.patterns import MAX_OFFSET, parse_patterns
    from crfkit.io.reader import Sequence

    patterns = parse_patterns(f"u:%x[{MAX_OFFSET},0]\nu:%x[@-{MAX_OFFSET},0]")
    Featurizer(patterns).components([Sequence([["a"], ["b"]], [1, 2])], grow=True)


@pytest.mark.parametrize("options", [{"scheme": "bioes"}, {"encoding": "idna"},
                                     {"encoding": "undefined"}])
def test_eval_bad_scheme_or_encoding_is_a_usage_error(tmp_path, options):
    from crfkit.evaluation.run_eval import run_eval_command

    path = tmp_path / "tags.txt"
    path.write_text("w B-NP B-NP\n")
    arguments = {"delimiter": None, "outside": "O", "raw": False, "latex": False,
                 "fmt": "text", "tokens": False, "scheme": None, "encoding": "utf-8",
                 **options}
    with pytest.raises(UsageError):
        run_eval_command(str(path), out=io.StringIO(), **arguments)


@pytest.fixture(scope="module")
def model_parts():
    from crfkit.features.patterns import parse_patterns
    from crfkit.io.reader import read_sequences
    from crfkit.training.train import TrainOptions, train

    corpus = "a N B-X\nb V O\n\nc N B-X\na V O\n"
    model = train(parse_patterns("u:%x[0,0]\nb:%x[0,1]\nb\n"),
                  list(read_sequences(io.BytesIO(corpus.encode()))), TrainOptions(maxiter=3))
    return fileformat.loads(model.to_bytes())


def mutated(parts, edit) -> bytes:
    meta, arrays = parts
    meta = json.loads(json.dumps(meta))
    edit(meta)
    return fileformat.dumps(meta, dict(arrays))


@pytest.mark.parametrize("edit,message", [
    (lambda m: m["labels"].__setitem__(0, "B-X\n"), "line break"),
    (lambda m: m["patterns"].pop(), "no constant bigram pattern"),  # has_trans stays true
    (lambda m: m.__setitem__("n_token_columns", 0), "token columns"),
    (lambda m: m["patterns"][0].__setitem__("text", "u:%x[0,0]\nu"), "bad pattern entry"),
])
def test_model_validation_refuses_what_crashed_labelling_or_dump(model_parts, edit, message):
    from crfkit.model.model import Model

    with pytest.raises(ModelFormatError, match=message):
        Model.from_bytes(mutated(model_parts, edit))


def test_lone_surrogates_in_the_header_are_refused(model_parts):
    from crfkit.model.model import Model

    data = mutated(model_parts, lambda m: m["labels"].__setitem__(0, "SURROGATE"))
    (length,) = struct.unpack_from("<Q", data, 12)
    header = data[20:20 + length].replace(b'"SURROGATE"', b'"\\ud800xxx"')
    assert len(header) == length
    body = data[:20] + header + data[20 + length:-4]
    with pytest.raises(ModelFormatError, match="not valid Unicode"):
        Model.from_bytes(body + struct.pack("<I", zlib.crc32(body)))


def test_untouched_model_parts_still_load(model_parts):
    from crfkit.model.model import Model

    model = Model.from_bytes(mutated(model_parts, lambda m: None))
    assert isinstance(model, Model) and not isinstance(model, CrfkitError)
