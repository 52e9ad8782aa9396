"""The %v pattern command: a numeric column as the value of a feature."""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

from crfkit.cli import cli
from crfkit.errors import InputError, PatternError
from crfkit.features.patterns import parse_pattern_line, parse_patterns
from crfkit.io.reader import Sequence
from crfkit.model.model import Model
from crfkit.training.corpus import encode_training


def test_parsing():
    p = parse_pattern_line("U01:%x[0,0]/%v[-1, 2]")
    assert p.literals == ("U01:", "/%v[-1,2]") and len(p.commands) == 1
    assert (p.value.offset, p.value.column, p.value.source_column) == (-1, 2, 13)
    assert parse_pattern_line("u:emb %v[0,3]").is_constant
    for bad, where, what in [("b:%v[0,1]", 3, "unigram"), ("u:%v[0,1]%v[0,2]", 10, "one %v"),
                             ('u:%v[0,1,"a"]', 9, "no regex"), ("u:%v[0]", 7, "','")]:
        with pytest.raises(PatternError, match=what) as err:
            parse_pattern_line(bad, lineno=4)
        assert (err.value.line, err.value.column) == (4, where)


def test_values_per_occurrence_padding_and_empirical_totals():
    patterns = parse_patterns("u:w=%x[0,0]\nu:next %v[1,1]\nB\n")
    seqs = [Sequence(rows=[["a", "2.5", "X"], ["b", "-1", "Y"]], lines=[1, 2]),
            Sequence(rows=[["a", "0.5", "Y"]], lines=[4])]
    corpus = encode_training(patterns, seqs)
    data = corpus.data
    # per token: w=..., then next (the following token's column 1; padding: 0)
    assert data.tok_ptr.tolist() == [0, 2, 4, 6]
    assert data.tok_val.tolist() == [1.0, -1.0, 1.0, 0.0, 1.0, 0.0]
    space, names = corpus.space, corpus.featurizer.observation_strings()
    expected = {("u:w=a", "X"): 1.0, ("u:w=b", "Y"): 1.0, ("u:w=a", "Y"): 1.0,
                ("u:next %v[1,1]", "X"): -1.0, ("u:next %v[1,1]", "Y"): 0.0}
    owner = np.repeat(np.arange(space.n_obs), np.diff(space.u_ptr))
    got = {(names[o], corpus.labels[y]): corpus.empirical[k]
           for k, (o, y) in enumerate(zip(owner, space.u_lab, strict=True))}
    assert got == expected
    L = len(corpus.labels)
    assert corpus.empirical[space.trans_offset:].reshape(L, L)[0, 1] == 1.0  # X -> Y


def test_a_non_number_names_line_and_column():
    patterns = parse_patterns("u:%v[0,1]\n")
    with pytest.raises(InputError) as err:
        encode_training(patterns, [Sequence(rows=[["a", "1", "X"], ["b", "one", "Y"]],
                                            lines=[7, 8])], source="f.txt")
    assert str(err.value).startswith("f.txt:8:2: column 2 holds 'one'")


@pytest.mark.slow
def test_train_and_label_from_the_command_line(tmp_path):
    rng = np.random.default_rng(3)
    lines = []
    for _ in range(40):
        for _ in range(int(rng.integers(1, 5))):
            v = rng.normal()
            lines.append(f"{rng.choice(['a', 'b'])} {v:.4f} {'P' if v > 0 else 'M'}")
        lines.append("")
    train = tmp_path / "t.txt"
    train.write_text("\n".join(lines) + "\n")
    pat = tmp_path / "p.pat"
    pat.write_text("u:w=%x[0,0]\nu:num %v[0,1]\nB\n")
    model = tmp_path / "m.model"
    runner = CliRunner()
    result = runner.invoke(cli, ["train", "-q", "-2", "0.01", "-p", str(pat), str(train),
                                 str(model)])
    assert result.exit_code == 0, result.output
    m = Model.load(model)
    names = m.featurizer.observation_strings()
    o = names.index("u:num %v[0,1]")
    k = m.space.u_ptr[o] + list(m.space.u_lab[m.space.u_ptr[o]:m.space.u_ptr[o + 1]]).index(
        m.labels.index("P"))
    assert m.weights[k] > 1.0
    out = tmp_path / "o.txt"
    for extra in ([], ["-s"], ["-n", "2"]):
        result = runner.invoke(cli, ["label", "-c", *extra, "-m", str(model), str(train),
                                     str(out)])
        assert result.exit_code == 0, result.output
        assert "token accuracy 100.00%" in result.output
