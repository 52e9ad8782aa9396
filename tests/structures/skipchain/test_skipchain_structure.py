"""The skip chain behind the structure interface (crfkit.structures.skipchain.SkipChain):
what each method gives, checked against the skip-chain helpers it wraps, brute force
(finite differences) and invariants (round trips, compaction, memory counts)."""

from __future__ import annotations

import io
from dataclasses import fields, replace

import numpy as np
import pytest

from crfkit.errors import ModelFormatError, UsageError
from crfkit.features.patterns import parse_patterns
from crfkit.io.fileformat import dumps, loads
from crfkit.io.reader import Sequence
from crfkit.progress import Progress
from crfkit.structures.base import Choice, DecodeRequest, DumpParts, Setting
from crfkit.structures.skipchain.options import SkipOptions
from crfkit.structures.skipchain.space import SkipSpace
from crfkit.structures.skipchain.structure import SkipChain
from crfkit.training.corpus import split_documents
from crfkit.training.train import TrainOptions, train
from tests.helpers import PATTERNS
from tests.structures.skipchain.test_skipchain_train import SKIP, corpus_with_names

EDGE = parse_patterns("e:w=%x[0,0]\ne:prev=%x[-1,0]")
PATTERNS_SKIP = PATTERNS[:1] + PATTERNS[-1:] + SKIP + EDGE
# the option values of a training that gave --skip-mode all --skip-cap 3 --bp-tol 1e-4
VALUES = {"skip_mode": "all", "skip_cap": 3, "bp_maxiter": 40, "bp_tol": 1e-4,
          "bp_damping": 0.4, "bp_label_damping": 0.3, "doc_sep": None}
OPTIONS = SkipOptions("all", 3, 40, 1e-4, 0.4, None, 0.3)


@pytest.fixture(scope="module")
def model():
    return train(PATTERNS_SKIP, corpus_with_names(n_docs=8),
                 TrainOptions(maxiter=6, structure=VALUES))


def encoded(model=None, attach=None):
    """A training corpus of the names corpus, its skip part attached by ``attach``."""
    from crfkit.structures import named
    from crfkit.training.corpus import encode_training

    sequences, starts = split_documents(corpus_with_names(n_docs=8))
    corpus = encode_training(PATTERNS_SKIP, sequences, model_type="skipchain", init=model,
                             structure=named("skipchain"))
    attach(corpus, sequences, starts)
    return corpus


def old_attach(init=None):
    from crfkit.structures.skipchain.documents import attach_skip_edges

    return lambda c, seqs, starts: attach_skip_edges(c, seqs, starts, PATTERNS_SKIP, OPTIONS,
                                                     init)


def new_attach(init=None, stream=None):
    progress = Progress(stream or io.StringIO())
    return lambda c, seqs, starts: SkipChain().attach(c, seqs, starts, VALUES, init, progress)


def assert_same_space(a, b) -> None:
    """``a``, a skip space, has the arrays and counts of ``b`` (the old code's space)."""
    assert isinstance(a, SkipSpace)
    for f in fields(SkipSpace):
        np.testing.assert_array_equal(getattr(a, f.name), getattr(b, f.name), err_msg=f.name)
    assert a.n_weights == b.n_weights and a.skip_offset == b.skip_offset


def error_of(call) -> str:
    with pytest.raises(UsageError) as err:
        call()
    return str(err.value)


def test_the_options_are_the_command_lines():
    from crfkit.cli import label_command, train_command

    for options, command in ((SkipChain.train_options, train_command),
                             (SkipChain.label_options, label_command)):
        params = {p.name: p for p in command.params}
        for o in options:
            p = params[o.name]
            assert (list(p.opts), p.default, p.help, bool(p.show_default)) == \
                   (list(o.flags), o.default, o.help, o.show_default), o.name
            assert p.metavar == o.metavar
            assert getattr(p.type, "choices", None) == getattr(o.kind, "choices", None)
    from crfkit.structures.skipchain.options import skip_options

    assert skip_options({}) == SkipOptions() and skip_options(VALUES) == OPTIONS


def test_option_checks_refuse_what_the_old_validation_refused():
    bad = {"skip_mode": "every", "skip_cap": -1, "bp_maxiter": 0, "bp_tol": float("nan"),
           "bp_damping": 1.0, "bp_label_damping": -0.1}
    for o in SkipChain.train_options:
        if o.name in bad:
            wrong = replace(OPTIONS, **_field(o.name, bad[o.name]))
            old = error_of(wrong.validate)
            assert o.check(bad[o.name]) == old
            assert o.check(o.default) is None
    for o in SkipChain.label_options:
        assert o.check is None or o.check(None) is None


def _field(name: str, value) -> dict:
    return {{"skip_mode": "mode", "skip_cap": "cap",
             "bp_label_damping": "label_damping"}.get(name, name): value}


@pytest.mark.parametrize("model_type", [None, "crf", "skipchain"])
@pytest.mark.parametrize("patterns", [PATTERNS, PATTERNS + SKIP, PATTERNS + EDGE,
                                      PATTERNS + SKIP + EDGE, None])
def test_claims_as_the_type_was_resolved(model_type, patterns):
    from crfkit.structures.skipchain.documents import resolve_skip_type

    try:
        old = resolve_skip_type(model_type, patterns)
    except UsageError as err:
        old = str(err)
    try:
        # the registry also picks the structure the -T row names
        claimed = SkipChain.claims(Choice(model_type, patterns, {})) or model_type == "skipchain"
        new = "skipchain" if claimed else model_type
    except UsageError as err:
        new = str(err)
    assert new == old


def test_refusals_say_what_the_workflows_said(model, tmp_path):
    from crfkit.dask.training import refuse_unavailable
    from crfkit.labelling.label import Decoder, LabelOptions
    from crfkit.training.tune import Strength, tune

    s = SkipChain()
    setting = Setting("train", "l-bfgs", "skipchain", VALUES)
    s.refuse(setting)  # plain training: nothing refused
    seqs = [i for i in corpus_with_names() if isinstance(i, Sequence)]
    assert error_of(lambda: s.refuse(replace(setting, devel=True))) == error_of(
        lambda: train(PATTERNS_SKIP, corpus_with_names(), TrainOptions(maxiter=1),
                      devel=seqs))
    assert error_of(lambda: s.refuse(replace(setting, command="tune"))) == error_of(
        lambda: tune(PATTERNS_SKIP, seqs, TrainOptions(), [Strength(0.0, 1.0)]))
    assert error_of(lambda: s.refuse(replace(setting, command="dask"))) == error_of(
        lambda: refuse_unavailable(PATTERNS_SKIP, TrainOptions()))
    for flag, options in (("-n/--nbest", LabelOptions(nbest=2)),
                          ("-s/--score", LabelOptions(scores=True)),
                          ("--force", LabelOptions(force=True)),
                          ("--constraints", LabelOptions(constraints="iob"))):
        assert error_of(lambda f=flag: s.refuse_labelling({f: True, "-p": True})) == \
            error_of(lambda o=options: Decoder(model, o, "x"))
    s.refuse_labelling({"-n/--nbest": False, "--marginals": True})


def test_attach_encodes_as_the_training_did(model):
    for init in (None, model):
        stream = io.StringIO()
        old, new = encoded(init, old_attach(init)), encoded(init, new_attach(init, stream))
        assert_same_space(new.space, old.space)
        assert new.space.n_skip == old.space.n_skip == 1 + len(new.part.conditions)
        for a, b in ((old.empirical, new.empirical), (old.x0, new.x0),
                     *zip(old.graph.arrays() + old.graph.blocks(),
                          new.part.arrays() + new.part.blocks(), strict=True)):
            np.testing.assert_array_equal(a, b)
        assert new.part.conditions == old.graph.conditions
        g = new.part
        assert stream.getvalue() == (f"* skip edges: {g.n_edges} in {g.n_docs} documents "
                                     f"(all, at most 3 a document)\n")
    assert model.weights[model.space.skip_offset:].any()
    np.testing.assert_array_equal(new.x0[new.space.skip_offset:],
                                  model.weights[model.space.skip_offset:])


# BP to a tight tolerance: the Bethe gradient is exact at BP's fixed point
TIGHT = {**VALUES, "bp_maxiter": 500, "bp_tol": 1e-12}


def test_objective_gradient_is_its_finite_differences():
    corpus = encoded(attach=new_attach())
    objective = SkipChain().objective(corpus, 0.5, 0, TIGHT)
    n, skip = corpus.space.n_weights, corpus.space.skip_offset
    w = np.random.default_rng(1).normal(0, 0.3, n)
    g = np.empty(n)
    objective(w, g)
    picked = np.r_[np.random.default_rng(2).choice(skip, 6, replace=False), skip:n]
    scratch, h = np.empty(n), 1e-5
    for k in picked:
        up, down = w.copy(), w.copy()
        up[k] += h
        down[k] -= h
        numeric = (objective(up, scratch) - objective(down, scratch)) / (2 * h)
        assert numeric == pytest.approx(g[k], rel=1e-4, abs=1e-5), k


def test_objective_with_zero_skip_weights_is_the_chains():
    """Skip edges of zero weight change nothing: BP then gives the chain's exact value."""
    corpus = encoded(attach=new_attach())
    skip_objective = SkipChain().objective(corpus, 0.5, 0, TIGHT)
    without = encoded(attach=new_attach())
    without.part = replace(without.part, e_i=without.part.e_i[:0])
    chain_objective = SkipChain().objective(without, 0.5, 0, TIGHT)
    w = np.random.default_rng(3).normal(0, 0.3, corpus.space.n_weights)
    w[corpus.space.skip_offset:] = 0.0
    g_skip, g_chain = np.empty_like(w), np.empty_like(w)
    assert skip_objective(w, g_skip) == pytest.approx(chain_objective(w, g_chain), rel=1e-8)
    skip = corpus.space.skip_offset
    np.testing.assert_allclose(g_skip[:skip], g_chain[:skip], rtol=1e-6, atol=1e-8)


def test_unconverged_belief_propagation_is_one_training_warning():
    corpus = encoded(attach=new_attach())
    loose = {**VALUES, "bp_maxiter": 1, "bp_tol": 0.0}
    objective = SkipChain().objective(corpus, 1.0, 0, loose)
    w = np.random.default_rng(1).normal(0, 0.3, corpus.space.n_weights)
    objective(w, np.empty_like(w))
    [note] = SkipChain().notes(objective)
    assert "\n" not in note and "--bp-maxiter" in note
    assert SkipChain().notes(object()) == []
    stream = io.StringIO()
    train(PATTERNS_SKIP, corpus_with_names(n_docs=8), TrainOptions(maxiter=2, structure=loose),
          progress=Progress(stream))
    assert "belief propagation did not converge" in stream.getvalue()
    stream = io.StringIO()
    train(PATTERNS_SKIP, corpus_with_names(n_docs=8), TrainOptions(maxiter=2, structure=TIGHT),
          progress=Progress(stream))
    assert "belief propagation did not converge" not in stream.getvalue()


def test_objective_without_edges_is_the_chains():
    corpus = encoded(attach=new_attach())
    corpus.part = replace(corpus.part, e_i=corpus.part.e_i[:0])
    assert type(SkipChain().objective(corpus, 1.0, 0, VALUES)).__name__ == "Objective"


def test_training_info_and_recorded_options_are_the_models(model):
    corpus = encoded(attach=new_attach())
    assert SkipChain().training_info(corpus, VALUES) == {"skip": model.info["skip"]}
    assert model.info["skip"]["conditions"]
    given = OPTIONS.as_dict()  # the values of VALUES, spelt out independently
    assert model.info["skip"] == {**given, "documents": 8, "edges": corpus.part.n_edges,
                                  "conditions": corpus.part.conditions}
    assert model.info["options"]["skip"] == given
    assert SkipChain().recorded(VALUES) == {"skip": given}
    # the recorded options' order: "skip" sits where max_memory (not recorded) was
    recorded = list(model.info["options"])
    names = [f.name for f in fields(TrainOptions)]
    before = [n for n in names[:names.index(SkipChain.record_after)] if n in recorded][-1]
    assert recorded[recorded.index("skip") - 1] == before


@pytest.mark.parametrize("posterior, marginals", [(False, False), (True, False),
                                                  (False, True), (True, True)])
@pytest.mark.parametrize("values", [{}, {"bp_damping": 0.0, "bp_maxiter": 2}])
def test_decode_is_decode_documents(model, posterior, marginals, values):
    from crfkit.labelling.label import encode
    from crfkit.structures.skipchain.documents import batch_starts, decode_documents

    items = corpus_with_names(n_docs=5, seed=7)
    sequences, starts = split_documents(items)
    data = encode(model, sequences, "x")
    for markers in (starts, None, starts[1:]):
        old = decode_documents(model, sequences, data, batch_starts(len(sequences), markers),
                               posterior=posterior, marginals=marginals,
                               damping=values.get("bp_damping"),
                               maxiter=values.get("bp_maxiter"))
        new = SkipChain().decode(model, data, DecodeRequest(
            posterior=posterior, marginals=marginals, sequences=sequences, starts=markers,
            values=values))
        for a, b in ((old.paths, new.paths), (old.scores, new.scores), (old.log_z, new.log_z)):
            np.testing.assert_array_equal(a, b)
        assert (old.marginals is None) == (new.marginals is None) and old.unsettled == \
            new.unsettled
        if marginals:
            np.testing.assert_array_equal(old.marginals, new.marginals)


def labelled(model, seed: int = 7):
    """The paths and marginals ``model`` gives a fresh corpus of documents."""
    from crfkit.labelling.label import encode

    sequences, starts = split_documents(corpus_with_names(n_docs=5, seed=seed))
    return SkipChain().decode(model, encode(model, sequences, "x"), DecodeRequest(
        marginals=True, sequences=sequences, starts=starts))


def assert_same_labelling(a, b) -> None:
    np.testing.assert_array_equal(a.paths, b.paths)
    np.testing.assert_allclose(a.marginals, b.marginals, rtol=1e-9, atol=1e-12)


def test_save_and_load_round_trip(model):
    from crfkit.model.model import Model

    meta, arrays = loads(model.to_bytes())
    assert meta["type"] == "skipchain" and meta["n_skip"] == model.space.n_skip
    assert model.space.n_skip == len(SKIP) + len(model.info["skip"]["conditions"]) > 1
    back = Model.from_bytes(model.to_bytes())
    assert isinstance(back.space, SkipSpace) and back.labels == model.labels
    for f in fields(SkipSpace):
        np.testing.assert_array_equal(getattr(back.space, f.name),
                                      getattr(model.space, f.name), err_msg=f.name)
    np.testing.assert_array_equal(back.weights, model.weights)
    assert back.info == model.info
    assert_same_labelling(labelled(back), labelled(model))
    assert SkipChain.recognises(meta) and not SkipChain.recognises({"type": "crf"})
    meta_only = {k: v for k, v in meta.items() if k != "n_skip"}
    SkipChain().save(model.space, meta_only, {})
    assert meta_only == meta


@pytest.mark.parametrize("bad", [{"n_skip": 2}, {"n_skip": "1"}, {"n_skip": True},
                                 {"info": "skip-mode-every"}])
def test_a_damaged_skip_model_file_is_one_error_line(model, bad):
    from crfkit.model.model import Model

    meta, arrays = loads(model.to_bytes())
    if "info" in bad:
        bad = {"info": {**meta["info"], "skip": {**meta["info"]["skip"], "mode": "every"}}}
    with pytest.raises(ModelFormatError) as err:
        Model.from_bytes(dumps({**meta, **bad}, arrays), "m.model")
    message = str(err.value)
    assert "\n" not in message and "m.model" in message and "skip" in message


def test_compact_keeps_the_skip_blocks_and_the_labels():
    from crfkit.model.model import compact

    model = train(PATTERNS_SKIP, corpus_with_names(n_docs=8),
                  TrainOptions(maxiter=6, rho1=0.5, structure=VALUES))
    s, W = model.space, model.weights
    small = compact(model)
    assert isinstance(small.space, SkipSpace) and small.space.n_skip == s.n_skip
    assert small.space.n_obs < s.n_obs and small.space.n_weights < s.n_weights
    assert W[s.skip_offset:].any()
    np.testing.assert_array_equal(small.weights[small.space.skip_offset:], W[s.skip_offset:])
    assert small.space.n_weights - small.space.skip_offset == s.n_weights - s.skip_offset
    assert np.count_nonzero(small.weights) == np.count_nonzero(W)
    assert_same_labelling(labelled(small), labelled(model))


def test_describe_dump_and_doc_sep_are_info_and_dumps(model):
    from crfkit.model.describe import features, info
    from crfkit.structures.skipchain.documents import model_skip_options

    counts = SkipChain().describe(model).feature_counts
    line = dict(info(model))["features"]
    assert len(counts) == 1 and line.endswith(f", {counts[0]})")
    obs_text = np.array(model.featurizer.observation_strings(), dtype=object)
    parts = DumpParts([], [], [])
    assert SkipChain().dump_rows(model, obs_text, parts) is None
    old = features(model)
    n = sum(len(p) for p in parts.label)
    assert n == model.space.n_skip * model.space.n_labels ** 2
    assert list(np.concatenate(parts.observation)) == list(old.observation[-n:])
    np.testing.assert_array_equal(np.concatenate(parts.prev), old.prev[-n:])
    np.testing.assert_array_equal(np.concatenate(parts.label), old.label[-n:])
    assert SkipChain().doc_sep(model.info) == model_skip_options(model).doc_sep
    given = {**model.info, "skip": {**model.info["skip"], "doc_sep": "^=+$"}}
    assert SkipChain().doc_sep(given) == "^=+$"


def test_memory_counts_the_skip_weights_and_bp_buffers():
    from crfkit.structures import named
    from crfkit.training.memory import MemoryBudget
    from crfkit.training.train import _check_memory

    corpus = encoded(attach=new_attach())
    budget = MemoryBudget(1 << 50, 9, 2, 0)
    part = SkipChain().memory(corpus, budget.vectors, budget.gradient_rows)
    # the guard adds the part to what the chain would take
    with_skip = _check_memory(corpus, budget, None, SkipChain()).total_bytes
    assert with_skip - _check_memory(corpus, budget, None, named("chain")).total_bytes == \
        part.extra_bytes
    # every further vector holds every skip weight: one L x L block per skip block
    L, skip_weights = len(corpus.labels), corpus.space.n_skip * len(corpus.labels) ** 2
    more = SkipChain().memory(corpus, budget.vectors + 1, budget.gradient_rows)
    assert more.extra_bytes - part.extra_bytes == 8 * skip_weights
    # besides the vectors: at least two messages of L and L x L floats an edge
    vectors = 8 * (budget.vectors + budget.gradient_rows + 1) * skip_weights
    edges = corpus.part.n_edges
    assert edges and part.extra_bytes - vectors >= 8 * edges * 2 * (L + L * L)
    no_edges = replace(corpus.part, e_i=corpus.part.e_i[:0], e_j=corpus.part.e_j[:0])
    corpus.part = no_edges
    assert SkipChain().memory(corpus, budget.vectors, budget.gradient_rows).extra_bytes < \
        part.extra_bytes
    corpus.part = None
    assert SkipChain().memory(corpus, budget.vectors, budget.gradient_rows).extra_bytes == 0


def test_kernels_are_belief_propagations():
    from crfkit.structures.skipchain import belief

    [(_, train_kernels)] = SkipChain().kernels("l-bfgs", "skipchain", False)
    assert train_kernels() == [(belief.skip_loss_block,)]
    for numpy_will_do in (True, False):
        [(_, label_kernels)] = SkipChain().label_kernels(numpy_will_do)
        assert label_kernels() == [(belief.skip_decode_block,)]


def test_label_notes_are_the_unmarked_input_warning():
    from crfkit.structures.base import Structure
    from crfkit.structures.skipchain.documents import unmarked_input_warning

    for sequences, markers, doc_sep in ((5, 0, None), (5, 0, "^=+$"), (5, 2, None),
                                        (1, 0, None)):
        old = unmarked_input_warning(sequences, markers, doc_sep)
        assert SkipChain().label_notes(sequences, markers, doc_sep) == ([old] if old else [])
    assert SkipChain().label_notes(5, 0, None)
    assert Structure.label_notes(SkipChain(), 5, 0, None) == []  # the neutral default


def test_the_registry_reaches_the_skip_chain():
    from crfkit.structures import choose, label_options, of_model, train_options

    assert isinstance(choose(Choice(None, PATTERNS + SKIP, {})), SkipChain)
    assert isinstance(choose(Choice("skipchain", PATTERNS, {})), SkipChain)
    assert isinstance(choose(Choice(None, PATTERNS, {"structure": "skipchain"})), SkipChain)
    assert not isinstance(choose(Choice(None, PATTERNS, {})), SkipChain)
    assert isinstance(of_model({"type": "skipchain"}), SkipChain)
    assert not isinstance(of_model({"type": "crf"}), SkipChain)
    assert set(SkipChain.train_options) <= set(train_options())
    assert set(SkipChain.label_options) <= set(label_options())
