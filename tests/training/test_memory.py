"""The memory guard (--max-memory) and --all-features (every observation x label)."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from crfkit.errors import UsageError
from crfkit.features.patterns import parse_patterns
from crfkit.features.vocab import ObservationVocab
from crfkit.io.reader import Sequence, read_sequences
from crfkit.training import memory
from crfkit.training.corpus import encode_training
from crfkit.training.memory import (
    MemoryBudget,
    available_memory,
    dense_costs,
    estimate_training,
    parse_size,
)
from crfkit.training.train import TrainOptions, _budget
from tests.helpers import ROOT, SHARED, missing_shared, one_error_line, run

CONLL_TRAIN = SHARED / "data/conll2000/train.txt"
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
    # x, g, x_new, g_new, d, the exponentiated weights and the 2 x (history - 1) pairs
    # besides; a gradient row per thread
    assert budget.vectors == 4 + 2 * options.history
    assert budget.gradient_rows >= 1
    assert _budget(TrainOptions(max_memory=12345)).limit == 12345
    assert _budget(TrainOptions(rho1=0.5)).vectors == 5 + 2 * options.history
    assert _budget(TrainOptions(), devel=True).vectors == 6 + 2 * options.history
    # a saved state keeps the history, so the returned weights are a copy
    assert _budget(TrainOptions(save_state="s.npz")).vectors == 5 + 2 * options.history
    assert (_budget(TrainOptions(algo="sgd-l1")).vectors,
            _budget(TrainOptions(algo="sgd-l1")).gradient_rows) == (3, 0)


def test_estimate_by_hand(monkeypatch):
    """Counts worked out on paper: L = 3, 4 vectors, 2 gradient rows."""
    patterns = parse_patterns("u:a=%x[0,0]\nb:b=%x[0,0]\n*:c=%x[-1,0]/%x[0,0]\nB\n")
    listed = patterns[:3]
    obs = np.array([2, 5, 4])
    uni = np.array([True, False, True])
    bi = np.array([False, True, True])
    dense = dense_costs(listed, obs, uni, bi, 3)
    # a: 2*3; b: 5*9; c: 4*3 + 4*9
    assert [c.features for c in dense] == [6, 45, 48]
    budget = MemoryBudget(1 << 40, 4, 2)
    now, peak = 100 << 20, 105 << 20
    monkeypatch.setattr(memory, "process_memory", lambda: (now, peak))
    estimate = estimate_training(dense, 3, True, budget, unbuilt_bytes_per_weight=16)
    assert estimate.n_features == 6 + 45 + 48 + 9  # and the transitions
    coming = 108 * (8 * (4 + 2) + 16) + memory.RUNTIME_BYTES + 2 * memory.THREAD_BYTES
    assert estimate.total_bytes == max(peak, now + coming) == now + coming
    # the peak so far counts when training will need less, unless it came before training
    peak = 1 << 30
    assert estimate_training(dense, 3, True, budget).total_bytes == peak
    budget.peak_before = peak
    assert estimate_training(dense, 3, True, budget).total_bytes == now + coming - 16 * 108


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


def _seen_and_dense(**dense_option: bool):
    """The same corpus (a unigram and a ``*`` pattern) encoded with the features seen
    and with ``dense_option`` (all_features or all_labels)."""
    seqs = _sequences(ROOT / "data/address-train.txt", 120)
    patterns = parse_patterns("u:w=%x[0,0]\n*:s=%x[-1,1]/%x[0,1]\nB\n")
    return encode_training(patterns, seqs), encode_training(patterns, seqs, **dense_option)


def test_all_features_is_dense_and_keeps_the_counts():
    sparse, dense = _seen_and_dense(all_features=True)
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


def test_all_labels_is_dense_in_labels_and_keeps_the_pairs_seen():
    """--all-labels: every (observation, label), the observation bigrams those seen."""
    sparse, labels = _seen_and_dense(all_labels=True)
    L = sparse.space.n_labels
    s, d = sparse.space, labels.space
    assert (np.diff(d.u_ptr) == L).all() and d.n_u == s.n_obs * L > s.n_u
    u_owner = np.repeat(np.arange(s.n_obs), np.diff(s.u_ptr))
    assert (labels.empirical[d.u_ptr[u_owner] + s.u_lab] == sparse.empirical[:s.n_u]).all()
    assert labels.empirical[:d.n_u].sum() == sparse.empirical[:s.n_u].sum()
    # the observation bigrams and transitions are the sparse model's, counts included
    assert (d.b_ptr == s.b_ptr).all() and (d.b_prev == s.b_prev).all()
    assert (d.b_cur == s.b_cur).all()
    assert (labels.empirical[d.n_u:] == sparse.empirical[s.n_u:]).all()


def test_all_labels_budget_counts_the_labels_only():
    """The guard before building counts every label of each unigram observation, and
    not the L x L pairs --all-features would add (those stay as seen)."""
    seqs = _sequences(ROOT / "data/address-train.txt", 1500)
    patterns = parse_patterns("u:w=%x[0,0]\nb:wide=%x[-1,0]/%x[0,0]/%x[1,0]\nB\n")
    # --all-features: ~1.6M weights (290 MB at 176 bytes each), --all-labels: ~50k (9 MB)
    now, peak = memory.process_memory()
    limit = now + memory.RUNTIME_BYTES + memory.THREAD_BYTES + (100 << 20)
    with pytest.raises(UsageError, match="drop --all-features"):
        encode_training(patterns, seqs, all_features=True,
                        budget=MemoryBudget(limit, 20, 0, peak))
    corpus = encode_training(patterns, seqs, all_labels=True,
                             budget=MemoryBudget(limit, 20, 0, peak))
    with pytest.raises(UsageError, match="drop --all-labels"):  # the option given is named
        encode_training(patterns, seqs, all_labels=True,
                        budget=MemoryBudget(now + (1 << 20), 20, 0, peak))
    unigram_obs = int((corpus.featurizer.vocab.pattern == 0).sum())  # u:w's observations
    assert corpus.space.n_u == unigram_obs * corpus.space.n_labels


@pytest.mark.parametrize("other", [["--all-features"], ["--likely-features", "0.1"]])
def test_all_labels_refuses_what_it_cannot_combine_with(tmp_path, other):
    result = run("train", "-q", "-i", "1", "--all-labels", *other, "-p", PAT,
                 str(ROOT / "data/address-train.txt"), str(tmp_path / "m.model"))
    assert result.exit_code != 0
    assert "--all-labels" in one_error_line(result)
    assert not (tmp_path / "m.model").exists()


def test_cli_all_labels_trains_labels_and_is_recorded(tmp_path):
    train, test = ROOT / "data/address-train.txt", ROOT / "data/address-test.txt"
    for name, flags in (("plain", []), ("labels", ["--all-labels"])):
        result = run("train", "-q", "-i", "5", *flags, "-p", PAT, str(train),
                     str(tmp_path / f"{name}.model"))
        assert result.exit_code == 0, result.stderr
    result = run("label", "-m", str(tmp_path / "labels.model"), "-c", str(test),
                 str(tmp_path / "out.txt"))
    assert result.exit_code == 0, result.stderr
    from crfkit.model.model import Model
    plain, labels = Model.load(tmp_path / "plain.model"), Model.load(tmp_path / "labels.model")
    assert labels.info["options"]["all_labels"] is True
    assert "all_labels" not in plain.info["options"]  # default files stay what they were
    assert (np.diff(labels.space.u_ptr) == len(labels.labels)).all()
    assert labels.space.n_u > plain.space.n_u


def test_cli_all_features_trains_and_labels(tmp_path):
    model = tmp_path / "m.model"
    train = ROOT / "data/address-train.txt"
    result = run("train", "-q", "-i", "5", "--all-features", "-p", PAT, str(train), str(model))
    assert result.exit_code == 0, result.stderr
    out = tmp_path / "out.txt"
    result = run("label", "-m", str(model), "-c", str(ROOT / "data/address-test.txt"), str(out))
    assert result.exit_code == 0, result.stderr
    from crfkit.model.model import Model
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


@pytest.mark.skipif(bool(missing_shared(CONLL_TRAIN)), reason=missing_shared(CONLL_TRAIN))
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


@pytest.mark.parametrize("dense", [False, True], ids=["seen", "all-features"])
def test_guard_counts_the_features_training_creates(tmp_path, dense):
    """The count the guard refuses with is the trained model's, exactly, pattern by pattern
    (it was an upper bound: one feature per occurrence)."""
    flags = ["--all-features"] if dense else []
    train = str(ROOT / "data/address-train.txt")
    model = tmp_path / "m.model"
    assert run("train", "-q", "-i", "1", *flags, "-p", PAT, train, str(model)).exit_code == 0
    line = one_error_line(run("train", "-q", "--max-memory", "1M", *flags, "-p", PAT, train,
                              str(tmp_path / "refused.model")), "training would need about")
    from crfkit.model.model import Model
    m = Model.load(model)
    assert f" for {m.space.n_weights:,} features," in line
    per_obs = np.diff(m.space.u_ptr) + np.diff(m.space.b_ptr)
    owner = m.featurizer.vocab.pattern
    named = 0
    for i, p in enumerate(m.patterns):
        if f"{p.text!r} (line {p.line}): " in line:
            named += 1
            n_obs, n_features = int((owner == i).sum()), int(per_obs[owner == i].sum())
            assert (f"{p.text!r} (line {p.line}): {n_obs:,} observations -> "
                    f"{n_features:,} features") in line
    assert named == 3


# --- the estimate against the measured peak of a real run ----------------------------------------
_ESTIMATE = re.compile(r"about ([\d.]+) (KB|MB|GB) of memory at the peak")
_UNIT = {"KB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30}
linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="peak RSS from /proc/self/status")


# The CLI's entry point in a child that reports its own VmHWM (wait4's peak would
# start from this large process's size at fork).
_CHILD = """import sys
from crfkit.cli import main
try:
    main()
finally:
    with open("/proc/self/status") as f:
        peak = [line.split()[1] for line in f if line.startswith("VmHWM:")][0]
    print(f"child peak {peak} kB", file=sys.stderr)
"""


def _train_child(*args: str) -> tuple[int, str, int]:
    """``crfkit train ARGS`` in a child: exit status, stderr, the child's peak RSS in bytes."""
    child = subprocess.run([sys.executable, "-c", _CHILD, "train", *args], cwd=ROOT,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    peak = re.search(r"^child peak (\d+) kB$", child.stderr, re.MULTILINE)
    assert peak, child.stderr
    return child.returncode, child.stderr, int(peak.group(1)) * 1024


def _estimate(stderr: str) -> int:
    m = _ESTIMATE.search(stderr)
    assert m, stderr
    return int(float(m.group(1)) * _UNIT[m.group(2)])


@pytest.fixture(scope="module")
def warm(tmp_path_factory):
    """One short run first: a cold Numba cache would compile in the measured runs. In this
    process: it fills the same on-disk cache without starting another interpreter."""
    where = tmp_path_factory.mktemp("warm")
    text = (ROOT / "data/address-train.txt").read_text(encoding="utf-8")
    (where / "part.txt").write_text("\n\n".join(text.split("\n\n")[:50]) + "\n",
                                    encoding="utf-8")
    result = run("train", "-q", "-i", "1", "-p", PAT, where / "part.txt", where / "m.model")
    assert result.exit_code == 0, result.stderr


@pytest.fixture(scope="module")
def conll_part(tmp_path_factory) -> Path:
    """The first 2,000 sentences of CoNLL-2000 (47k tokens)."""
    if missing_shared(CONLL_TRAIN):
        pytest.skip(missing_shared(CONLL_TRAIN))
    text = CONLL_TRAIN.read_text(encoding="utf-8")
    path = tmp_path_factory.mktemp("conll") / "part.txt"
    path.write_text("\n\n".join(text.split("\n\n")[:2000]) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def rich_run(warm, conll_part, tmp_path_factory) -> tuple[str, int]:
    """(stderr, measured peak) of chunking-rich.pat on the CoNLL-2000 part (391k features).

    Three iterations: the footprint grows a little more until the L-BFGS history
    is full (six), which the estimate counts; the tolerance covers that.
    """
    model = tmp_path_factory.mktemp("rich") / "m.model"
    status, stderr, peak = _train_child("-i", "3", "-p", str(ROOT / "patterns/chunking-rich.pat"),
                                        str(conll_part), str(model))
    assert status == 0, stderr
    return stderr, peak


@linux_only
def test_estimate_is_within_a_quarter_of_the_measured_peak(rich_run):
    estimate, peak = _estimate(rich_run[0]), rich_run[1]
    assert 0.75 * peak <= estimate <= 1.25 * peak, (estimate >> 20, peak >> 20)


@linux_only
def test_estimate_with_all_features_is_within_a_quarter_of_the_peak(warm, tmp_path):
    """Dense features (279k): the optimiser's vectors are a fifth of the footprint."""
    status, stderr, peak = _train_child("-i", "3", "--all-features", "-p", PAT,
                                        str(ROOT / "data/address-train.txt"),
                                        str(tmp_path / "m.model"))
    assert status == 0, stderr
    estimate = _estimate(stderr)
    assert 0.75 * peak <= estimate <= 1.25 * peak, (estimate >> 20, peak >> 20)


@linux_only
def test_a_limit_above_the_real_need_lets_training_run(rich_run, conll_part, tmp_path):
    """30% over the measured peak (about 240 MB), under the old guard's upper bound (450.6 MB
    for 1,525,505 features; the model has 390,738): it trains."""
    limit = int(1.3 * rich_run[1])
    status, stderr, _ = _train_child("-q", "-i", "1", "--max-memory", str(limit), "-p",
                                     str(ROOT / "patterns/chunking-rich.pat"), str(conll_part),
                                     str(tmp_path / "m.model"))
    assert status == 0, stderr
    assert (tmp_path / "m.model").exists()


def test_refusal_tells_the_fixed_part_from_the_data_and_advises_accordingly():
    """Most of a small job's footprint is the process itself (interpreter, numpy, Numba):
    a limit below it can only be raised, -f/--cutoff reduces only what the data adds."""
    from crfkit.training.memory import Estimate, check

    mb = 1 << 20
    estimate = Estimate(158 * mb, 25_000, [], fixed_bytes=140 * mb)
    with pytest.raises(UsageError) as err:
        check(estimate, 100 * mb, dense_option=None, n_labels=3)
    message = str(err.value)
    assert "140.0 MB fixed" in message and "18.0 MB for the data" in message
    assert "To fit: raise --max-memory above 158.0 MB" in message
    with pytest.raises(UsageError) as err:
        check(estimate, 150 * mb, dense_option=None, n_labels=3)
    assert "To fit: raise -f/--cutoff" in str(err.value)


def test_cli_refusal_of_a_small_job_names_its_fixed_part(tmp_path):
    result = run("train", "-q", "--max-memory", "100M", "-p", PAT,
                 str(ROOT / "data/address-train.txt"), str(tmp_path / "m.model"))
    line = one_error_line(result, "fixed", "for the data and its features")
    size, unit = line.split(" (")[1].split(" fixed")[0].split()
    fixed = float(size) * {"MB": 1, "GB": 1024}[unit]  # the suite's own process may be large
    assert fixed > 50  # the interpreter and Numba alone; the data adds a few MB
    assert "To fit: raise --max-memory above" in line


def test_the_token_columns_and_the_keys_are_freed_before_training(monkeypatch, tmp_path):
    """The interned columns (the ids of every token, 16 MB on Brown) and the observations'
    keys (8 MB) are not kept while the optimiser runs; the model file has the keys."""
    import weakref

    import crfkit.training.train as training

    refs: list[weakref.ref] = []
    seen: list[bool] = []
    collect, fit = training.collect_columns, training.fit

    def collect_and_watch(*args, **kwargs):
        columns = collect(*args, **kwargs)
        refs.extend(weakref.ref(ids) for ids in columns.ids.values())
        return columns

    def fit_and_look(problem, *args, **kwargs):
        seen.extend(ref() is None for ref in refs)
        seen.append(problem.corpus.featurizer.vocab._keys is None)
        return fit(problem, *args, **kwargs)

    monkeypatch.setattr(training, "collect_columns", collect_and_watch)
    monkeypatch.setattr(training, "fit", fit_and_look)
    patterns = parse_patterns((ROOT / "patterns/address.pat").read_text())
    model = training.train(patterns, _sequences(ROOT / "data/address-train.txt", 60),
                           TrainOptions(maxiter=1))
    assert len(seen) > 1 and all(seen)
    model.save(tmp_path / "m")  # the keys hashed anew
    monkeypatch.undo()
    monkeypatch.setattr(ObservationVocab, "drop_keys", lambda self, n_commands: None)
    kept = training.train(patterns, _sequences(ROOT / "data/address-train.txt", 60),
                          TrainOptions(maxiter=1))
    kept.save(tmp_path / "kept")  # the keys made when the vocabulary was built
    assert (tmp_path / "m").read_bytes() == (tmp_path / "kept").read_bytes()
