"""``crfkit update`` (Wapiti's update mode): the weights a patch names change, nothing else."""

from __future__ import annotations

import numpy as np
import pytest

from crfkit.model.model import Model
from tests.helpers import CHUNK_TRAIN, one_error_line, run, trained_model

PATTERNS = "U00:%x[0,0]\nU01:%x[-1,0]/%x[0,0]\nb:w=%x[0,0]\nB\n"


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("patch")
    return tmp, trained_model(tmp, PATTERNS, CHUNK_TRAIN, "-2", "0.3", "-i", "10")


def weight_table(model: Model) -> dict[tuple[str, str], float]:
    """The model's weights by (observation, target), read back from the dump with 17 decimals
    (from the model, independently of the patch code)."""
    text = run("dump", "--all", "--prec", "17", model).stdout.split("# features")[1]
    rows = [line.split("\t") for line in text.splitlines()[1:]]
    return {(o, t): float(w) for o, t, w in rows}


def test_round_trip_dump_edit_update(trained, tmp_path):
    """A dump, edited (one unigram, one observation bigram, one transition set; one weight
    zeroed) and given back whole, changes those weights and nothing else; a dump given back
    unedited changes nothing at all."""
    _, path = trained
    dump = run("dump", "--prec", "17", path).stdout
    same = tmp_path / "same.model"
    patch = tmp_path / "whole.txt"
    patch.write_text(dump)
    assert run("update", "-q", "-m", path, patch, same).exit_code == 0
    assert np.array_equal(Model.load(same).weights, Model.load(path).weights)

    head, body = dump.split("# features")
    lines = body.splitlines()
    unigram = next(x for x in lines[1:] if x.startswith("U00:") and "->" not in x)
    bigram = next(x for x in lines[1:] if "->" in x and not x.startswith("B\t"))
    transition = next(x for x in lines[1:] if x.startswith("B\t"))
    edits = {unigram: "2.5", bigram: "-1.25", transition: "0"}
    edited = [x.rsplit("\t", 1)[0] + "\t" + edits[x] if x in edits else x for x in lines]
    patch.write_text(head + "# features" + "\n".join(edited) + "\n")
    out = tmp_path / "out.model"
    result = run("update", "-m", path, patch, out)
    assert result.exit_code == 0, result.stderr
    before, after = weight_table(path), weight_table(out)
    expected = dict(before)
    for line, weight in edits.items():
        o, t, _ = line.split("\t")
        expected[(o, t)] = float(weight)
    assert after == expected and after != before
    old, new = Model.load(path), Model.load(out)
    assert new.labels == old.labels and new.info == old.info
    assert [p.text for p in new.patterns] == [p.text for p in old.patterns]


def test_wapiti_patch_lines_and_stdin(trained, tmp_path):
    """Wapiti's layout: OBS # LABEL W for a unigram, OBS PREV LABEL W for a bigram."""
    _, path = trained
    before = weight_table(path)
    (obs, label) = next(k for k in before if "->" not in k[1] and k[0].startswith("U00:"))
    (bobs, pair) = next(k for k in before if k[0] == "B" and len(set(k[1].split("->"))) == 2)
    prev, cur = pair.split("->")
    patch = f"{obs} # {label} 0.75\n\n{bobs}\t{prev}\t{cur}\t-0.5\n"
    out = tmp_path / "out.model"
    result = run("update", "-q", "-m", path, "-", out, input=patch)
    assert result.exit_code == 0, result.stderr
    after = weight_table(out)
    assert after[(obs, label)] == 0.75 and after[("B", pair)] == -0.5
    assert {k: v for k, v in after.items() if k not in ((obs, label), ("B", pair))} == \
        {k: v for k, v in before.items() if k not in ((obs, label), ("B", pair))}


@pytest.mark.parametrize("line, needle", [
    ("U00:the\tB-NP", "expected OBSERVATION"),
    ("U00:the\tB-NP\tabc", "bad weight 'abc'"),
    ("U00:the\tB-NP\tnan", "finite"),
    ("U00:never-seen\tB-NP\t1", "no feature 'U00:never-seen'"),
    ("U00:the # NO-SUCH-LABEL 1", "no feature"),
])
def test_bad_patch_lines_name_file_and_line(trained, tmp_path, line, needle):
    _, path = trained
    patch = tmp_path / "p.txt"
    patch.write_text("\n# a comment\n" + line + "\n")
    out = tmp_path / "out.model"
    one_error_line(run("update", "-m", path, patch, out), f"{patch}:3:", needle)
    assert not out.exists()


def test_compact_after_update(trained, tmp_path):
    """-c (Wapiti's update --compact): features zeroed by the patch leave the model."""
    _, path = trained
    rows = [k for k in weight_table(path) if k[0].startswith("U01:")]
    patch = tmp_path / "p.txt"
    patch.write_text("".join(f"{o}\t{t}\t0\n" for o, t in rows))
    out = tmp_path / "out.model"
    assert run("update", "-q", "-c", "-m", path, patch, out).exit_code == 0
    assert not any(o.startswith("U01:") for o, _ in weight_table(out))
    assert Model.load(out).space.n_weights < Model.load(path).space.n_weights
