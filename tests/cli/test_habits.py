"""The option habits of CRF++, Wapiti and CRFsuite: each gets one stderr line naming crfkit's
spelling and a non-zero exit, wherever it sits on the line; crfkit's own uses of the same
letters are left alone."""

from __future__ import annotations

import pytest

from crfkit.cli import cli
from crfkit.cli.habits import COMMAND_HABITS, HABITS, habit_hint
from tests.helpers import ROOT, one_error_line, run

PAT = str(ROOT / "patterns" / "chunking.pat")

# argv -> a substring of the hint. Every row of crfkit.cli.habits.HABITS has one here at least
# (test_every_habit_has_a_row).
ROWS = [
    # crf_learn
    (["train", "-p", PAT, "-c", "4", "train.txt", "m"], "'--cost C' here"),
    (["train", "-c", "4", PAT, "train.txt", "m"], "'--cost C' here"),
    (["train", "-p", "2", PAT, "train.txt", "m"], "-p (threads) is -t here"),
    (["train", PAT, "train.txt", "m"], f"crfkit train -p {PAT} train.txt m"),
    (["train", "-p", PAT, "-m", "100", "train.txt", "m"], "-m (iterations) is -i here"),
    (["train", "-f", "2", "-m", "50", PAT, "train.txt", "m"], "is -i here"),
    (["train", "--thread=2", "-p", PAT, "train.txt"], "-t/--nthread"),
    (["train", "--eta", "0.001", "-p", PAT, "x"], "-e/--stopeps"),
    (["train", "-a", "CRF-L1", "-p", PAT, "x"], "CRF-L1 is -1"),
    (["train", "--algorithm=CRF", "-p", PAT, "x"], "crfkit's default"),
    (["train", "--algorithm", "l-bfgs", "-p", PAT, "x"], "-a/--algo"),
    (["train", "-C", "text.model", "m"], "crfkit convert"),
    (["train", "-t", "-p", PAT, "x"], "crfkit dump"),
    (["train", "--textmodel", "-p", PAT, "x"], "crfkit dump"),
    (["train", "-v"], "crfkit --version"),
    (["train", "--version"], "crfkit --version"),
    # crf_test
    (["label", "-m", "m", "-v2", "test.txt"], "--marginals -s"),
    (["label", "-v", "1", "-m", "m", "test.txt"], "-v1 is -s"),
    (["label", "-m", "m", "--verbose=2", "test.txt"], "--marginals -s"),
    (["label", "-m", "m", "-o", "out.txt", "test.txt"], "OUTPUT is the second argument"),
    (["label", "-m", "m", "--output=out.txt", "test.txt"], "OUTPUT is the second argument"),
    (["label", "-c", "1.5", "-m", "m", "test.txt"], "--cost-factor"),
    (["label", "--version"], "crfkit --version"),
    # Wapiti train, label, dump, update
    (["train", "-T", "crf", "--me", "-p", PAT, "x"], "-T maxent"),
    (["label", "--me", "-m", "m", "x"], "reads the type from the model"),
    (["tune", "-p", PAT, "-w", "5", "x"], "--devel-patience"),
    (["train", "--histsz", "8", "-p", PAT, "x"], "--history N"),
    (["train", "-a", "rprop", "--cutoff", "-p", PAT, "x"], "--rprop-cutoff"),
    (["train", "-p", PAT, "--cutoff", "x"], "--rprop-cutoff"),
    (["train", "-j", "64", "-p", PAT, "x"], "--jobsize"),
    # CRFsuite learn and tag
    (["learn", "-m", "m", "data"], "crfkit train"),
    (["tag", "-m", "m", "data"], "crfkit label"),
    (["train", "-a", "lbfgs", "--format", "crfsuite", "x"], "-a l-bfgs"),
    (["train", "-p", "c2=1", "--format", "crfsuite", "x"], "c2=VALUE is -2"),
    (["train", "--format", "crfsuite", "-p", "feature.minfreq=2", "x"], "is -f VALUE"),
    (["train", "--format", "crfsuite", "-p", "linesearch=Backtracking", "x"],
     "is --linesearch VALUE"),
    (["train", "--format", "crfsuite", "-p", "bogus=1", "x"], "parameters are options here"),
    (["train", "--format", "crfsuite", "-m", "new.model", "x"], "the last argument"),
    (["train", "--format", "crfsuite", "-e", "2", "-g", "5", "x"], "--holdout N"),
    (["tune", "-g", "5", "x"], "crfkit train -g N -x"),
    (["tune", "-x", "x"], "crfkit train -g N -x"),
    (["train", "--format", "crfsuite", "--type", "1d", "x"], "-T/--type crf"),
    (["train", "--format", "crfsuite", "-H", "x"], "'crfkit train --help'"),
    (["train", "--format", "crfsuite", "-t", "1d", "x"], "-T crf"),
    (["label", "-m", "m", "-t", "x"], "-c/--check"),
    (["label", "-m", "m", "-r", "x"], "gold column"),
    (["label", "-m", "m", "-i", "x"], "--marginals"),
    (["label", "-m", "m", "--probability", "x"], "-s here"),
]


@pytest.mark.parametrize("argv,needle", ROWS, ids=[" ".join(a) for a, _ in ROWS])
def test_each_habit_gets_one_hint_line(argv, needle, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no file of the rows exists: nothing is read or written
    line = one_error_line(run(*argv), needle)
    assert line.startswith("crfkit: error: ")
    assert list(tmp_path.iterdir()) == []


def test_every_habit_has_a_row(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    fired = set()
    for argv, _ in ROWS:
        command = cli.commands.get(argv[0])
        fired.add(habit_hint(command, argv[0], argv[1:]))
    hints = " | ".join(h for h in fired if h)
    missing = [h.hint for h in HABITS if h.hint not in hints]
    missing += [h for h in COMMAND_HABITS.values() if h not in hints]
    assert missing == []


@pytest.mark.parametrize("argv", [
    ["train", "-p", PAT, "-c", "-1", "0.5", "-2", "1", "-i", "3", "-o", "4", "in", "m"],
    ["train", "-p", PAT, "-e", "1e-3", "-t", "2", "-a", "sgd-l1", "in", "m"],
    ["train", "-p", PAT, "--cutoff", "2", "--cost", "4", "--freq", "2", "in"],
    ["train", "-a", "MIRA", "-H", "20", "--cost", "4", "-p", PAT, "in", "m"],
    ["train", "-m", PAT, "-d", PAT, "in", "m"],  # existing files: crfkit's -m and -d
    ["train", "-p", PAT, "-a", "rprop+", "--stpmin", "1e-8", "--maxls", "20", "--clip",
     "--sstate", "s", "--rstate", "r", "in", "m"],  # Wapiti's own spellings, taken as is
    ["label", "-m", "m", "-t", "2", "-p", "-s", "-n", "3", "-c", "-l", "in", "out"],
    ["label", "-m", "m", "--", "-o", "out"],
    ["dump", "m", "out"],
    ["dump", "-p", "5", "--all", "m", "out"],
    ["tune", "-p", PAT, "-o", "3", "in"],
])
def test_crfkit_own_spellings_are_no_habits(argv, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert habit_hint(cli.commands[argv[0]], argv[0], argv[1:]) is None


def test_wapiti_objective_window_is_o(tmp_path, monkeypatch):
    """Wapiti's -o/--objwin is crfkit's objective window (--stopwin)."""
    monkeypatch.chdir(tmp_path)
    for spelling in ("-o", "--objwin", "--stopwin"):
        one_error_line(run("train", "-p", PAT, spelling, "0", PAT), "-o/--stopwin must be >= 1")
