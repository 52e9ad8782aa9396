"""Damped belief propagation when labelling with a skip-chain model (``label_damping``):
why (undamped max-product oscillates on frustrated loops), where it is recorded, and
that ``crfkit label`` uses it."""

from __future__ import annotations

import numpy as np
import pytest

import crfkit.structures.skipchain.bethe
from crfkit.model.model import Model
from crfkit.space import Dataset
from crfkit.structures.skipchain.bethe import BeliefPropagation, skip_decode
from crfkit.structures.skipchain.graph import SkipOptions, graph_from_edges
from crfkit.structures.skipchain.space import SkipSpace
from tests.helpers import callee_versions, one_error_line, run, skip_corpus


def triangle(seed: int, L: int = 2) -> tuple:
    """Three one-token sentences joined pairwise by skip edges (a loop), random strong
    skip weights: (space, data, graph, W)."""
    rng = np.random.default_rng(seed)
    space = SkipSpace(n_labels=L, u_ptr=np.arange(4, dtype=np.int64) * L,
                      u_lab=np.tile(np.arange(L, dtype=np.int32), 3),
                      b_ptr=np.zeros(4, dtype=np.int64),
                      b_prev=np.zeros(0, dtype=np.int32), b_cur=np.zeros(0, dtype=np.int32),
                      has_trans=True, n_skip=1)
    seq_ptr = np.arange(4, dtype=np.int64)
    data = Dataset(seq_ptr=seq_ptr, tok_ptr=np.arange(4, dtype=np.int64),
                   tok_obs=np.arange(3, dtype=np.int32), labels=np.zeros(3, dtype=np.int32))
    graph = graph_from_edges(np.array([0, 3]), seq_ptr, np.array([0, 1, 0]),
                             np.array([1, 2, 2]), np.zeros(3, dtype=np.int64))
    W = rng.normal(0, 1, space.n_weights)
    W[space.skip_offset:] = rng.normal(0, 4, L * L)
    return space, data, graph, W


def test_undamped_max_product_can_oscillate_and_damping_settles_it():
    undamped = damped = 0
    for seed in range(60):
        space, data, graph, W = triangle(seed)
        for damping in (0.0, 0.5):
            bp = BeliefPropagation(maxiter=500, tol=1e-9, damping=damping)
            _, _, unconverged = skip_decode(space, W, data, graph.arrays(),
                                            space.skip_offset, bp)
            if damping:
                damped += unconverged
            else:
                undamped += unconverged
    assert undamped > 0  # some frustrated loops never settle without damping
    assert damped == 0


def test_old_models_label_with_their_training_damping():
    new = SkipOptions(bp_damping=0.25, label_damping=0.5)
    assert SkipOptions.from_dict(new.as_dict()) == new
    old = {k: v for k, v in new.as_dict().items() if k != "label_damping"}
    assert SkipOptions.from_dict(old).label_damping == 0.25
    with pytest.raises(ValueError, match="label-damping"):
        SkipOptions.from_dict({**new.as_dict(), "label_damping": 1.0})


@pytest.fixture()
def files(tmp_path):
    return skip_corpus(tmp_path, [("Green", "PER", 3), ("Paris", "LOC", 3), ("Green", "PER", 3)])


def test_label_uses_the_recorded_damping(files, tmp_path, monkeypatch):
    data, pat = files
    default, chosen = tmp_path / "a.model", tmp_path / "b.model"
    # training damping 0, so that labelling's damping can only come from --bp-label-damping
    assert run("train", "-q", "-t", "1", "-i", "5", "--bp-damping", "0", "-p", pat, data,
               default).exit_code == 0
    assert run("train", "-q", "-t", "1", "-i", "5", "--bp-damping", "0",
               "--bp-label-damping", "0.3", "-p", pat, data, chosen).exit_code == 0
    a, b = Model.load(default), Model.load(chosen)
    assert a.info["skip"]["label_damping"] == 0.5 and b.info["skip"]["label_damping"] == 0.3
    assert a.info["skip"]["bp_damping"] == b.info["skip"]["bp_damping"] == 0.0
    np.testing.assert_array_equal(a.weights, b.weights)  # training does not read it
    seen: list[float] = []
    real = crfkit.structures.skipchain.bethe.BeliefPropagation

    def spy(maxiter: int, tol: float, damping: float) -> BeliefPropagation:
        seen.append(damping)
        return real(maxiter, tol, damping)

    monkeypatch.setattr(crfkit.structures.skipchain.bethe, "BeliefPropagation", spy)
    for model, damping in ((default, 0.5), (chosen, 0.3)):
        seen.clear()
        out = run("label", "-t", "1", "-m", model, "-c", data)
        assert out.exit_code == 0 and out.stdout.count("B-PER B-PER") == 6
        assert seen and set(seen) == {damping}
    one_error_line(run("train", "-q", "--bp-label-damping", "1", "-p", pat, data, default),
                   "--bp-label-damping")


def test_label_says_when_belief_propagation_did_not_settle(files, tmp_path, monkeypatch):
    data, pat = files
    model = tmp_path / "m.model"
    assert run("train", "-q", "-t", "1", "-i", "5", "-p", pat, data, model).exit_code == 0
    quiet = run("label", "-t", "1", "-m", model, data)
    assert quiet.exit_code == 0 and "did not settle" not in quiet.stderr
    real = crfkit.structures.skipchain.bethe.skip_decode
    calls: list[int] = []

    def unsettled(*args, **kwargs):  # as if BP ran out of rounds in one document a batch
        decoded, rounds, _ = real(*args, **kwargs)
        calls.append(1)
        return decoded, rounds, 1

    monkeypatch.setattr(crfkit.structures.skipchain.bethe, "skip_decode", unsettled)
    told = run("label", "-t", "1", "-m", model, data)
    assert told.exit_code == 0
    assert told.stdout == quiet.stdout  # the labels are written all the same
    n = len(calls)
    assert n >= 1
    assert f"belief propagation did not settle in {n} document{'s' * (n != 1)}:" in told.stderr


def test_label_can_override_the_recorded_damping_and_rounds(files, tmp_path, monkeypatch):
    data, pat = files
    model = tmp_path / "m.model"
    assert run("train", "-q", "-t", "1", "-i", "5", "-p", pat, data, model).exit_code == 0
    recorded = Model.load(model).info["skip"]
    seen: list[tuple[int, float]] = []
    real = crfkit.structures.skipchain.bethe.BeliefPropagation

    def spy(maxiter: int, tol: float, damping: float) -> BeliefPropagation:
        seen.append((maxiter, damping))
        return real(maxiter, tol, damping)

    monkeypatch.setattr(crfkit.structures.skipchain.bethe, "BeliefPropagation", spy)
    outputs = []
    for options, wanted in (((), (recorded["bp_maxiter"], recorded["label_damping"])),
                            (("--bp-damping", "0.2"), (recorded["bp_maxiter"], 0.2)),
                            (("--bp-maxiter", "7"), (7, recorded["label_damping"])),
                            (("--bp-damping", "0", "--bp-maxiter", "3"), (3, 0.0))):
        seen.clear()
        out = run("label", "-t", "1", "-m", model, *options, "-c", data)
        assert out.exit_code == 0, out.stderr
        assert seen and set(seen) == {wanted}
        outputs.append(out.stdout)
    assert outputs[1].count("B-PER B-PER") == 6  # this easy corpus labels alike throughout
    one_error_line(run("label", "-m", model, "--bp-damping", "1", data), "--bp-damping")
    one_error_line(run("label", "-m", model, "--bp-maxiter", "0", data), "--bp-maxiter")


def test_bp_options_are_refused_for_models_without_belief_propagation(files, tmp_path):
    data, pat = files
    chain = tmp_path / "chain.model"
    linear = tmp_path / "linear.pat"
    linear.write_text("\n".join(line for line in pat.read_text().splitlines()
                                if not line.lower().startswith("s")) + "\n")
    assert run("train", "-q", "-i", "3", "-p", linear, data, chain).exit_code == 0
    line = one_error_line(run("label", "-m", chain, "--bp-damping", "0.5", data),
                          "--bp-damping", "skipchain")
    assert "crf" in line


def test_input_without_document_markers_is_told_and_doc_sep_marks_them(files, tmp_path):
    """Without -DOCSTART- lines every sentence of the input is its own document (no skip
    edges between sentences): labelling says so, and --doc-sep names another separator."""
    data, pat = files
    model = tmp_path / "m.model"
    assert run("train", "-q", "-t", "1", "-i", "5", "-p", pat, data, model).exit_code == 0
    marked = run("label", "-t", "1", "-m", model, data)
    assert marked.exit_code == 0 and "no document marker" not in marked.stderr
    text = data.read_text()
    bare = tmp_path / "bare.txt"
    bare.write_text(text.replace("-DOCSTART- X O\n", ""))
    told = run("label", "-t", "1", "-m", model, bare)
    assert told.exit_code == 0
    lines = [line for line in told.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "no document marker in INPUT" in lines[0]
    assert "each of its 9 sentences" in lines[0] and "--doc-sep REGEX" in lines[0]
    hashed = tmp_path / "hashed.txt"
    hashed.write_text(text.replace("-DOCSTART- X O\n", "### new document\n"))
    separated = run("label", "-t", "1", "-m", model, "--doc-sep", "^###", hashed)
    assert separated.exit_code == 0 and "no document marker" not in separated.stderr
    # the same documents as with -DOCSTART- lines: the same labels
    assert [line.split()[-1] for line in separated.stdout.splitlines() if line.strip()] == \
        [line.split()[-1] for line in marked.stdout.splitlines() if line.strip()]
    chain, linear = tmp_path / "chain.model", tmp_path / "linear.pat"
    linear.write_text("u:w=%x[0,0]\nB\n")
    assert run("train", "-q", "-i", "2", "-p", linear, data, chain).exit_code == 0
    one_error_line(run("label", "-m", chain, "--doc-sep", "^###", data), "--doc-sep")


def test_training_and_labelling_share_one_compiled_version_of_the_bp_kernels(tmp_path):
    """Training's weights are writable, a loaded model's read-only: both reach the edges'
    scores and belief propagation as read-only views (the same data tuple, max-product a
    bool, not the literal False), so a first training and labelling compile them once."""
    from crfkit.structures.skipchain.belief import _propagate, edge_scores
    from crfkit.structures.skipchain.chain_pass import chain_pass

    data, pat = skip_corpus(tmp_path, [("Green", "PER", 3), ("Paris", "LOC", 2)])
    model = tmp_path / "skip.model"
    assert run("train", "-q", "-i", "2", "-p", pat, data, model).exit_code == 0
    trained = {kernel: set(kernel.signatures) for kernel in (_propagate, chain_pass)}
    result = run("label", "-m", model, data, tmp_path / "out")
    assert result.exit_code == 0, result.stderr
    assert len(edge_scores.signatures) == 1, edge_scores.signatures
    assert len(callee_versions(_propagate)) == 1, _propagate.signatures
    for kernel, signatures in trained.items():
        assert set(kernel.signatures) == signatures, kernel  # labelling compiled none
