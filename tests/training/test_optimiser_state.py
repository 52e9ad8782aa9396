"""``--sstate`` / ``--rstate`` (crfkit.training.optimiser_state), ``--clip`` and the rprop
options through ``crfkit train``, on a three-sentence corpus."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from crfkit.model.model import Model
from tests.helpers import CHUNK_TRAIN, one_error_line, run

PATTERNS = "u:w=%x[0,0]\nu:p=%x[0,1]\nu:pw=%x[-1,0]\nB\n"


@pytest.fixture
def files(tmp_path: Path) -> Path:
    (tmp_path / "p.pat").write_text(PATTERNS)
    (tmp_path / "train.txt").write_text(CHUNK_TRAIN)
    return tmp_path


def train(folder: Path, model: str, *options: object):
    result = run("train", "-q", "-p", folder / "p.pat", "-e", "0", *options,
                 folder / "train.txt", folder / model)
    assert result.exit_code == 0, result.stderr
    return folder / model


@pytest.mark.parametrize("options", [("-1", "0.2"), ("-a", "rprop", "-1", "0.2")],
                         ids=["owl-qn", "rprop"])
def test_saved_then_restored_run_makes_the_uninterrupted_model(files, options):
    whole = train(files, "whole.model", *options, "-i", "12")
    train(files, "first.model", *options, "-i", "5", "--sstate", files / "s.npz")
    resumed = train(files, "resumed.model", *options, "-i", "12", "--rstate", files / "s.npz")
    assert resumed.read_bytes() == whole.read_bytes()
    assert Model.load(resumed).info["iterations"] == 12
    with np.load(files / "s.npz", allow_pickle=False) as state:  # no pickled object inside
        assert int(state["it"]) == 5


def test_a_state_of_other_data_or_settings_is_refused_in_one_line(files):
    train(files, "first.model", "-i", "3", "--sstate", files / "s.npz")
    (files / "other.txt").write_text(CHUNK_TRAIN.replace("cat", "cow"))
    refused = run("train", "-q", "-p", files / "p.pat", "--rstate", files / "s.npz",
                  files / "other.txt", files / "m.model")
    one_error_line(refused, "s.npz", "another training", "corpus or patterns differ")
    refused = run("train", "-q", "-p", files / "p.pat", "-2", "3", "--rstate", files / "s.npz",
                  files / "train.txt", files / "m.model")
    one_error_line(refused, "rho2")
    (files / "junk.npz").write_text("not a state")
    refused = run("train", "-q", "-p", files / "p.pat", "--rstate", files / "junk.npz",
                  files / "train.txt", files / "m.model")
    one_error_line(refused, "junk.npz", "not an optimiser state")
    assert not (files / "m.model").exists()


@pytest.mark.parametrize("options,needle", [
    (("-a", "sgd-l1", "--sstate", "s.npz"), "not of -a sgd-l1"),
    (("--rstate", "{train}", "-m", "{train}"), "-m/--model"),
    (("-a", "rprop", "--stpinc", "1"), "--stpinc must be > 1"),
    (("-a", "rprop", "--stpmin", "2", "--stpmax", "1"), "stpmin <= stpmax"),
    (("--maxls", "0"), "must be >= 1"),
    (("--sstate", "s.npz", "--dask", "local:1"), "--dask"),
])
def test_bad_combinations_are_refused_in_one_line(files, options, needle):
    options = [str(o).format(train=files / "train.txt") for o in options]
    one_error_line(run("train", "-q", "-p", files / "p.pat", *options, files / "train.txt",
                       files / "m.model"), needle)


def test_clip_keeps_zero_weights_at_zero(files):
    sparse = Model.load(train(files, "l1.model", "-1", "0.8", "-i", "30")).weights
    zero = sparse == 0.0
    assert 0 < zero.sum() < zero.size
    clipped = Model.load(train(files, "clip.model", "-m", files / "l1.model", "-1", "0",
                               "-i", "5", "--clip")).weights
    free = Model.load(train(files, "free.model", "-m", files / "l1.model", "-1", "0",
                            "-i", "5")).weights
    assert np.all(clipped[zero] == 0.0)
    assert not np.array_equal(clipped[~zero], sparse[~zero])  # the others did train
    assert np.any(free[zero] != 0.0)  # without --clip the zero weights move
    assert Model.load(files / "clip.model").info["options"]["clip"] is True


def test_rprop_options_are_recorded_and_change_the_model(files):
    default = Model.load(train(files, "a.model", "-a", "rprop-", "-i", "8"))
    tuned = Model.load(train(files, "b.model", "-a", "rprop-", "-i", "8", "--stpmax", "0.2",
                             "--stpinc", "1.1", "--stpdec", "0.4", "--stpmin", "1e-6"))
    recorded = tuned.info["options"]
    assert (recorded["stpmax"], recorded["stpinc"], recorded["stpdec"],
            recorded["stpmin"]) == (0.2, 1.1, 0.4, 1e-6)
    assert tuned.info["algorithm"] == "rprop-"
    assert not np.array_equal(default.weights, tuned.weights)
    assert np.abs(tuned.weights).max() <= 8 * 0.2 + 0.1  # no weight moved more than stpmax
