"""Wapiti's -w: stop once the token error is stable over a window of iterations."""

from crfkit.model.model import Model
from crfkit.training.monitor import StableError
from tests.conftest import ADDRESS_PATTERNS
from tests.helpers import run


def test_stable_error_rule_by_hand():
    rule = StableError(3, 0.02)
    assert rule(5.0) is None and rule(4.0) is None
    assert rule(3.99) is None            # window 5.0 .. 3.99: moved 1.01
    assert rule(3.98) is None            # window 4.0 .. 3.98: moved 0.02, not < 0.02
    assert "3 iterations" in rule(3.975)  # window 3.99 .. 3.975: moved 0.015
    assert StableError(0, 0.02)(1.0) is None


def test_w_stops_training_and_is_recorded(address_sample, tmp_path):
    model = tmp_path / "m"
    trained = run("train", "-w", "2", "--error-eps", "100", "-p", ADDRESS_PATTERNS,
                  address_sample["train"], model)
    assert trained.exit_code == 0, trained.stderr
    assert "over 2 iterations (-w)" in trained.stderr
    info = Model.load(model).info
    assert info["iterations"] == 2 and info["options"]["error_window"] == 2


def test_w_watches_the_best_paths_of_the_weights_just_reached(address_sample):
    """As Wapiti's -w: the training error of an iteration is that of Viterbi decoding at
    the weights the iteration reached (the model when it stops), counted here from
    labelling the training data with the model, not the errors the objective counted
    on its way (posterior decoding, one point behind)."""
    from crfkit.features.patterns import read_patterns
    from crfkit.io.reader import read_sequences
    from crfkit.labelling.label import label
    from crfkit.training.train import TrainOptions, train

    sequences = list(read_sequences(address_sample["train"]))
    rows: list[dict] = []
    model = train(read_patterns(ADDRESS_PATTERNS), sequences,
                  TrainOptions(maxiter=4, nthread=1, error_window=3, error_eps=0.0), log=rows)
    predicted = label(model, [[row[:-1] for row in s.rows] for s in sequences])
    wrong = sum(p != s.rows[i][-1] for s, r in zip(sequences, predicted, strict=True)
                for i, p in enumerate(r.labels))
    n_tokens = sum(len(s.rows) for s in sequences)
    assert len(rows) == 4 and wrong > 0
    assert rows[-1]["token_error"] == 100.0 * wrong / n_tokens
