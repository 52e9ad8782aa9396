"""Observation-conditioned skip features (``e:`` patterns): an edge's score is the sum of
several weight blocks. Kernels against brute force, the graph's blocks, and the workflow.
"""

from __future__ import annotations

import numpy as np
import pytest

from crfkit.errors import UsageError
from crfkit.features.patterns import parse_patterns
from crfkit.io.reader import DocStart, Sequence
from crfkit.model.model import Model
from crfkit.structures.skipchain.bethe import SkipObjective, skip_decode
from crfkit.structures.skipchain.documents import resolve_skip_type
from crfkit.structures.skipchain.graph import SkipOptions, build_graph
from crfkit.training.corpus import split_documents
from crfkit.training.train import TrainOptions, train
from tests.helpers import TIGHT, make_problem, one_error_line, run
from tests.naive import central_differences, skip_enumeration, skip_features

# (i, j, pattern) edges, and per edge the extra (conditioned) blocks after the 2 patterns'
LOOP = ([3, 3], [0], [(0, 3, 0), (2, 5, 1)], 3, [[2], [2, 3]])
TREE = ([3, 2], [0], [(1, 4, 0)], 3, [[2, 3]])
N_BLOCKS = 4  # 2 skip patterns + 2 observations


def conditioned(lengths, docs, edges, L, extra, seed=0):
    """A problem whose edges have their pattern's block plus the ``extra`` blocks."""
    space, data, graph, W = make_problem(lengths, docs, edges, L, n_skip=N_BLOCKS,
                                         skip_scale=0.7, seed=seed)
    by_edge = {(i, j): p for i, j, p in edges}
    blocks = [[by_edge[(int(i), int(j))]] + extra[[tuple(e[:2]) for e in edges].index(
        (int(i), int(j)))] for i, j in zip(graph.e_i, graph.e_j, strict=True)]
    graph.eb_ptr = np.concatenate([[0], np.cumsum([len(b) for b in blocks])]).astype(np.int64)
    graph.eb_blk = np.array([k for b in blocks for k in b], dtype=np.int64)
    return space, data, graph, W


def exact(space, data, graph, W):
    return skip_enumeration(space, data, graph, W)[:3]


def objective(space, data, graph, W, rho2=0.0):
    emp = skip_features(space, data, graph, data.labels)
    obj = SkipObjective(space, data, emp, rho2, graph.arrays(), space.skip_offset, TIGHT,
                        warm=False, edge_blocks=graph.blocks())
    g = np.empty(space.n_weights)
    return obj(W, g), g, emp


def test_conditioned_edges_are_exact_on_a_tree():
    space, data, graph, W = conditioned(*TREE)
    log_z, marg, expect = exact(space, data, graph, W)
    f, g, emp = objective(space, data, graph, W)
    assert f + W @ emp == pytest.approx(log_z, abs=1e-9)
    np.testing.assert_allclose(g + emp, expect, atol=1e-9)
    dec, _, _ = skip_decode(space, W, data, graph.arrays(), space.skip_offset, TIGHT,
                            marginals=True, edge_blocks=graph.blocks())
    np.testing.assert_allclose(dec.marginals, marg, atol=1e-9)


def test_conditioned_edges_on_a_loop_are_close_to_brute_force():
    space, data, graph, W = conditioned(*LOOP)
    log_z, marg, _ = exact(space, data, graph, W)
    f, _, emp = objective(space, data, graph, W)
    assert abs(f + W @ emp - log_z) < 0.03
    dec, _, _ = skip_decode(space, W, data, graph.arrays(), space.skip_offset, TIGHT,
                            marginals=True, edge_blocks=graph.blocks())
    assert np.abs(dec.marginals - marg).max() < 0.03
    # the observation blocks count: zeroing them moves log Z
    W0 = W.copy()
    W0[space.skip_offset + 2 * 9:] = 0.0
    assert abs(exact(space, data, graph, W0)[0] - log_z) > 0.03


def test_conditioned_bethe_gradient_matches_finite_differences():
    space, data, graph, W = conditioned(*LOOP, seed=3)
    _, g, _ = objective(space, data, graph, W, rho2=0.5)
    numeric = central_differences(lambda w: objective(space, data, graph, w, rho2=0.5)[0], W)
    np.testing.assert_allclose(g, numeric, atol=1e-6, rtol=1e-5)
    assert np.abs(g[space.skip_offset + 2 * 9:]).max() > 1e-3  # the blocks have a gradient


def seq(*words: str, labels: str = "") -> Sequence:
    tags = labels.split() or ["O"] * len(words)
    return Sequence([[w, t] for w, t in zip(words, tags, strict=True)], [1] * len(words))


SKIP = 's:cap=%t[-1,0,"."]%m[0,0,"^\\u.*"]'


def test_edges_get_the_blocks_of_the_observations_at_either_end():
    pats = parse_patterns(f"u:%x[0,0]\n{SKIP}\ne:prev=%x[-1,0]\n")
    marker = DocStart(["-DOCSTART-"], 1)
    sequences, starts = split_documents([marker, seq("in", "Gent", "nu"), seq("naar", "Gent"),
                                         seq("in", "Gent")])
    graph = build_graph(sequences, starts, pats, SkipOptions())
    assert [c.split(" | ")[1] for c in graph.conditions] == ["e:prev=in", "e:prev=naar"]
    eb_ptr, eb_blk = graph.blocks()
    # Gent(1)-Gent(4): "in" or "naar"; Gent(4)-Gent(6): "naar" or "in" (one block each)
    assert [eb_blk[eb_ptr[e]:eb_ptr[e + 1]].tolist() for e in range(2)] == [[0, 1, 2]] * 2
    # labelling: an observation the model does not know is left out
    other, starts = split_documents([marker, seq("uit", "Gent"), seq("in", "Gent")])
    known = build_graph(other, starts, pats, SkipOptions(), ["x", graph.conditions[0]])
    assert known.blocks()[1].tolist() == [0, 1 + 1]  # one skip pattern, then "x", then it


def test_edge_observations_need_skip_patterns():
    with pytest.raises(UsageError, match="e:"):
        resolve_skip_type(None, parse_patterns("u:%x[0,0]\ne:%x[0,1]\n"))
    with pytest.raises(Exception, match="needs a command"):
        parse_patterns("u:%x[0,0]\ne:pos\n")


def documents(n_docs: int = 8, seed: int = 0) -> list:
    """Documents where a name recurs, sometimes first in its sentence."""
    rng = np.random.default_rng(seed)
    items = []
    for _ in range(n_docs):
        items.append(DocStart(["-DOCSTART-", "O"], 1))
        name, tag = "Gent", "B-LOC" if rng.random() < 0.5 else "B-PER"
        for _ in range(3):
            if rng.random() < 0.5:
                items.append(seq(name, "zegt", "nu", labels=f"{tag} O O"))
            else:
                items.append(seq("dat", name, "zegt", labels=f"O {tag} O"))
    return items


def test_training_with_edge_observations_saves_and_reloads(tmp_path):
    pats = parse_patterns(f"u:%x[0,0]\nu:%x[-1,0]\nb\n{SKIP[:2]}any=%m[0,0,\"^\\u.*\"]\n"
                          f"e:init=%t[-1,0,\".\"]\n")
    model = train(pats, documents(), TrainOptions(maxiter=30))
    conditions = model.info["skip"]["conditions"]
    assert len(conditions) == 2  # init=true / init=false
    assert model.space.n_skip == 1 + 2
    again = Model.from_bytes(model.to_bytes())
    np.testing.assert_array_equal(again.weights, model.weights)
    assert again.info["skip"]["conditions"] == conditions
    # a file whose observation list does not match its weights is refused
    bad = Model.from_bytes(model.to_bytes())
    bad.info["skip"]["conditions"] = conditions[:1]
    with pytest.raises(Exception, match="skip weight blocks"):
        Model.from_bytes(bad.to_bytes())


def test_no_skip_edge_with_edge_observations_is_the_linear_chain():
    pats = parse_patterns(f"u:%x[0,0]\nb\n{SKIP}\ne:init=%t[-1,0,\".\"]\n")
    linear = train(pats[:2], documents(), TrainOptions(maxiter=20))
    skip = train(pats, documents(), TrainOptions(maxiter=20, structure={"skip_cap": 0}))
    assert skip.info["skip"]["edges"] == 0 and "conditions" not in skip.info["skip"]
    # the same model (blocks of documents sum the gradient in another order than blocks
    # of sentences: the same to rounding, as without e: lines)
    np.testing.assert_allclose(skip.weights[:skip.space.skip_offset], linear.weights,
                               rtol=1e-12, atol=1e-12)
    assert not skip.weights[skip.space.skip_offset:].any()


@pytest.mark.slow
def test_cli_train_label_dump_with_edge_observations(tmp_path):
    data = tmp_path / "train.txt"
    lines = []
    for item in documents(12):
        if isinstance(item, DocStart):
            lines.append("-DOCSTART- O\n")
        else:
            lines.extend(" ".join(r) + "\n" for r in item.rows)
            lines.append("\n")
    data.write_text("".join(lines))
    pat = tmp_path / "p.pat"
    pat.write_text(f"u:%x[0,0]\nb\n{SKIP}\ne:init=%t[-1,0,\".\"]\ne:w=%x[0,0]\n")
    model = tmp_path / "m"
    assert run("train", "-q", "-p", pat, "-i", "20", data, model).exit_code == 0
    out = run("label", "-c", "-m", model, data)
    assert out.exit_code == 0 and "B-" in out.output
    dump = run("dump", model)
    assert dump.exit_code == 0 and "e:w=Gent" in dump.output
    bad = tmp_path / "bad.pat"
    bad.write_text("u:%x[0,0]\ne:%x[0,0]\n")
    result = run("train", "-q", "-p", bad, data, tmp_path / "m2")
    assert "e:" in one_error_line(result)
    assert not (tmp_path / "m2").exists()


def test_warm_start_keeps_the_observations_blocks():
    from crfkit.structures.skipchain.documents import attach_skip_edges
    from crfkit.training.corpus import encode_training

    pats = parse_patterns(f"u:%x[0,0]\nb\n{SKIP[:2]}any=%m[0,0,\"^\\u.*\"]\ne:w=%X[0,0]\n")
    model = train(pats, documents(), TrainOptions(maxiter=10))
    old = model.info["skip"]["conditions"]
    more = documents() + [DocStart(["-DOCSTART-", "O"], 1),
                          seq("Brugge", "zegt", labels="B-LOC O"), seq("dat", "Brugge")]
    sequences, starts = split_documents(more)
    corpus = encode_training(pats, sequences, model_type="skipchain", init=model)
    graph = attach_skip_edges(corpus, sequences, starts, pats, SkipOptions(), model)
    assert graph.conditions[:len(old)] == old and len(graph.conditions) == len(old) + 1
    skip, old_skip = corpus.space.skip_offset, model.space.skip_offset
    n_old = model.space.n_weights - old_skip
    np.testing.assert_array_equal(corpus.x0[skip:skip + n_old], model.weights[old_skip:])
    assert not corpus.x0[skip + n_old:].any() and model.weights[old_skip:].any()
