"""crfkit tune: folds, strength paths, warm starts, Ctrl-C, the command."""

from __future__ import annotations

import json
import signal
from dataclasses import replace

import numpy as np
import pytest

from crfkit.errors import CrfkitError, UsageError
from crfkit.features.patterns import read_patterns
from crfkit.io.reader import read_sequences
from crfkit.model.model import Model
from crfkit.progress import Progress
from crfkit.structures import named
from crfkit.structures.base import Choice
from crfkit.training.train import TrainOptions, train
from crfkit.training.tune import (
    Strength,
    TuneOptions,
    make_folds,
    parse_likely,
    parse_strengths,
    strength_path,
    tune,
)
from tests.conftest import ADDRESS_PATTERNS
from tests.helpers import run

needs_order2 = pytest.mark.skipif(
    not named("order2").claims(Choice(None, None, {"order": 2})),
    reason="the second order does not implement the structure interface in this tree")


@pytest.mark.parametrize(("n", "k"), [(103, 5), (10, 10), (7, 2)])
def test_folds_partition_the_sequences(n: int, k: int) -> None:
    folds = make_folds(n, k, seed=3)
    assert len(folds) == k
    assert np.array_equal(np.sort(np.concatenate(folds)), np.arange(n))
    sizes = [len(f) for f in folds]
    assert max(sizes) - min(sizes) <= 1
    assert all(np.all(np.diff(f) > 0) for f in folds)


def test_folds_are_deterministic_for_a_seed() -> None:
    first = make_folds(200, 5, seed=11)
    again = make_folds(200, 5, seed=11)
    other = make_folds(200, 5, seed=12)
    assert all(np.array_equal(a, b) for a, b in zip(first, again, strict=True))
    assert not all(np.array_equal(a, b) for a, b in zip(first, other, strict=True))


def test_folds_refuse_too_few_sequences() -> None:
    with pytest.raises(UsageError, match="only 3 sequence"):
        make_folds(3, 5, seed=0)
    with pytest.raises(UsageError, match=">= 2"):
        make_folds(30, 1, seed=0)


def test_strength_lists_and_paths() -> None:
    assert parse_strengths("2,1,0.5", "--rho2") == [2.0, 1.0, 0.5]
    assert parse_strengths("2:0.125:5", "--rho2") == [2.0, 1.0, 0.5, 0.25, 0.125]
    for bad in ("2:0.1", "a,b", "-1", "0:1:3", "2:1:0"):
        with pytest.raises(UsageError, match="--rho2"):
            parse_strengths(bad, "--rho2")
    assert strength_path(None, None)[0] == Strength(0.0, 0.5)
    assert [s.rho2 for s in strength_path(None, [0.5, 2, 1])] == [2, 1, 0.5]
    grid = strength_path([0.1, 1], [1, 2])  # snake: one strength changes per step
    assert grid == [Strength(1, 2), Strength(1, 1), Strength(0.1, 1), Strength(0.1, 2)]


def test_likely_thresholds_parse() -> None:
    assert parse_likely("0.1,0.01") == (0.1, 0.01)
    assert parse_likely("none") == ()
    for bad in ("2", "0", "x"):
        with pytest.raises(UsageError, match="--likely"):
            parse_likely(bad)


def _sample(address_sample):
    return (read_patterns(ADDRESS_PATTERNS), list(read_sequences(address_sample["train"])),
            list(read_sequences(address_sample["test"])))


def test_warm_start_reaches_the_cold_optimum(address_sample) -> None:
    patterns, train, devel = _sample(address_sample)
    options = TrainOptions(stopeps=1e-12, stopwin=5, maxiter=2000, nthread=1)
    path = [Strength(0.0, 4.0), Strength(0.0, 1.0), Strength(0.0, 0.25)]
    runs = {warm: tune(patterns, train, options, path,
                       TuneOptions(warm_start=warm, path_stopeps=None),
                       devel=devel) for warm in (True, False)}
    for warm_point, cold_point in zip(runs[True].points, runs[False].points, strict=True):
        (warm_f,), (cold_f,) = warm_point.objective, cold_point.objective
        assert abs(warm_f - cold_f) <= 1e-6 * abs(cold_f)
    warm_its = sum(p.iterations for p in runs[True].points[1:])
    cold_its = sum(p.iterations for p in runs[False].points[1:])
    assert warm_its < cold_its  # the saving the path is for


def test_likely_point_grows_the_best_observed_point(address_sample) -> None:
    patterns, train, devel = _sample(address_sample)
    options = TrainOptions(maxiter=40, nthread=1)
    path = [Strength(0.0, 8.0), Strength(0.0, 1.0)]
    result = tune(patterns, train, options, path, TuneOptions(likely=(0.5,)), devel=devel)
    first, second, likely = result.points
    observed = second if second.f1 > first.f1 else first
    assert likely.strength == Strength(0.0, observed.strength.rho2, 0.5)
    assert likely.nonzero > observed.nonzero  # the added features learnt weights
    best = max(result.points, key=lambda p: p.f1)
    assert result.best is not None and result.best.f1 == best.f1
    tune_info = result.model.info["tune"]
    assert tune_info["scored"] == "3 of 3"
    assert tune_info["chosen_likely"] == (best.strength.likely or None)
    assert result.model.info["options"].get("likely") == (best.strength.likely or None)


def test_likely_features_are_those_train_finds(address_sample) -> None:
    """The features are found where train --likely-features finds them: after 20
    iterations from zero (tune's first, cold point at the same strength)."""
    patterns, sequences, devel = _sample(address_sample)
    options = TrainOptions(maxiter=25, nthread=1)
    result = tune(patterns, sequences, options, [Strength(0.0, 1.0)],
                  TuneOptions(likely=(0.2,)), devel=devel)
    observed, likely = result.points
    trained = train(patterns, sequences, replace(options, rho2=1.0, likely=0.2))
    plain = train(patterns, sequences, replace(options, rho2=1.0))
    assert observed.features == plain.space.n_weights
    assert likely.features == trained.space.n_weights > plain.space.n_weights


def test_likely_points_need_an_observed_start(address_sample) -> None:
    patterns, train, devel = _sample(address_sample)
    with pytest.raises(UsageError, match="observed-feature point"):
        tune(patterns, train, TrainOptions(maxiter=5, nthread=1), [Strength(0.0, 1.0, 0.1)],
             TuneOptions(likely=()), devel=devel)


def test_chosen_likely_point_makes_the_final_model(address_sample) -> None:
    """Folds: the final training on all the data adds likely features too (from fold 1's
    model there). Three iterations a point: the likely point, three more from the
    observed one's weights, scores higher."""
    patterns, train, _ = _sample(address_sample)
    options = TrainOptions(maxiter=3, nthread=1)
    result = tune(patterns, train, options, [Strength(0.0, 1.0)],
                  TuneOptions(folds=2, jobs=1, likely=(0.2,)))
    observed, likely = result.points
    assert likely.f1 > observed.f1 and result.best is likely
    model = result.model
    assert model.info["options"]["likely"] == 0.2 and model.info["tune"]["chosen_likely"] == 0.2
    plain = tune(patterns, train, options, [Strength(0.0, 1.0)],
                 TuneOptions(folds=2, jobs=1, likely=())).model
    assert "likely" not in plain.info["options"]
    assert model.space.n_weights > plain.space.n_weights


@needs_order2
def test_tune_trains_second_order_models(address_sample) -> None:
    """--order 2: the folds are second-order corpora, the held-out part is decoded with
    the second-order decoder (the point's F1 is the model's own labelling's) and no
    likely point is scored (train refuses likely features with --order 2)."""
    from crfkit.evaluation.scoring import evaluate
    from crfkit.labelling.label import label

    patterns, train_seqs, devel = _sample(address_sample)
    options = TrainOptions(structure={"order": 2}, maxiter=12, nthread=1)
    result = tune(patterns, train_seqs, options, [Strength(0.0, 1.0)],
                  TuneOptions(path_stopeps=None), devel=devel)
    model = result.model
    assert model.space.order == 2 and model.info["options"]["order"] == 2
    assert [p.strength.likely for p in result.points] == [0.0]
    direct = train(patterns, train_seqs, replace(options, rho2=1.0))
    np.testing.assert_array_equal(model.weights, direct.weights)
    pred = [r.labels for r in label(model, [[row[:-1] for row in s.rows] for s in devel])]
    gold = [[row[-1] for row in s.rows] for s in devel]
    assert result.best.f1 == pytest.approx(evaluate(gold, pred).f1, abs=1e-12)
    assert 50 < result.best.f1 < 100  # a real score, not a degenerate one


class _Interrupting(Progress):
    """Presses Ctrl-C (SIGINT to this process) right after the first table row."""

    def __init__(self) -> None:
        super().__init__(quiet=True)
        self.rows = 0

    def message(self, text: str) -> None:
        if text.startswith("  ") and text.split()[0][0].isdigit():
            self.rows += 1
            if self.rows == 1:
                signal.raise_signal(signal.SIGINT)


def test_ctrl_c_keeps_the_best_point_so_far(address_sample) -> None:
    patterns, train, _ = _sample(address_sample)
    result = tune(patterns, train, TrainOptions(maxiter=15), strength_path(None, None),
                  TuneOptions(folds=3, jobs=2), progress=_Interrupting())
    assert result.interrupted
    assert len(result.points) == 1 and result.best is result.points[0]
    assert isinstance(result.model, Model)
    assert result.model.info["tune"]["scored"] == "1 of 4"  # 3 strengths, 1 likely point
    assert result.model.info["options"]["rho2"] == 0.5


@pytest.mark.slow
def test_tune_command_folds_json_report_and_model(address_sample, tmp_path) -> None:
    model = tmp_path / "tuned.model"
    result = run("tune", "-p", ADDRESS_PATTERNS, "--folds", "3", "--rho2", "4,0.5", "-i", "20",
                 "--json", "--report", tmp_path / "rep", address_sample["train"], model)
    assert result.exit_code == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["mode"] == "folds" and summary["folds"] == 3
    observed = summary["points"][:2]
    assert [p["rho2"] for p in observed] == [4.0, 0.5]
    assert all(p["likely"] is None for p in observed)
    best_observed = max(observed, key=lambda p: p["f1"])
    assert summary["points"][2]["likely"] == 0.01  # the default threshold, at the best strength
    assert summary["points"][2]["rho2"] == best_observed["rho2"]
    best = max(summary["points"], key=lambda p: p["f1"])
    assert summary["best"]["rho2"] == best["rho2"]
    assert summary["best"]["likely"] == best["likely"]
    assert all(len(p["fold_f1"]) == 3 for p in summary["points"])
    info = Model.load(model).info
    assert info["options"]["rho2"] == best["rho2"]
    assert info["options"].get("likely") == best["likely"]
    assert info["tune"]["chosen_rho2"] == best["rho2"]
    assert "initial_model" not in info
    rows = [line for line in result.stderr.splitlines() if line.startswith("  ")]
    assert len(rows) == 4 and "rho2" in rows[0]  # header and one row per point
    points_csv = (tmp_path / "rep" / "points.csv").read_text().splitlines()
    assert points_csv[0] == "rho1,rho2,f1,f1_sd,iterations,seconds,nonzero,likely"
    assert len(points_csv) == 4
    assert (tmp_path / "rep" / "path_iterations.csv").exists()
    assert (tmp_path / "rep" / "iterations.csv").exists()  # the final training's log


def test_tune_refuses_bad_options(address_sample, tmp_path) -> None:
    for args, needle in ((["--rho2", "1,x"], "--rho2"), (["--folds", "1"], "--folds"),
                         (["-j", "-1"], "--jobs"), (["--likely", "2"], "--likely"),
                         (["--order", "2", "--likely", "0.1"], "not with --order 2")):
        result = run("tune", "-p", ADDRESS_PATTERNS, *args, address_sample["train"],
                     tmp_path / "m.model")
        assert result.exit_code == 1, result.output
        assert needle in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "m.model").exists()


@needs_order2
def test_tune_refuses_a_bad_order(address_sample, tmp_path) -> None:
    result = run("tune", "-p", ADDRESS_PATTERNS, "--order", "3", address_sample["train"],
                 tmp_path / "m.model")
    assert result.exit_code == 1, result.output
    assert "--order must be 1 or 2" in result.stderr and "Traceback" not in result.stderr


def test_devel_model_is_trained_on_to_the_final_stopping_rule(address_sample) -> None:
    """-d: the path point stops at --path-stopeps; the model saved goes on to -e from its
    weights (as converged as its recorded options say), and each iteration shows on the
    status line while the path runs."""
    import io

    patterns, train_seqs, devel = _sample(address_sample)
    options = TrainOptions(stopeps=1e-7, stopwin=5, maxiter=1000, nthread=1)
    stream = io.StringIO()
    result = tune(patterns, train_seqs, options, [Strength(0.0, 1.0)],
                  TuneOptions(likely=(), path_stopeps=1e-2), devel=devel,
                  progress=Progress(stream, live=True))
    point, model = result.points[0], result.model
    assert "1e-07" not in point.reasons[0]
    assert model.info["iterations"] > point.iterations
    assert model.info["stop_reason"] == result.final["stop_reason"] != point.reasons[0]
    assert model.info["objective"] < point.objective[0]
    direct = train(patterns, train_seqs, replace(options, rho2=1.0))
    assert model.info["objective"] == pytest.approx(direct.info["objective"], rel=1e-5)
    assert "rho1=0 rho2=1: iteration 1, objective" in stream.getvalue()
    assert "training on to -e 1e-07" in stream.getvalue()


def test_a_best_strength_at_the_edge_of_the_grid_is_told() -> None:
    from crfkit.training.tune import edge_warning

    path = strength_path(None, [0.5, 0.25, 0.125])
    weakest = edge_warning(path, Strength(0.0, 0.125))
    assert "rho2=0.125 is the weakest" in weakest and "--rho2 below 0.125" in weakest
    assert "strongest" in edge_warning(path, Strength(0.0, 0.5))
    assert edge_warning(path, Strength(0.0, 0.25)) is None
    assert edge_warning([Strength(0.0, 1.0)], Strength(0.0, 1.0)) is None  # no grid
    grid = strength_path([1.0, 0.1], [1.0])
    assert "--rho1 below 0.1" in edge_warning(grid, Strength(0.1, 1.0))


def test_tune_trains_label_sets_as_train_does_and_logs_real_errors(tmp_path) -> None:
    # 'a' is A twice and B once: one error in 4 tokens with one label, 1 sequence of 5
    data = tmp_path / "t.txt"
    data.write_text("a A\n\na B\n\na A\n\nb A|B\n\nb B\n")
    (tmp_path / "p.pat").write_text("U00:%x[0,0]\nB\n")
    patterns = read_patterns(tmp_path / "p.pat")
    sequences = list(read_sequences(data))
    points = []
    for latent in ({}, {"latent": 1}):
        options = TrainOptions(maxiter=8, nthread=1, structure=latent)
        result = tune(patterns, sequences, options, [Strength(0.0, 1.0)], devel=sequences,
                      source=str(data))
        points.append(result.points[0])
        last = result.points[0].logs[0][-1]
        assert (last["token_error"], last["sequence_error"]) == (25.0, 20.0)
        assert result.final_log and result.final_log[-1]["token_error"] == 25.0
    assert points[0].objective == points[1].objective  # the same training, unasked


def test_an_explicit_likely_list_on_label_sets_is_refused_before_any_training(tmp_path) -> None:
    """Label sets choose their structure once the data is read; that structure has no
    likely features, so a --likely list the user gave is refused there, not dropped; the
    default list is dropped quietly."""
    data = tmp_path / "t.txt"
    data.write_text("a A\n\nb A|B\n\nb B\n")
    (tmp_path / "p.pat").write_text("U00:%x[0,0]\nB\n")
    patterns = read_patterns(tmp_path / "p.pat")
    sequences = list(read_sequences(data))
    options = TrainOptions(maxiter=3, nthread=1)
    told: list[str] = []
    progress = Progress(quiet=True)
    progress.message = told.append
    with pytest.raises(CrfkitError, match=r"t.txt:3: .*likely"):
        tune(patterns, sequences, options, [Strength(0.0, 1.0)], TuneOptions(likely=(0.1,)),
             devel=sequences, source=str(data), progress=progress)
    assert not any("scoring" in line for line in told)  # refused before any training
    result = tune(patterns, sequences, options, [Strength(0.0, 1.0)], devel=sequences,
                  source=str(data))
    assert [p.strength.likely for p in result.points] == [0.0]
