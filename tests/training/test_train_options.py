"""`crfkit train` options end to end: algorithms, model types, L1, devel, compact, -m, Ctrl-C.

Trainings use a few hundred address sequences and -i limits, so each takes
well under a second once the kernels are compiled (and cached on disk).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from crfkit.evaluation.scoring import evaluate
from crfkit.io.reader import read_sequences
from crfkit.labelling.label import encode
from crfkit.model.model import Model
from tests.helpers import ROOT, decode_best, one_error_line, run

PAT = str(ROOT / "patterns/address.pat")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> dict[str, Path]:
    """Address data split into train (300), devel (150) and test (200) files."""
    tmp = tmp_path_factory.mktemp("address")
    seqs = list(read_sequences(ROOT / "data/address-train.txt"))
    test = list(read_sequences(ROOT / "data/address-test.txt"))

    def write(name: str, part) -> Path:
        path = tmp / name
        path.write_text("".join("\n".join(" ".join(r) for r in s.rows) + "\n\n" for s in part))
        return path

    return {"dir": tmp, "train": write("train.txt", seqs[:300]),
            "devel": write("devel.txt", seqs[300:450]), "test": write("test.txt", test[:200])}


def train_ok(*args: str):
    result = run("train", *args)
    assert result.exit_code == 0, result.stderr
    return result


def test_f1(model_path: Path, test_path: Path) -> float:
    """Chunk F1 of a model on a labelled file, decoded as its type requires."""
    model = Model.load(model_path)
    seqs = list(read_sequences(test_path))
    data = encode(model, seqs)
    ids = decode_best(model.model_type, model.weights, data, model.space)
    names = np.array(model.labels, dtype=object)
    pred = [names[ids[data.seq_ptr[s]:data.seq_ptr[s + 1]]].tolist() for s in range(len(seqs))]
    return evaluate([[r[-1] for r in s.rows] for s in seqs], pred).f1


test_f1.__test__ = False  # a helper, not a test


def test_lists_of_algorithms_and_types(corpus):
    out = corpus["dir"] / "never.model"
    result = train_ok("-a", "list", str(corpus["train"]), str(out))
    assert [line.split()[0] for line in result.stdout.splitlines()] == [
        "l-bfgs", "sgd-l1", "ap", "l2sgd", "pa", "arow", "mira", "rprop", "rprop+",
        "rprop-", "bcd"]
    result = train_ok("-T", "list")
    assert [line.split()[0] for line in result.stdout.splitlines()] == ["crf", "memm", "maxent",
                                                                        "skipchain"]
    assert not out.exists()


def test_l1_gives_zeros_and_compact_shrinks_the_file(corpus):
    tmp = corpus["dir"]
    l2, l1, small = tmp / "l2.model", tmp / "l1.model", tmp / "l1c.model"
    train_ok("-q", "-p", PAT, "-i", "60", str(corpus["train"]), str(l2))
    train_ok("-q", "-p", PAT, "-1", "0.5", "-2", "0", "-i", "60", str(corpus["train"]), str(l1))
    train_ok("-q", "-p", PAT, "-1", "0.5", "-2", "0", "-i", "60", "-c", str(corpus["train"]),
             str(small))
    dense, sparse, compacted = Model.load(l2), Model.load(l1), Model.load(small)
    assert np.count_nonzero(sparse.weights) < 0.3 * np.count_nonzero(dense.weights)
    assert compacted.info["nonzero_weights"] == np.count_nonzero(sparse.weights)
    assert small.stat().st_size < 0.5 * l1.stat().st_size
    assert compacted.space.n_obs < sparse.space.n_obs
    labelled = [run("label", "-m", str(m), "-l", str(corpus["test"])).stdout for m in (l1, small)]
    assert labelled[0] == labelled[1]
    assert test_f1(small, corpus["test"]) > 95.0


@pytest.mark.parametrize("args,least", [
    (["-a", "sgd-l1", "-1", "0.2", "-i", "5"], 95.0),
    (["-a", "ap", "-i", "5"], 95.0),
    (["-T", "memm", "-i", "40"], 95.0),
    (["-T", "maxent", "-i", "40"], 90.0),
    (["-T", "maxent", "-a", "ap", "-i", "5"], 90.0),
])
def test_algorithms_and_types_train_and_label(corpus, args, least):
    model = corpus["dir"] / "m.model"
    result = train_ok("-p", PAT, *args, str(corpus["train"]), str(model))
    assert "[   1]" in result.stderr
    loaded = Model.load(model)
    expected_type = args[args.index("-T") + 1] if "-T" in args else "crf"
    assert loaded.model_type == expected_type
    assert loaded.info["algorithm"] == (args[args.index("-a") + 1] if "-a" in args else "l-bfgs")
    assert test_f1(model, corpus["test"]) > least
    # `crfkit label` decodes each type as the one decoder does
    labelled = run("label", "-m", str(model), "-l", str(corpus["test"])).stdout.split()
    assert labelled == predicted(model, corpus["test"])


def predicted(model_path: Path, test_path: Path) -> list[str]:
    model = Model.load(model_path)
    data = encode(model, list(read_sequences(test_path)))
    ids = decode_best(model.model_type, model.weights, data, model.space)
    return [model.labels[i] for i in ids]


@pytest.mark.parametrize("algo", [["-a", "l-bfgs"], ["-a", "sgd-l1"], ["-a", "ap"],
                                  ["-T", "memm"], ["-T", "maxent"]])
def test_cutoff_works_with_every_algorithm_and_type(corpus, algo):
    sizes = []
    for cutoff in ("1", "3"):
        model = corpus["dir"] / f"cut{cutoff}.model"
        train_ok("-q", "-p", PAT, *algo, "-i", "3", "-f", cutoff, str(corpus["train"]),
                 str(model))
        sizes.append(len(Model.load(model).featurizer.vocab))
    assert sizes[1] < 0.6 * sizes[0]


@pytest.mark.parametrize("algo", [[], ["-T", "memm"], ["-a", "sgd-l1", "--eta0", "1"],
                                  ["-a", "ap", "--seed", "1"]])
def test_devel_stops_early_and_keeps_the_best_weights(corpus, algo):
    model = corpus["dir"] / "dev.model"
    result = train_ok("-p", PAT, *algo, "-d", str(corpus["devel"]), "--devel-patience", "3",
                      "-e", "0", str(corpus["train"]), str(model))
    lines = [line for line in result.stderr.splitlines() if line.startswith("  [")]
    assert all("dev-F1=" in line and "dev-err=" in line for line in lines)
    f1s = [float(line.split("dev-F1=")[1].split()[0]) for line in lines]
    best = int(np.argmax(f1s))  # first best
    assert len(f1s) == best + 1 + 3  # stopped 3 iterations after the best
    assert "no development F1 improvement for 3 iterations" in result.stderr
    loaded = Model.load(model)
    assert loaded.info["devel_best"]["iteration"] == best + 1
    assert test_f1(model, corpus["devel"]) == pytest.approx(f1s[best], abs=0.006)


def test_devel_changes_nothing_but_reports_and_can_keep_its_best_weights(corpus):
    """Devel F1 plateaus early and its best is noisy: by default -d only reports, and the
    model is the one trained without it (issue #13); --keep-best-devel keeps the best."""
    args = ["-p", PAT, "-e", "1e-3", "--stopwin", "3", str(corpus["train"])]
    plain_model = corpus["dir"] / "plain.model"
    plain = train_ok(*args, str(plain_model))
    model, best_model = corpus["dir"] / "dev-all.model", corpus["dir"] / "dev-best.model"
    with_devel = [*args[:-1], "-d", str(corpus["devel"]), args[-1]]
    result = train_ok(*with_devel, str(model))
    train_ok(*with_devel, "--keep-best-devel", str(best_model))
    iterations = [line for line in plain.stderr.splitlines() if line.startswith("  [")]
    lines = [line for line in result.stderr.splitlines() if line.startswith("  [")]
    assert len(lines) == len(iterations) > 3  # the same stopping point as without -d
    assert "no development F1 improvement" not in result.stderr
    assert np.array_equal(Model.load(model).weights, Model.load(plain_model).weights)
    f1s = [float(line.split("dev-F1=")[1].split()[0]) for line in lines]
    best = int(np.argmax(f1s))
    loaded = Model.load(model)
    assert loaded.info["devel_best"] == {"iteration": best + 1, "f1": pytest.approx(f1s[best],
                                                                                   abs=0.006)}
    assert loaded.info["devel_last"]["iteration"] == len(lines)
    assert f"best {f1s[best]:.2f} at iteration {best + 1}" in result.stderr  # both reported
    assert f"{f1s[-1]:.2f} at the last iteration ({len(lines)})" in result.stderr
    assert test_f1(model, corpus["devel"]) == pytest.approx(f1s[-1], abs=0.006)
    assert test_f1(best_model, corpus["devel"]) == pytest.approx(f1s[best], abs=0.006)


def test_devel_with_an_unseen_label_warns_and_scores_it_as_wrong(corpus):
    bad = corpus["dir"] / "bad-devel.txt"
    bad.write_text("12 d B-HOUSE\nMain Xx B-PLANET\nSt Xx B-PLANET\n")
    model = corpus["dir"] / "x.model"
    result = run("train", "-p", PAT, "-i", "2", "-d", str(bad), str(corpus["train"]),
                 str(model))
    assert result.exit_code == 0, result.stderr
    warning = [line for line in result.stderr.splitlines() if "B-PLANET" in line]
    assert len(warning) == 1 and f"{bad}:2" in warning[0] and "2 token(s)" in warning[0]
    errors = [float(line.split("dev-err=")[1].split("%")[0])
              for line in result.stderr.splitlines() if line.startswith("  [")]
    assert errors and min(errors) >= 200 / 3 - 0.01  # 2 of 3 tokens can never be right


def test_devel_leaves_out_tokens_with_partial_gold_labels(corpus):
    """dev-err and dev-F1 count only the fully labelled tokens: checked against the
    model's own labelling of the devel file, scored by hand on those tokens."""
    seqs = list(read_sequences(corpus["devel"]))
    rows = [list(r) for s in seqs for r in s.rows]
    partial = {i: ("?" if i % 6 == 0 else f"{rows[i][-1]}|B-STREET")
               for i in range(0, len(rows), 3)}
    devel = corpus["dir"] / "partial-devel.txt"
    lines, k = [], 0
    for s in seqs:
        for r in s.rows:
            lines.append(" ".join([*r[:-1], partial.get(k, r[-1])]))
            k += 1
        lines.append("")
    devel.write_text("\n".join(lines) + "\n")
    model = corpus["dir"] / "partial-devel.model"
    result = train_ok("-p", PAT, "-i", "4", "-d", str(devel), str(corpus["train"]), str(model))
    assert "does not occur in the training data" not in result.stderr
    last = [line for line in result.stderr.splitlines() if line.startswith("  [")][-1]
    error = float(last.split("dev-err=")[1].split("%")[0])
    f1 = float(last.split("dev-F1=")[1].split()[0])

    loaded = Model.load(model)
    data = encode(loaded, seqs)
    names = np.array(loaded.labels, dtype=object)
    pred = names[decode_best(loaded.model_type, loaded.weights, data, loaded.space)].tolist()
    known = [i for i in range(len(rows)) if i not in partial]
    wrong = sum(pred[i] != rows[i][-1] for i in known)
    assert error == pytest.approx(100 * wrong / len(known), abs=0.006)
    # chunks: each partial token is a sentence break, as in a conlleval file with a blank
    # line in its place (crfkit.evaluation.partial's "skip")
    gold_runs, pred_runs, g, p = [], [], [], []
    ends = set(np.cumsum([len(s.rows) for s in seqs]).tolist())
    for i in range(len(rows) + 1):
        if i in ends or i in partial or i == len(rows):
            gold_runs.append(g)
            pred_runs.append(p)
            g, p = [], []
        if i < len(rows) and i not in partial:
            g.append(rows[i][-1])
            p.append(pred[i])
    assert f1 == pytest.approx(evaluate(gold_runs, pred_runs, partial="literal").f1, abs=0.006)
    assert wrong < len(known)  # a model that learned something: the check has teeth


def test_continue_and_fine_tune_from_a_model(corpus):
    tmp = corpus["dir"]
    first, second = tmp / "first.model", tmp / "second.model"
    train_ok("-q", "-p", PAT, "-i", "30", str(corpus["train"]), str(first))
    extra = tmp / "extra.txt"
    extra.write_text(corpus["devel"].read_text().replace("B-COUNTRY", "B-LAND", 3))
    result = train_ok("-m", str(first), "-i", "10", str(extra), str(second))
    old, new = Model.load(first), Model.load(second)
    assert new.labels == old.labels + ["B-LAND"]
    assert len(new.featurizer.vocab) > len(old.featurizer.vocab)
    assert new.info["initial_model"]["iterations"] == 30
    assert "sequences" in result.stderr
    assert test_f1(second, corpus["test"]) > 95.0


def test_ctrl_c_writes_the_model_trained_so_far(corpus, monkeypatch):
    from crfkit.kernels.objective import Objective

    calls = {"n": 0}
    real = Objective.__call__

    def interrupted(self, w, g):
        calls["n"] += 1
        if calls["n"] == 6:
            raise KeyboardInterrupt
        return real(self, w, g)

    monkeypatch.setattr(Objective, "__call__", interrupted)
    model = corpus["dir"] / "ctrl-c.model"
    result = run("train", "-p", PAT, str(corpus["train"]), str(model))
    assert result.exit_code == 130, result.stderr  # written, then the shell's Ctrl-C status
    assert "interrupted" in result.stderr and "written" in result.stderr
    assert Model.load(model).info["stop_reason"] == "interrupted"


@pytest.mark.parametrize("args,needle", [
    (["-1", "-0.5"], "-1/--rho1"),
    (["-2", "-1"], "-2/--rho2"),
    (["-a", "newton"], "unknown algorithm 'newton'"),
    (["-T", "hmm"], "unknown model type 'hmm'"),
    (["--eta0", "0"], "--eta0"),
    (["--alpha", "1.5"], "--alpha"),
    (["-a", "ap", "-1", "0.1"], "no L1 term"),
    (["-a", "sgd-l1", "-2", "1"], "no L2 term"),
    (["-a", "ap", "-T", "memm"], "cannot train a memm"),
])
def test_bad_training_options_give_one_line(corpus, args, needle):
    model = corpus["dir"] / "bad.model"
    result = run("train", "-p", PAT, *args, str(corpus["train"]), str(model))
    one_error_line(result, needle)
    assert not model.exists()


def test_missing_patterns_and_mismatched_initial_model(corpus):
    tmp = corpus["dir"]
    one_error_line(run("train", str(corpus["train"]), str(tmp / "m.model")), "-p/--pattern")
    first = tmp / "init.model"
    train_ok("-q", "-p", PAT, "-i", "2", str(corpus["train"]), str(first))
    other = tmp / "other.pat"
    other.write_text("u:%x[0,0]\n")
    one_error_line(run("train", "-p", str(other), "-m", str(first), str(corpus["train"]),
                       str(tmp / "m.model")), "differs from the initial model")
    one_error_line(run("train", "-m", str(first), "-T", "maxent", str(corpus["train"]),
                       str(tmp / "m.model")), "cannot continue as a maxent")


# --- what a new user hit (issue #13) ----------------------------------------------------------
def test_output_path_is_checked_before_training(corpus, tmp_path):
    for bad, reason in ((tmp_path / "missing" / "m.model", "No such file or directory"),
                        (tmp_path, "Is a directory")):
        result = run("train", "-p", PAT, str(corpus["train"]), str(bad))
        line = one_error_line(result, str(bad), reason)
        assert "[   1]" not in result.stderr and "sequences" not in result.stderr, line
    assert list(tmp_path.iterdir()) == []  # the check leaves nothing behind


def test_info_shows_the_settings_used_with_defaults(corpus):
    def options(*args: str) -> dict:
        model = corpus["dir"] / "defaults.model"
        train_ok("-q", "-p", PAT, "-i", "2", *args, str(corpus["train"]), str(model))
        fields = dict(line.partition(":")[::2] for line in run("info", str(model)).stdout
                      .splitlines())
        return dict(item.split("=", 1) for item in fields["options"].split())

    plain = options()
    assert plain["model_type"] == "crf" and plain["rho2"] == "1.0" and plain["rho1"] == "0.0"
    assert "None" not in plain.values() and "eta0" not in plain
    perceptron = options("-a", "ap", "-T", "maxent")
    assert perceptron["model_type"] == "maxent" and "rho2" not in perceptron
    assert "None" not in perceptron.values()


def test_crfpp_option_spellings(corpus):
    """--cost C is -2 1/C and --freq N is -f N: the same model, byte for byte."""
    tmp = corpus["dir"]
    pairs = [(["--cost", "4"], ["-2", "0.25"]), (["--freq", "2"], ["-f", "2"])]
    for crfpp, ours in pairs:
        a, b = tmp / "crfpp.model", tmp / "ours.model"
        train_ok("-q", "-p", PAT, "-i", "3", *crfpp, str(corpus["train"]), str(a))
        train_ok("-q", "-p", PAT, "-i", "3", *ours, str(corpus["train"]), str(b))
        assert a.read_bytes() == b.read_bytes(), crfpp
    one_error_line(run("train", "-p", PAT, "--cost", "4", "-2", "1", str(corpus["train"])),
                   "--cost")


@pytest.mark.parametrize("args,needle", [
    (["-p", PAT, "-c", "4"], "'--cost C' here"),  # CRF++: -c 4 is the cost
    (["-p", "2"], "CRF++'s -p (threads) is -t"),
    (["-p", PAT, "-m", "100"], "CRF++'s -m (iterations) is -i"),
])
def test_crfpp_habits_get_a_one_line_hint(corpus, args, needle):
    if "-c" in args:
        result = run("train", *args, str(corpus["dir"] / "m.model"))
    else:
        result = run("train", *args, str(corpus["train"]), str(corpus["dir"] / "m.model"))
    one_error_line(result, needle)


def test_training_refuses_to_read_a_terminal(tmp_path):
    """No INPUT and a terminal on stdin: one line, instead of waiting for typing."""
    import os
    import subprocess
    import sys

    master, slave = os.openpty()
    try:
        proc = subprocess.run([sys.executable, "-m", "crfkit.cli", "train", "-p", PAT],
                              stdin=slave, capture_output=True, text=True, timeout=60,
                              cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)})
    finally:
        os.close(slave)
        os.close(master)
    assert proc.returncode == 1
    assert "standard input is a terminal" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "crfkit.model").exists()


def test_pattern_files_and_dump_take_the_encoding(corpus, tmp_path):
    pat = tmp_path / "latin1.pat"
    pat.write_bytes("U00:%x[0,0]\nU01:café=%x[0,1]\nB\n".encode("latin-1"))
    model = tmp_path / "m.model"
    result = run("train", "-p", str(pat), "-i", "2", str(corpus["train"]), str(model))
    one_error_line(result, f"{pat}:2", "byte offset 19", "--encoding")
    train_ok("-q", "-p", str(pat), "--encoding", "latin-1", "-i", "2", str(corpus["train"]),
             str(model))
    assert Model.load(model).info["encoding"] == "iso8859-1"  # the codec's own name
    dumped = tmp_path / "dump.txt"
    assert run("dump", str(model), str(dumped)).exit_code == 0  # the model's encoding
    assert "café=".encode("latin-1") in dumped.read_bytes()
    assert run("dump", "--encoding", "utf-8", str(model), str(dumped)).exit_code == 0
    assert "café=".encode() in dumped.read_bytes()
