"""--format crfsuite: CRFsuite's data files trained and labelled with no pattern file."""

from __future__ import annotations

import io

import numpy as np
import pytest
from click.testing import CliRunner

from crfkit.attributes.attribute_model import AttributeModel, AttributeTraining
from crfkit.attributes.attribute_model import train as train_attributes
from crfkit.attributes.data_file import format_field, parse_field, read_sequences, write_sequences
from crfkit.cli import cli
from crfkit.errors import InputError
from crfkit.training.train import TrainOptions

DATA = "B-NP\tw\\:x:2.5\tpos=DT\t\\\\b\nI-NP\tw=dog\tpos=NN\n\nB-NP\tw=a\nI-NP\tw=cat:0.5\n\n"


def test_fields_escapes_and_values(tmp_path):
    path = tmp_path / "d.txt"
    path.write_text(DATA)
    seqs = list(read_sequences(str(path)))
    assert [s.labels for s in seqs] == [["B-NP", "I-NP"], ["B-NP", "I-NP"]]
    assert seqs[0].tokens[0] == [("w:x", 2.5), ("pos=DT", 1.0), ("\\b", 1.0)]
    assert seqs[1].tokens[1] == [("w=cat", 0.5)] and seqs[1].line == 4
    for name, value in [("a:b\\c", 1.0), ("x", -0.1), ("::", 3e-300)]:
        assert parse_field(format_field(name, value), "f", 1, 1) == (name, value)


def test_a_non_number_is_refused_with_line_and_column(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_text("A\tx:1\n\nB\tok\tw:abc\n")
    with pytest.raises(InputError) as err:
        list(read_sequences(str(path)))
    assert str(err.value).startswith(f"{path}:3:8: attribute 'w' has value 'abc'")
    result = CliRunner().invoke(cli, ["train", "--format", "crfsuite", str(path),
                                      str(tmp_path / "m")])
    assert result.exit_code != 0 and "3:8" in result.output
    assert "Traceback" not in result.output and not (tmp_path / "m").exists()


def test_cli_trains_the_python_paths_model_and_labels_for_eval(tmp_path):
    rng = np.random.default_rng(0)
    seqs = []
    for _ in range(30):
        n = int(rng.integers(1, 5))
        labels = [str(rng.choice(["A", "B", "C"])) for _ in range(n)]
        tokens = [[(f"w={lab.lower()}{rng.integers(0, 2)}", 1.0), ("x:y", float(rng.normal()))]
                  for lab in labels]
        seqs.append((labels, tokens))
    buffer = io.StringIO()
    write_sequences(buffer, seqs)
    path = tmp_path / "train.txt"
    path.write_text(buffer.getvalue())
    model_path = tmp_path / "m.model"
    result = CliRunner().invoke(cli, ["train", "--format", "crfsuite", "-q", "-1", "0.1",
                                      "-2", "0.2", "-i", "50", str(path), str(model_path)])
    assert result.exit_code == 0, result.output
    cli_model = AttributeModel.load(model_path)
    # the Python path: the same pairs through the estimator's encoder
    from crfkit.attributes.encoder import AttributeEncoder

    vocab: dict[str, int] = {}
    encoder = AttributeEncoder(vocab, grow=True)
    labels: list[str] = []
    for labs, tokens in seqs:
        encoder.end(encoder.add_pairs(tokens))
        for lab in labs:
            if lab not in labels:
                labels.append(lab)
    gold = np.array([labels.index(lab) for labs, _ in seqs for lab in labs], dtype=np.int32)
    names = sorted(vocab, key=vocab.get)
    py_model = train_attributes(encoder.dataset(gold), labels, names,
                                TrainOptions(rho1=0.1, rho2=0.2, maxiter=50),
                                AttributeTraining(epsilon=1e-5))
    assert cli_model.attributes == py_model.attributes and cli_model.labels == py_model.labels
    np.testing.assert_allclose(cli_model.weights, py_model.weights, rtol=0, atol=1e-9)
    out = tmp_path / "out.txt"
    result = CliRunner().invoke(cli, ["label", "--format", "crfsuite", "-m", str(model_path),
                                      str(path), str(out)])
    assert result.exit_code == 0, result.output
    lines = out.read_text().split("\n")
    gold_lines = [f"{lab}\t" for labs, _ in seqs for lab in labs + [None] if lab]
    assert [ln.split("\t")[0] + "\t" for ln in lines if ln] == gold_lines
    result = CliRunner().invoke(cli, ["eval", str(out)])
    assert result.exit_code == 0 and "accuracy" in result.output
    result = CliRunner().invoke(cli, ["label", "-m", str(model_path), str(path)])
    assert result.exit_code != 0 and "--format crfsuite" in result.output


def test_all_labels_and_all_features_are_possible_states(tmp_path):
    """A data file has no label-pair attributes: both options give every attribute
    every label, the same model, and more weights than the default."""
    path = tmp_path / "train.txt"
    path.write_text(DATA * 3)
    sizes = {}
    for name, flags in (("seen", []), ("labels", ["--all-labels"]),
                        ("features", ["--all-features"])):
        model_path = tmp_path / f"{name}.model"
        result = CliRunner().invoke(cli, ["train", "--format", "crfsuite", "-q", "-i", "5",
                                          *flags, str(path), str(model_path)])
        assert result.exit_code == 0, result.output
        sizes[name] = AttributeModel.load(model_path).weights.size
    assert (tmp_path / "labels.model").read_bytes() == (tmp_path / "features.model").read_bytes()
    assert sizes["labels"] > sizes["seen"]


def test_label_pairs_are_those_seen_unless_all_transitions(tmp_path):
    """CRFsuite's default (feature.possible_transitions=0): a label pair never seen in
    training has no weight; --all-transitions gives every pair one. At zero weights the
    perceptron's first path is B-NP B-NP, a pair the data never shows."""
    path = tmp_path / "train.txt"
    path.write_text(DATA * 3)
    weights = {}
    for name, flags in (("seen", []), ("all", ["--all-transitions"])):
        model_path = tmp_path / f"{name}.model"
        result = CliRunner().invoke(cli, ["train", "--format", "crfsuite", "-q", "-a", "ap",
                                          "-i", "3", *flags, str(path), str(model_path)])
        assert result.exit_code == 0, result.output
        model = AttributeModel.load(model_path)
        assert model.labels == ["B-NP", "I-NP"]
        weights[name] = model.weights[model.space.trans_offset:].reshape(2, 2)
    assert weights["seen"][0, 1] != 0.0  # B-NP -> I-NP, seen
    assert (weights["seen"][[0, 1, 1], [0, 0, 1]] == 0.0).all()
    assert weights["all"][0, 0] != 0.0


def test_all_transitions_is_refused_with_patterns(tmp_path):
    path = tmp_path / "train.txt"
    path.write_text("a X\n")
    pat = tmp_path / "p.pat"
    pat.write_text("U:%x[0,0]\nB\n")
    result = CliRunner().invoke(cli, ["train", "--all-transitions", "-p", str(pat), str(path),
                                      str(tmp_path / "m")])
    assert result.exit_code != 0 and "--all-transitions applies to --format crfsuite" in \
        result.output and "Traceback" not in result.output


def test_partial_labels_are_read_as_their_strings_and_bad_sets_name_the_line(tmp_path):
    path = tmp_path / "partial.txt"
    path.write_text("B-NP\tw=a\n?\tw=dog\nI-NP|B-VP\tw=runs\n\n")
    seqs = list(read_sequences(str(path)))
    assert seqs[0].labels == ["B-NP", "?", "I-NP|B-VP"]  # training sees the notation
    path.write_text("B-NP\tw=a\n\nB-NP||I-NP\tw=dog\n")
    with pytest.raises(InputError) as err:
        list(read_sequences(str(path)))
    assert str(err.value).startswith(f"{path}:3:1: the label set 'B-NP||I-NP' has an empty")


def test_training_sums_over_partial_labels_labelling_keeps_them(tmp_path):
    good, partial = tmp_path / "good.txt", tmp_path / "partial.txt"
    good.write_text("A\tw=a\nB\tw=b\n\nA\tw=a\n")
    partial.write_text("A\tw=a\nB\tw=b\n\nA\tw=a\n?\tw=b\n")
    runner = CliRunner()
    result = runner.invoke(cli, ["train", "-q", "-i", "3", "--format", "crfsuite",
                                 str(partial), str(tmp_path / "m")])
    assert result.exit_code == 0, result.output  # ? is no label of its own
    assert AttributeModel.load(str(tmp_path / "m")).labels == ["A", "B"]
    model = tmp_path / "good.model"
    result = runner.invoke(cli, ["train", "-q", "-i", "3", "--format", "crfsuite", str(good),
                                 str(model)])
    assert result.exit_code == 0, result.output
    result = runner.invoke(cli, ["label", "--format", "crfsuite", "-m", str(model),
                                 str(partial)])
    assert result.exit_code == 0, result.output
    assert [line.split("\t")[0] for line in result.stdout.splitlines()] == \
        ["A", "B", "", "A", "?", ""]  # the gold column, for crfkit eval to leave out
