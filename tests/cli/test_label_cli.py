"""``crfkit label`` options: n-best, scores, marginals, posterior, forcing, IOB constraints.

Each option's output is parsed back and compared with the Python API
(:func:`crfkit.labelling.label.label`, itself checked against brute force in
test_decode.py); every contradiction is one error line and no output file.
"""

from __future__ import annotations

import io
import math

import pytest

from crfkit.io.reader import read_sequences
from crfkit.labelling.label import label
from crfkit.model.model import Model
from tests.helpers import CHUNK_TRAIN, one_error_line, run, trained_model

PATTERNS = "U00:%x[0,0]\nU01:%x[-1,0]/%x[0,0]\nU02:%x[0,1]\nB\n"
TRAIN = CHUNK_TRAIN
TEST = "the DT\ndog NN\nran VBD\n\nbig JJ\ncat NN\n"



@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("label")
    (tmp / "test.txt").write_text(TEST)
    model = trained_model(tmp, PATTERNS, TRAIN, "-2", "0.5")
    return tmp, str(model), Model.load(model)


def label_cli(setup, *options: str, text: str = TEST) -> str:
    tmp, model, _ = setup
    result = run("label", "-m", model, *options, input=text)
    assert result.exit_code == 0, result.stderr
    return result.stdout


def api(setup, text: str = TEST, **kw):
    _, _, model = setup
    return label(model, list(read_sequences(io.BytesIO(text.encode()))), **kw)


def blocks(output: str) -> list[list[str]]:
    """Blank-line separated blocks of lines."""
    return [b.split("\n") for b in output.strip("\n").split("\n\n")]


def split_prob(cell: str) -> tuple[str, float]:
    name, prob = cell.rsplit("/", 1)
    assert len(prob.split(".")[1]) == 4
    return name, float(prob)


# --- formats ---------------------------------------------------------------------------------
def test_plain_output_is_unchanged(setup):
    out = label_cli(setup)
    assert [b[0].split()[:2] for b in blocks(out)] == [["the", "DT"], ["big", "JJ"]]
    assert [line.split()[-1] for b in blocks(out) for line in b] == \
        [y for r in api(setup) for y in r.labels]


def test_nbest_blocks(setup):
    out = label_cli(setup, "-n", "3")
    want = api(setup, nbest=3)
    got = blocks(out)
    assert len(got) == 6  # 3 blocks for each of the 2 sequences
    for i, block in enumerate(got):
        result, rank = want[i // 3], i % 3
        header = block[0].split()
        assert header[:2] == ["#", str(rank)]
        assert float(header[2]) == pytest.approx(result.log_probs[rank], abs=1e-4)
        assert [line.split()[-1] for line in block[1:]] == result.paths[rank]
        words = [row.split()[0] for row in TEST.strip().split("\n\n")[i // 3].split("\n")]
        assert [line.split()[0] for line in block[1:]] == words


def test_nbest_stops_at_the_number_of_paths(setup):
    out = label_cli(setup, "-n", "10", text="dog NN\n")  # one token, four labels
    assert [b[0].split()[1] for b in blocks(out)] == ["0", "1", "2", "3"]
    out = label_cli(setup, "-n", "6", "--nbest-columns", "-s", text="dog NN\n")
    header, line = out.strip("\n").split("\n")
    assert header.split()[-2:] == ["-inf", "-inf"]
    cells = line.split()[2:]
    assert cells[4:] == ["_", "_"] and all("/" in c for c in cells[:4])


def test_nbest_columns(setup):
    out = label_cli(setup, "-n", "3", "--nbest-columns")
    want = api(setup, nbest=3)
    for block, result in zip(blocks(out), want, strict=True):
        for t, line in enumerate(block):
            assert line.split()[2:] == [path[t] for path in result.paths]


def test_score(setup):
    out = label_cli(setup, "-s")
    want = api(setup, marginals=True)
    for block, result in zip(blocks(out), want, strict=True):
        assert block[0].startswith("# ")
        assert float(block[0][2:]) == pytest.approx(result.log_probs[0], abs=1e-4)
        for t, line in enumerate(block[1:]):
            name, prob = split_prob(line.split()[-1])
            assert name == result.labels[t]
            y = setup[2].labels.index(name)
            assert prob == pytest.approx(result.marginals[t, y], abs=5e-5)


def test_score_with_nbest_blocks(setup):
    out = label_cli(setup, "-n", "2", "-s")
    want = api(setup, nbest=2, marginals=True)
    model = setup[2]
    for i, block in enumerate(blocks(out)):
        result, rank = want[i // 2], i % 2
        assert block[0].split()[1] == str(rank) and not block[1].startswith("#")
        for t, line in enumerate(block[1:]):
            name, prob = split_prob(line.split()[-1])
            assert name == result.paths[rank][t]
            assert prob == pytest.approx(result.marginals[t, model.labels.index(name)],
                                         abs=5e-5)


def test_marginals(setup):
    out = label_cli(setup, "--marginals")
    model = setup[2]
    want = api(setup, marginals=True)
    for block, result in zip(blocks(out), want, strict=True):
        for t, line in enumerate(block):
            fields = line.split()
            assert fields[2] == result.labels[t]
            cells = [split_prob(c) for c in fields[3:]]
            assert [name for name, _ in cells] == model.labels  # model label order
            for y, (_, prob) in enumerate(cells):
                assert prob == pytest.approx(result.marginals[t, y], abs=5e-5)
            assert sum(p for _, p in cells) == pytest.approx(1.0, abs=1e-3)


def test_score_marginals_labels_only_and_tabs(setup):
    out = label_cli(setup, "-l", "-s", "--marginals", "--sep", "tab",
                    text=TEST.replace(" ", "\t"))
    first = blocks(out)[0]
    assert first[0].startswith("# ")
    fields = first[1].split("\t")
    assert len(fields) == 1 + len(setup[2].labels) and " " not in first[1]


def test_posterior(setup):
    out = label_cli(setup, "-p")
    assert [line.split()[-1] for b in blocks(out) for line in b] == \
        [y for r in api(setup, posterior=True) for y in r.labels]


def test_force(setup):
    text = "the DT _\ndog NN B-VP\nran VBD _\n\nbig JJ O\ncat NN _\n"
    out = label_cli(setup, "--force", "-n", "2", text=text)
    for block in blocks(out):
        for line in block[1:]:
            fields = line.split()
            assert fields[2] in ("_", fields[3])
    assert blocks(out)[0][2].split()[2:] == ["B-VP", "B-VP"]


def test_force_with_empty_fields(setup):
    text = "the\tDT\t\ndog\tNN\tB-VP\n"
    out = label_cli(setup, "--force", "--sep", "tab", "-l", text=text)
    assert out.split("\n")[1] == "B-VP"


def test_constraints_iob(setup):
    text = "dog NN\nthe DT\ncat NN\nran VBD\n"
    for options in (["-n", "8"], ["-p"], []):
        out = label_cli(setup, "--constraints", "iob", "-l", *options, text=text)
        for block in blocks(out):
            path = [line for line in block if not line.startswith("#")]
            assert not path[0].startswith("I-")
            for prev, cur in zip(path[:-1], path[1:], strict=True):
                if cur.startswith("I-"):
                    assert prev[2:] == cur[2:] and prev[:2] in ("B-", "I-")


def test_check_still_reports_accuracy_with_score(setup):
    tmp, model, _ = setup
    result = run("label", "-m", model, "-c", "-s", str(tmp / "train.txt"))
    assert result.exit_code == 0 and "token accuracy" in result.stderr
    assert blocks(result.stdout)[0][1].split()[2] == "B-NP"  # gold kept before the prediction


# --- errors: one line, no output ----------------------------------------------------------------
@pytest.mark.parametrize("options,needle", [
    (["-n", "2", "-p"], "--post"),
    (["--nbest-columns"], "--nbest-columns"),
    (["-n", "0"], "--nbest"),
    (["--force", "-c"], "--force"),
])
def test_conflicting_options(setup, options, needle):
    tmp, model, _ = setup
    out = tmp / "out.txt"
    one_error_line(run("label", "-m", model, *options, str(tmp / "test.txt"), str(out)), needle)
    assert not out.exists()


def test_unknown_forced_label(setup):
    tmp, model, _ = setup
    bad = tmp / "forced.txt"
    bad.write_text("the DT _\ndog NN B-XX\n")
    one_error_line(run("label", "-m", model, "--force", str(bad)), f"{bad}:2", "'B-XX'")


def test_force_needs_the_column(setup):
    tmp, model, _ = setup
    one_error_line(run("label", "-m", model, "--force", str(tmp / "test.txt")),
                   f"{tmp / 'test.txt'}:1", "--force")


def test_contradictory_force_and_iob(setup):
    tmp, model, _ = setup
    bad = tmp / "contradiction.txt"
    bad.write_text("the DT _\ndog NN O\nran VBD I-NP\n")
    one_error_line(run("label", "-m", model, "--force", "--constraints", "iob", str(bad)),
                   f"{bad}:3", "no label sequence")


def test_logprob_of_all_blocks_sum_to_at_most_one(setup):
    out = label_cli(setup, "-n", "100", text="big JJ\ncat NN\n")
    probs = [math.exp(float(b[0].split()[2])) for b in blocks(out)]
    assert len(probs) == 16 and sum(probs) == pytest.approx(1.0, abs=1e-3)


@pytest.mark.parametrize("model_type", ["memm", "maxent"])
def test_locally_normalised_models(setup, model_type):
    """n-best log-probabilities of a MEMM / MaxEnt are probabilities of their own model."""
    tmp, _, _ = setup
    model = tmp / f"{model_type}.model"
    result = run("train", "-q", "-T", model_type, "-p", str(tmp / "p.pat"),
                 str(tmp / "train.txt"), str(model))
    assert result.exit_code == 0, result.stderr
    result = run("label", "-m", str(model), "-n", "64", input="big JJ\ncat NN\nran VBD\n")
    assert result.exit_code == 0, result.stderr
    probs = [math.exp(float(b[0].split()[2])) for b in blocks(result.stdout)]
    assert len(probs) == 64 and sum(probs) == pytest.approx(1.0, abs=1e-3)
    plain = run("label", "-m", str(model), "-l", input="big JJ\ncat NN\nran VBD\n")
    assert plain.stdout.split() == [line.split()[-1] for line in blocks(result.stdout)[0][1:]]


def test_threads_keep_the_output_and_its_order(setup, monkeypatch):
    """Batches decoded in several threads come out in input order, byte for byte as one
    thread writes them; an error in a later batch still surfaces, naming its line."""
    import crfkit.labelling.label as labelling
    from crfkit.errors import InputError
    from crfkit.labelling.label import LabelOptions, label_stream

    _, _, model = setup
    words = ["the DT", "dog NN", "ran VBD", "big JJ", "cat NN", "sat VBD", "on IN", "a DT"]
    text = "\n\n".join("\n".join(words[(s + k) % len(words)] for k in range(1 + s % 5))
                       for s in range(60)) + "\n"
    monkeypatch.setattr(labelling, "BATCH_TOKENS", 7)  # about 25 batches

    def output(threads: int, source: str = text, **options) -> str:
        out = io.StringIO()
        sequences = read_sequences(io.BytesIO(source.encode()))
        label_stream(model, sequences, out, LabelOptions(**options), threads=threads)
        return out.getvalue()

    one = output(1)
    assert one.count("\n\n") == 60  # a blank line after each sequence
    assert output(2) == one and output(3) == one
    assert label_cli(setup, "-t", "2", text=text) == label_cli(setup, "-t", "1", text=text)
    forced = "\n".join(line + " _" if line else "" for line in text.split("\n")[:-1]) + "\n"
    bad = forced + "\nthe DT B-XX\n"  # an unknown forced label in the last batch
    assert output(2, forced, force=True) == output(1, forced, force=True)
    with pytest.raises(InputError, match="unknown label 'B-XX'") as caught:
        output(2, bad, force=True)
    assert caught.value.line == bad.count("\n")


@pytest.mark.parametrize("threads", [1, 2, 4])
def test_labelling_streams_with_bounded_lookahead(setup, monkeypatch, threads):
    """Memory stays flat however long the input: output starts before the input ends,
    and the reader is never more than threads + 1 batches ahead of the writer."""
    import crfkit.labelling.label as labelling
    from crfkit.io.reader import Sequence
    from crfkit.labelling.label import LabelOptions, label_stream

    _, _, model = setup
    monkeypatch.setattr(labelling, "BATCH_TOKENS", 10)
    n_sequences, per_sequence = 400, 2  # 5 sequences a batch, 80 batches
    consumed = 0

    def sequences():
        nonlocal consumed
        for s in range(n_sequences):
            consumed += 1
            yield Sequence(rows=[["the", "DT"], ["dog", "NN"]], lines=[3 * s + 1, 3 * s + 2])

    class Output:
        written = 0
        ahead = []

        def write(self, text: str) -> None:
            self.written += text.count("\n\n")
            self.ahead.append(consumed - self.written)

    out = Output()
    label_stream(model, sequences(), out, LabelOptions(), threads=threads)
    assert out.written == n_sequences
    batch = 10 // per_sequence
    assert len(out.ahead) == n_sequences // batch  # one write per batch, as they come
    assert max(out.ahead) <= (threads + 2) * batch


def test_cost_factor_scales_the_scores(setup):
    """crf_test's -c: labelling with --cost-factor 2 is labelling a model whose weights are
    doubled (made by dump --all and update, not by the option's code); the labels and the
    n-best order stay, the probabilities sharpen."""
    tmp, model, _ = setup
    text = run("dump", "--all", "--prec", "17", model).stdout.split("# features")[1]
    rows = [line.split("\t") for line in text.splitlines()[1:]]
    (tmp / "double.txt").write_text("".join(f"{o}\t{t}\t{2 * float(w)!r}\n" for o, t, w in rows))
    doubled = tmp / "double.model"
    assert run("update", "-q", "-m", model, tmp / "double.txt", doubled).exit_code == 0
    for options in (["-s", "--marginals"], ["-n", "3", "-s"]):
        scaled = label_cli(setup, "--cost-factor", "2", *options)
        assert scaled == run("label", "-m", doubled, *options, input=TEST).stdout
        assert scaled != label_cli(setup, *options)
    assert label_cli(setup, "--cost-factor", "0.25") == label_cli(setup)
    plain = [split_prob(c)[1] for c in label_cli(setup, "-s").split() if "/" in c]
    sharp = [split_prob(c)[1] for c in label_cli(setup, "-s", "--cost-factor", "3").split()
             if "/" in c]
    assert all(s >= p - 1e-12 for s, p in zip(sharp, plain, strict=True)) and sharp != plain


@pytest.mark.parametrize("value", ["0", "-1", "inf"])
def test_bad_cost_factor(setup, value):
    _, model, _ = setup
    one_error_line(run("label", "-m", model, "--cost-factor", value, input=TEST),
                   "--cost-factor")
