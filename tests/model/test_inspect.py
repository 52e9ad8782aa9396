"""``crfkit dump`` / ``crfkit info``: the dump reproduces the scores the labeller uses.

The oracle for the dump is independent of its code: observation strings come
from the slow reference :func:`crfkit.features.explain.apply_pattern`, and summing
the dumped weights of a token's observations must give the kernels' unigram
and transition scores.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from crfkit.features.explain import apply_pattern
from crfkit.io.reader import Sequence
from crfkit.kernels import lattice
from crfkit.labelling.label import encode
from crfkit.model.model import Model
from tests.helpers import CHUNK_TRAIN, run, trained_model

PATTERNS = "U00:%x[0,0]\nU01:%x[-1,0]/%x[0,0]\n*:pos=%x[0,1]\nb:w=%X[0,0]\nB\n"
TRAIN = CHUNK_TRAIN.replace("big JJ", "Big JJ")  # a capital for the %X pattern
ARROW = "->"


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("inspect")
    return tmp, trained_model(tmp, PATTERNS, TRAIN, "-2", "0.3")


def parse_dump(text: str) -> tuple[dict[str, list[str]], list[tuple[str, str, float]]]:
    sections: dict[str, list[str]] = defaultdict(list)
    current = None
    for line in text.splitlines():
        if line.startswith("# "):
            current = line[2:].split(":")[0]
            continue
        sections[current].append(line)
    weights = [(o, t, float(w)) for o, t, w in
               (line.split("\t") for line in sections.pop("features", []))]
    return sections, weights


def test_dump_reproduces_the_scores(trained):
    tmp, path = trained
    result = run("dump", str(path))
    assert result.exit_code == 0, result.stderr
    sections, weights = parse_dump(result.stdout)
    model = Model.load(path)
    assert sections["patterns"] == [p.text for p in model.patterns]
    assert sections["labels"] == model.labels
    table = {(o, t): w for o, t, w in weights}
    assert len(table) == len(weights) == np.count_nonzero(model.weights)
    assert all(w != 0 for w in table.values())

    rows = [line.split() for line in "the DT\nBig NN\nsat VBD\n".splitlines()]
    T, L = len(rows), len(model.labels)
    data = encode(model, [Sequence(rows=rows, lines=[1, 2, 3])])
    s = model.space
    psi = np.empty((T, L))
    lattice.unigram_scores(model.weights, data.tok_ptr, data.tok_obs, None, s.u_ptr, s.u_lab, 0,
                           T, psi, np.empty((0, L)))
    trans = lattice.transition_block(model.weights, s.trans_offset, s.has_trans, L)
    phi = np.empty((T, L, L))
    lattice.bigram_scores(model.weights, data.tok_ptr, data.tok_obs, None, s.b_ptr, s.b_prev,
                          s.b_cur, s.n_u, trans, 0, T, phi)
    for t in range(T):
        observations = [apply_pattern(p, rows, t) for p in model.patterns if p.commands]
        for y, name in enumerate(model.labels):
            want = sum(table.get((o, name), 0.0) for o in observations)
            assert psi[t, y] == pytest.approx(want, abs=1e-5)
            if t == 0:
                continue
            for a, prev in enumerate(model.labels):
                pair = f"{prev}{ARROW}{name}"
                want = table.get(("B", pair), 0.0) + sum(table.get((o, pair), 0.0)
                                                         for o in observations)
                assert phi[t, a, y] == pytest.approx(want, abs=1e-5)


def test_dump_threshold_and_top(trained):
    tmp, path = trained
    _, everything = parse_dump(run("dump", str(path)).stdout)
    _, strong = parse_dump(run("dump", "--threshold", "0.2", str(path)).stdout)
    assert strong == [f for f in everything if abs(f[2]) >= 0.2]
    assert 0 < len(strong) < len(everything)

    out = tmp / "top.txt"
    assert run("dump", "--top", "3", str(path), str(out)).exit_code == 0
    text = out.read_text()
    model = Model.load(path)
    groups = text.split("# features")[1].split("\n# ")[1:]
    assert [g.split("\n")[0] for g in groups] == model.labels
    for group in groups:
        name, *lines = [line for line in group.split("\n") if line]
        got = [(o, t, float(w)) for o, t, w in (line.split("\t") for line in lines)]
        mine = sorted((f for f in everything if f[1].split(ARROW)[-1] == name),
                      key=lambda f: -abs(f[2]))
        assert [abs(w) for *_, w in got] == pytest.approx([abs(w) for *_, w in mine[:3]])
        assert all(t.split(ARROW)[-1] == name for _, t, _ in got)


def test_dump_prec_writes_n_decimal_places(trained):
    """Wapiti's dump --prec: a fixed number of decimals, the value rounded to them."""
    _, path = trained
    model = Model.load(path)
    _, full = parse_dump(run("dump", "--prec", "17", str(path)).stdout)
    assert sorted(w for *_, w in full) == sorted(model.weights[model.weights != 0].tolist())
    text = run("dump", "-p", "2", str(path)).stdout.split("# features")[1]
    two = [line.split("\t")[2] for line in text.splitlines()[1:]]
    assert all(len(w.split(".")[1]) == 2 for w in two)
    assert [float(w) for w in two] == [round(w, 2) for *_, w in full]


def test_dump_all_adds_the_zero_weights(trained):
    """Wapiti's dump --all: every feature of the model, zero weights too."""
    tmp, _ = trained
    (tmp / "l1").mkdir()
    path = trained_model(tmp / "l1", PATTERNS, TRAIN, "-1", "0.5", "-2", "0.01")
    model = Model.load(path)
    _, nonzero = parse_dump(run("dump", str(path)).stdout)
    _, every = parse_dump(run("dump", "--all", str(path)).stdout)
    assert len(every) == model.space.n_weights > len(nonzero) == np.count_nonzero(model.weights)
    assert [f for f in every if f[2] != 0] == nonzero
    _, strong = parse_dump(run("dump", "--all", "--threshold", "0.1", str(path)).stdout)
    assert strong == [f for f in nonzero if abs(f[2]) >= 0.1]


def test_dump_bad_options(trained):
    _, path = trained
    for option in (["--top", "0"], ["--threshold", "-1"], ["--prec", "-1"]):
        result = run("dump", *option, str(path))
        assert result.exit_code == 1
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and option[0] in lines[0]


def test_info(trained):
    _, path = trained
    result = run("info", str(path))
    assert result.exit_code == 0, result.stderr
    fields = {}
    for line in result.stdout.splitlines():
        key, _, value = line.partition(":")
        if key.strip():
            fields[key.strip()] = value.strip()
    model = Model.load(path)
    assert fields["type"].startswith("crf")
    assert fields["labels"] == f"{len(model.labels)}: {' '.join(model.labels)}"
    assert fields["observations"] == str(model.space.n_obs)
    assert fields["non-zero weights"] == str(np.count_nonzero(model.weights))
    assert "rho2=0.3" in fields["options"]
    assert fields["sequences"] == "3" and fields["tokens"] == "12"
    for p in model.patterns:
        assert any(line.strip() == p.text for line in result.stdout.splitlines())


def test_info_of_a_foreign_file(tmp_path: Path):
    bad = tmp_path / "x.model"
    bad.write_bytes(b"hello")
    result = run("info", str(bad))
    assert result.exit_code == 1 and str(bad) in result.stderr
