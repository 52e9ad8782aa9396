"""The memory guard (--max-memory) and --all-features (every observation x label)."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from crfkit.corpus import encode_training
from crfkit.errors import UsageError
from crfkit.memory import (
    INDEX_BYTES,
    MemoryBudget,
    available_memory,
    estimate_training,
    parse_size,
)
from crfkit.patterns import parse_patterns
from crfkit.reader import Sequence, read_sequences
from crfkit.train import TrainOptions, _budget
from tests.helpers import ROOT, one_error_line, run

CONLL_TRAIN = ROOT.parent / "shared/data/conll2000/train.txt"
PAT = str(ROOT / "patterns/address.pat")


@pytest.mark.parametrize("text,expected", [
    ("1024", 1024), ("2K", 2048), ("512M", 512 << 20), ("8G", 8 << 30), ("1.5GB", 3 << 29),
    ("2GiB", 2 << 30), ("3 g", 3 << 30), ("1T", 1 << 40)])
def test_parse_size(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize("text", ["", "G", "-1G", "12X", "1e9", "one"])
def test_parse_size_refuses_nonsense(text):
    with pytest.raises(UsageError, match="--max-memory"):
        parse_size(text)


def test_default_limit_is_the_available_memory():
    options = TrainOptions()
    budget = _budget(options)
    assert abs(budget.limit - available_memory()) < (256 << 20)
    assert budget.vectors == 8 + 2 * options.history
    assert _budget(TrainOptions(max_memory=12345)).limit == 12345


def test_estimate_by_hand():
    """Counts worked out on paper: L = 3, 10 tokens in 2 sequences, 4 vectors."""
    patterns = parse_patterns("u:a=%x[0,0]\nb:b=%x[0,0]\n*:c=%x[-1,0]/%x[0,0]\nB\n")
    listed = patterns[:3]
    obs = np.array([2, 5, 4])
    uni = np.array([True, False, True])
    bi = np.array([False, True, True])
    kwargs = dict(n_tokens=10, n_sequences=2, has_trans=True, vectors=4, data_bytes=100)
    dense = estimate_training(listed, obs, uni, bi, 3, all_features=True, **kwargs)
    # a: 2*3; b: 5*9; c: 4*3 + 4*9; transitions 9
    assert [c.features for c in dense.patterns] == [6, 45, 48]
    assert dense.n_features == 6 + 45 + 48 + 9
    per_weight = 8 * 4 + INDEX_BYTES
    assert dense.total_bytes == 108 * per_weight + 16 * 8 * 108 + 100
    sparse = estimate_training(listed, obs, uni, bi, 3, all_features=False, **kwargs)
    # seen combinations: at most one per occurrence (10 tokens, 8 token pairs)
    assert [c.features for c in sparse.patterns] == [6, 8, 10 + 8]
    assert sparse.n_features == 6 + 8 + 18 + 9


def _sequences(path: Path, n: int) -> list[Sequence]:
    return list(read_sequences(path))[:n]


def test_encode_refuses_over_budget_and_names_the_pattern():
    seqs = _sequences(ROOT / "data/address-train.txt", 200)
    patterns = parse_patterns("u:w=%x[0,0]\nb:wide=%x[-1,0]/%x[0,0]/%x[1,0]\nB\n")
    with pytest.raises(UsageError) as err:
        encode_training(patterns, seqs, all_features=True, budget=MemoryBudget(1 << 20, 20))
    message = str(err.value)
    assert "training would need about" in message and "'b:wide=" in message
    assert "-f/--cutoff" in message and "u: patterns" in message
    corpus = encode_training(patterns, seqs, all_features=True, budget=MemoryBudget(1 << 40, 20))
    assert corpus.space.n_weights > 1000


def test_all_features_is_dense_and_keeps_the_counts():
    seqs = _sequences(ROOT / "data/address-train.txt", 120)
    patterns = parse_patterns("u:w=%x[0,0]\n*:s=%x[-1,1]/%x[0,1]\nB\n")
    sparse = encode_training(patterns, seqs)
    dense = encode_training(patterns, seqs, all_features=True)
    L = sparse.space.n_labels
    s, d = sparse.space, dense.space
    assert (dense.featurizer.vocab.keys == sparse.featurizer.vocab.keys).all()
    bigram_obs = np.flatnonzero(dense.featurizer.vocab.pattern == 1)
    assert (np.diff(d.u_ptr) == L).all()
    n_b = np.diff(d.b_ptr)
    assert (n_b[bigram_obs] == L * L).all() and n_b.sum() == len(bigram_obs) * L * L
    # every seen feature sits at its (observation, label) place with the same count
    u_owner = np.repeat(np.arange(s.n_obs), np.diff(s.u_ptr))
    assert (d.u_lab[d.u_ptr[u_owner] + s.u_lab] == s.u_lab).all()
    assert (dense.empirical[d.u_ptr[u_owner] + s.u_lab] == sparse.empirical[:s.n_u]).all()
    b_owner = np.repeat(np.arange(s.n_obs), np.diff(s.b_ptr))
    where = d.b_ptr[b_owner] + s.b_prev * L + s.b_cur
    assert (d.b_prev[where] == s.b_prev).all() and (d.b_cur[where] == s.b_cur).all()
    assert (dense.empirical[d.n_u + where] == sparse.empirical[s.n_u:s.trans_offset]).all()
    assert dense.empirical.sum() == sparse.empirical.sum()


def test_cli_all_features_trains_and_labels(tmp_path):
    model = tmp_path / "m.model"
    train = ROOT / "data/address-train.txt"
    result = run("train", "-q", "-i", "5", "--all-features", "-p", PAT, str(train), str(model))
    assert result.exit_code == 0, result.stderr
    out = tmp_path / "out.txt"
    result = run("label", "-m", str(model), "-c", str(ROOT / "data/address-test.txt"), str(out))
    assert result.exit_code == 0, result.stderr
    from crfkit.model import Model
    m = Model.load(model)
    assert m.info["options"]["all_features"] is True
    assert "max_memory" not in m.info["options"]
    assert (np.diff(m.space.u_ptr) == len(m.labels)).all()


def test_cli_refuses_with_one_line_and_writes_nothing(tmp_path):
    model = tmp_path / "m.model"
    model.write_bytes(b"previous")
    result = run("train", "-q", "--max-memory", "64K", "-p", PAT,
                 str(ROOT / "data/address-train.txt"), str(model))
    one_error_line(result, "training would need about", "over the limit of 64.0 KB",
                   "-f/--cutoff", "--max-memory")
    assert model.read_bytes() == b"previous"
    one_error_line(run("train", "--max-memory", "lots", "-p", PAT,
                       str(ROOT / "data/address-train.txt"), str(model)), "--max-memory")


@pytest.mark.skipif(not CONLL_TRAIN.exists(), reason="needs ../shared/data/conll2000")
def test_explosive_pattern_file_is_refused_within_seconds(tmp_path):
    """Bar: bigram patterns over word trigrams on CoNLL-2000, Wapiti-style dense features."""
    pat = tmp_path / "explosive.pat"
    pat.write_text("U00:%x[0,0]\n"
                   "B10:%x[-2,0]/%x[-1,0]/%x[0,0]\n"
                   "B11:%x[-1,0]/%x[0,0]/%x[1,0]\n"
                   "B12:%x[0,0]/%x[1,0]/%x[2,0]\n"
                   "B\n")
    model = tmp_path / "m.model"
    started = time.perf_counter()
    result = run("train", "--all-features", "--max-memory", "16G", "-p", str(pat),
                 str(CONLL_TRAIN), str(model))
    elapsed = time.perf_counter() - started
    line = one_error_line(result, "training would need about", "GB", "B11:%x[-1,0]/%x[0,0]/%x[1,0]")
    assert elapsed < 30, elapsed
    assert not model.exists()
    needed = float(line.split("about ")[1].split(" GB")[0])
    assert needed > 16
