"""Skip-chain models end to end: documents, skip keys and edges, training, labelling, files."""

from __future__ import annotations

import numpy as np
import pytest

from crfkit.errors import ModelFormatError, PatternError
from crfkit.features.patterns import parse_patterns
from crfkit.io.fileformat import dumps, loads
from crfkit.io.reader import DocStart, Sequence
from crfkit.kernels.objective import Objective
from crfkit.labelling.label import label_sequences
from crfkit.model.model import Model, compact
from crfkit.structures.skipchain.bethe import BeliefPropagation, SkipObjective
from crfkit.structures.skipchain.graph import SkipOptions, build_graph
from crfkit.training.corpus import split_documents
from crfkit.training.train import TrainOptions, train
from tests.helpers import PATTERNS, one_error_line, random_corpus, run

SKIP = parse_patterns('s:cap=%t[-1,0,"."]%m[0,0,"^\\u.*"]')


def seq(*words: str, labels: str = "") -> Sequence:
    tags = labels.split() or ["O"] * len(words)
    return Sequence(rows=[[w, "N", y] for w, y in zip(words, tags, strict=True)],
                    lines=list(range(1, len(words) + 1)))


def test_documents_run_between_markers_or_are_sentences():
    a, b, c = seq("x"), seq("y"), seq("z")
    assert split_documents([a, b, c]) == ([a, b, c], [0, 1, 2])
    marker = DocStart(["-DOCSTART-"], 1)
    assert split_documents([marker, a, b, marker, c]) == ([a, b, c], [0, 2])
    assert split_documents([a, marker, b, c]) == ([a, b, c], [0, 1])


def test_skip_keys_and_edges():
    # "Green" starts sentence 1 (no key), then appears three times; "the" is lower case
    doc = [seq("Green", "met", "Green"), seq("the", "Green", "and", "Green")]
    graph = build_graph(doc, [0], SKIP, SkipOptions(mode="next"))
    assert list(zip(graph.e_i, graph.e_j, strict=True)) == [(2, 4), (4, 6)]
    graph = build_graph(doc, [0], SKIP, SkipOptions(mode="all"))
    assert list(zip(graph.e_i, graph.e_j, strict=True)) == [(2, 4), (2, 6), (4, 6)]
    capped = build_graph(doc, [0], SKIP, SkipOptions(mode="all", cap=2))
    assert list(zip(capped.e_i, capped.e_j, strict=True)) == [(2, 4), (4, 6)]  # shortest
    apart = build_graph(doc, [0, 1], SKIP, SkipOptions(mode="all"))  # two documents
    assert list(zip(apart.e_i, apart.e_j, strict=True)) == [(4, 6)]
    assert list(apart.edge_ptr) == [0, 0, 1]
    # every edge is listed at both of its ends
    assert sorted(apart.inc_edge.tolist()) == [0, 0]
    assert list(np.diff(apart.inc_ptr)) == [0, 0, 0, 0, 1, 0, 1]


def test_a_skip_pattern_needs_a_command():
    with pytest.raises(PatternError, match="skip pattern needs a command"):
        parse_patterns("s:cap")


def corpus_with_names(n_docs: int = 6, seed: int = 0):
    """Documents where a name recurs, sometimes with a misleading context."""
    rng = np.random.default_rng(seed)
    names = ["Green", "Smith", "Paris", "Berlin"]
    kinds = {"Green": "PER", "Smith": "PER", "Paris": "LOC", "Berlin": "LOC"}
    items = []
    for _ in range(n_docs):
        items.append(DocStart(["-DOCSTART-", "X", "O"], 1))
        name = str(rng.choice(names))
        for _ in range(int(rng.integers(2, 4))):
            before = str(rng.choice(["met", "in", "saw", "near"]))
            items.append(seq("We", before, name, "today",
                             labels=f"O O B-{kinds[name]} O"))
    return items


def test_cap_zero_is_exactly_the_linear_chain():
    items = corpus_with_names()
    chain = train(PATTERNS[:1] + PATTERNS[-1:], items, TrainOptions(maxiter=15))
    skip = train(PATTERNS[:1] + PATTERNS[-1:] + SKIP, items,
                 TrainOptions(maxiter=15, structure={"skip_cap": 0}))
    assert skip.model_type == "skipchain" and skip.info["skip"]["edges"] == 0
    n = chain.space.n_weights
    # the same model; not the same bits: blocks of whole documents sum the gradient
    # in another order than blocks of sentences
    np.testing.assert_allclose(skip.weights[:n], chain.weights, rtol=1e-12, atol=1e-12)
    assert not skip.weights[n:].any()


def test_skipchain_without_skip_patterns_is_the_linear_chain_bit_for_bit():
    seqs = random_corpus(3, n_seqs=12)
    chain = train(PATTERNS, seqs, TrainOptions(maxiter=20))
    skip = train(PATTERNS, seqs, TrainOptions(maxiter=20, model_type="skipchain"))
    np.testing.assert_array_equal(skip.weights, chain.weights)
    assert label_sequences(skip, seqs) == label_sequences(chain, seqs)


def test_objective_without_edges_equals_the_chain_objective():
    from crfkit.structures.skipchain.graph import graph_from_edges
    from crfkit.training.corpus import encode_training

    seqs = random_corpus(4, n_seqs=20)
    c = encode_training(PATTERNS, seqs)
    doc_ptr = np.arange(c.data.n_seqs + 1, dtype=np.int64)
    none = np.zeros(0, dtype=np.int64)
    graph = graph_from_edges(doc_ptr, c.data.seq_ptr, none, none, none)
    w = np.random.default_rng(0).normal(0, 0.5, c.space.n_weights)
    g1, g2 = np.empty_like(w), np.empty_like(w)
    chain = Objective(c.space, c.data, c.empirical, 0.7)
    chain.max_obs = np.inf  # the skip kernels exponentiate summed scores: so does the chain
    f1 = chain(w, g1)
    f2 = SkipObjective(c.space, c.data, c.empirical, 0.7, graph.arrays(), c.space.chain_weights,
                       BeliefPropagation())(w, g2)
    assert f1 == f2
    np.testing.assert_array_equal(g1, g2)


def test_skip_edges_make_mentions_consistent():
    items = corpus_with_names(n_docs=10)
    model = train(PATTERNS[:1] + PATTERNS[-1:] + SKIP, items, TrainOptions())
    # the skip weights learnt that joined mentions share their label
    L = len(model.labels)
    S = model.weights[model.space.skip_offset:].reshape(L, L)
    per = model.labels.index("B-PER")
    assert S[per, per] > S[per, model.labels.index("B-LOC")]
    restored = Model.from_bytes(model.to_bytes())
    assert restored.to_bytes() == model.to_bytes()
    assert restored.space.n_skip == 1
    small = compact(model)  # drops zero unigram weights, keeps the skip block
    assert small.space.n_skip == 1 and len(small.weights) == small.space.n_weights
    np.testing.assert_array_equal(small.weights[small.space.skip_offset:], S.reshape(-1))
    sequences = [i for i in items if isinstance(i, Sequence)]
    assert label_sequences(small, sequences) == label_sequences(model, sequences)


def test_model_file_checks_the_skip_blocks():
    model = train(PATTERNS[:1] + PATTERNS[-1:] + SKIP, corpus_with_names(), TrainOptions(
        maxiter=3))
    meta, arrays = loads(model.to_bytes())
    for bad in ({**meta, "n_skip": 2}, {**meta, "n_skip": "1"}, {**meta, "type": "crf"},
                {**meta, "info": {**meta["info"], "skip": {"mode": "every"}}}):
        with pytest.raises(ModelFormatError):
            Model.from_bytes(dumps(bad, arrays))


@pytest.fixture()
def files(tmp_path):
    lines = []
    for item in corpus_with_names(n_docs=8, seed=2):
        if isinstance(item, DocStart):
            lines.append("-DOCSTART- X O")
        else:
            lines += [" ".join(row) for row in item.rows] + [""]
    data = tmp_path / "train.txt"
    data.write_text("\n".join(lines) + "\n")
    pat = tmp_path / "skip.pat"
    pat.write_text('u:w=%x[0,0]\nu:p=%x[-1,0]\nB\ns:cap=%t[-1,0,"."]%m[0,0,"^\\u.*"]\n')
    return data, pat


@pytest.mark.slow
def test_cli_train_label_info_dump(files, tmp_path):
    data, pat = files
    m1, m2 = tmp_path / "a.model", tmp_path / "b.model"
    assert run("train", "-q", "-p", pat, "-t", "1", data, m1).exit_code == 0
    assert run("train", "-q", "-p", pat, "-t", "2", data, m2).exit_code == 0
    assert m1.read_bytes() == m2.read_bytes()  # the thread count changes nothing
    assert "skipchain" in run("info", m1).output
    assert "s:cap" in run("dump", m1).output
    out = run("label", "-m", m1, "-c", data).stdout
    assert out.startswith("-DOCSTART- X O O\n")
    assert run("eval", input=out).output.count("FB1: 100.00") >= 1
    post = run("label", "-m", m1, "-p", "-l", data).stdout.split()
    assert post == run("label", "-m", m1, "-l", data).stdout.split()
    marg = run("label", "-m", m1, "--marginals", data).stdout.splitlines()[1].split()
    assert abs(sum(float(c.split("/")[1]) for c in marg[4:]) - 1) < 1e-3


def test_cli_refusals(files, tmp_path):
    data, pat = files
    model = tmp_path / "m.model"
    one_error_line(run("train", "-q", "-p", pat, "-T", "memm", data, model), "-T memm")
    one_error_line(run("train", "-q", "-p", pat, "-d", data, data, model), "-d/--devel")
    one_error_line(run("train", "-q", "-p", pat, "-a", "ap", data, model), "ap")
    one_error_line(run("train", "-q", "-p", pat, "--bp-damping", "1", data, model),
                   "--bp-damping")
    assert run("train", "-q", "-p", pat, "-i", "2", data, model).exit_code == 0
    for option in (["-n", "2"], ["-s"], ["--constraints", "iob"]):
        one_error_line(run("label", "-m", model, *option, data), option[0])
    one_error_line(run("tune", "-q", "-p", pat, data), "skip-chain")


def test_doc_sep_lines_separate_documents(files, tmp_path):
    data, pat = files
    text = data.read_text().replace("-DOCSTART- X O", "=== X O")
    sep_data = tmp_path / "sep.txt"
    sep_data.write_text(text)
    with_markers, with_sep = tmp_path / "a.model", tmp_path / "b.model"
    assert run("train", "-q", "-p", pat, "-i", "5", data, with_markers).exit_code == 0
    assert run("train", "-q", "-p", pat, "-i", "5", "--doc-sep", "^===", sep_data,
               with_sep).exit_code == 0
    a, b = Model.load(with_markers), Model.load(with_sep)
    assert a.info["skip"]["edges"] == b.info["skip"]["edges"] > 0
    np.testing.assert_array_equal(a.weights, b.weights)
    assert b.info["skip"]["doc_sep"] == "^==="
    out = run("label", "-m", with_sep, "-c", sep_data).stdout
    assert out.startswith("=== X O O\n")
    one_error_line(run("train", "-q", "-p", pat, "--doc-sep", "(", sep_data, with_sep),
                   "--doc-sep")


def test_warm_start_keeps_the_skip_weights():
    from crfkit.structures.skipchain.documents import attach_skip_edges
    from crfkit.training.corpus import encode_training, split_documents

    patterns = PATTERNS[:1] + PATTERNS[-1:] + SKIP
    items = corpus_with_names()
    model = train(patterns, items, TrainOptions(maxiter=10))
    sequences, starts = split_documents(items)
    corpus = encode_training(patterns, sequences, model_type="skipchain", init=model)
    attach_skip_edges(corpus, sequences, starts, patterns, SkipOptions(), model)
    skip = corpus.space.skip_offset
    assert corpus.space.n_weights == model.space.n_weights == len(corpus.x0)
    np.testing.assert_array_equal(corpus.x0[skip:], model.weights[skip:])
    assert model.weights[skip:].any()
    again = train(None, items, TrainOptions(maxiter=2), init=model)
    assert again.model_type == "skipchain" and again.space.n_skip == 1


def test_memory_guard_counts_the_messages():
    from crfkit.structures.skipchain.documents import skip_bytes

    doc = [seq("a", "Green", "and", "Green", "or", "Green")]
    one = build_graph(doc, [0], SKIP, SkipOptions(mode="next"))
    three = build_graph(doc, [0], SKIP, SkipOptions(mode="all"))
    ptr = np.array([0, 6])
    assert skip_bytes(three, ptr, 5, 1) - skip_bytes(one, ptr, 5, 1) >= 16 * 5 * 1
    assert skip_bytes(one, ptr, 5, 2) > skip_bytes(one, ptr, 5, 1)


def test_belief_propagation_that_does_not_converge_is_reported():
    import io

    from crfkit.progress import Progress

    patterns = PATTERNS[:1] + PATTERNS[-1:] + SKIP
    stream = io.StringIO()
    train(patterns, corpus_with_names(), TrainOptions(maxiter=3, structure={
        "skip_mode": "all", "bp_maxiter": 1, "bp_tol": 0.0}), progress=Progress(stream))
    assert "warning: belief propagation did not converge" in stream.getvalue()
    stream = io.StringIO()
    train(patterns, corpus_with_names(), TrainOptions(maxiter=3), progress=Progress(stream))
    assert "warning" not in stream.getvalue()
