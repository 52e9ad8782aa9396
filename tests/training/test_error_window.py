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
