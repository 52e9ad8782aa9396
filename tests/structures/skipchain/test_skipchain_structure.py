"""The skip chain behind the structure interface (crfkit.structures.skipchain.SkipChain):
every method gives what the workflow's own skip-chain code gives, bit for bit."""

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
from crfkit.structures.skipchain import SkipChain
from crfkit.structures.skipchain.graph import SkipOptions
from crfkit.structures.skipchain.space import SkipSpace
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
    return train(PATTERNS_SKIP, corpus_with_names(n_docs=8), TrainOptions(maxiter=6,
                                                                         skip=OPTIONS))


def encoded(model=None, attach=None):
    """A training corpus of the names corpus, its skip part attached by ``attach``."""
    from crfkit.training.corpus import encode_training

    sequences, starts = split_documents(corpus_with_names(n_docs=8))
    corpus = encode_training(PATTERNS_SKIP, sequences, model_type="skipchain", init=model)
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
    from crfkit.labelling.label import LabelOptions, _Decoder
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
            error_of(lambda o=options: _Decoder(model, o, "x"))
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


def test_objective_and_notes_are_the_trainings(monkeypatch):
    from crfkit.training import train as training

    corpus = encoded(attach=new_attach())
    problem = training.Problem("skipchain", corpus, TrainOptions(skip=OPTIONS, maxiter=2))
    w = np.random.default_rng(1).normal(0, 0.3, corpus.space.n_weights)
    g_old, g_new = np.empty_like(w), np.empty_like(w)
    new = SkipChain().objective(corpus, problem.rho2, 0, VALUES)
    assert training.make_objective(problem)(w, g_old) == new(w, g_new)
    np.testing.assert_array_equal(g_old, g_new)
    # BP that does not converge: the same note
    tight = {**VALUES, "bp_maxiter": 1, "bp_tol": 0.0}
    objective = SkipChain().objective(corpus, problem.rho2, 0, tight)
    monkeypatch.setattr(training, "make_objective", lambda p: objective)
    training._run_lbfgs(problem, lambda info: None)
    assert problem.notes and problem.notes == SkipChain().notes(objective)
    assert SkipChain().notes(object()) == []


def test_objective_without_edges_is_the_chains():
    corpus = encoded(attach=new_attach())
    corpus.part = replace(corpus.part, e_i=corpus.part.e_i[:0])
    assert type(SkipChain().objective(corpus, 1.0, 0, VALUES)).__name__ == "Objective"


def test_training_info_and_recorded_options_are_the_models(model):
    corpus = encoded(attach=new_attach())
    assert SkipChain().training_info(corpus, VALUES) == {"skip": model.info["skip"]}
    assert model.info["skip"]["conditions"]
    assert SkipChain().recorded(VALUES) == {"skip": model.info["options"]["skip"]}
    # the recorded options' order: "skip" sat right after max_memory (not recorded)
    names = [f.name for f in fields(TrainOptions)]
    assert names.index("skip") == names.index(SkipChain.record_after) + 1


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


def test_save_and_load_are_the_model_files(model):
    from crfkit.model.model import Model, _Checker

    meta, arrays = loads(model.to_bytes())
    mine = {k: v for k, v in meta.items() if k != "n_skip"}
    SkipChain().save(model.space, mine, {})
    assert list(mine) == list(meta) and mine == meta
    check = _Checker("m.model", meta, arrays)
    space = SkipChain().load(check, replace(model.space, n_skip=0), model.patterns, "skipchain",
                             meta["info"])
    assert_same_space(space, Model.from_bytes(model.to_bytes()).space)
    assert space.n_weights == len(model.weights)
    assert SkipChain.recognises(meta) and not SkipChain.recognises({"type": "crf"})
    for bad in ({**meta, "n_skip": 2}, {**meta, "n_skip": "1"}, {**meta, "n_skip": True},
                {**meta, "info": {**meta["info"], "skip": {"mode": "every"}}}):
        with pytest.raises(ModelFormatError) as old:
            Model.from_bytes(dumps(bad, arrays), "m.model")
        with pytest.raises(ModelFormatError) as new:
            SkipChain().load(_Checker("m.model", bad, arrays), model.space, model.patterns,
                             "skipchain", bad["info"])
        assert str(new.value) == str(old.value)


def test_compact_is_the_models():
    from crfkit.model.model import compact

    model = train(PATTERNS_SKIP, corpus_with_names(n_docs=8),
                  TrainOptions(maxiter=6, rho1=0.5, skip=OPTIONS))
    old = compact(model)
    s, W = model.space, model.weights
    space, weights, keep_obs = SkipChain().compact(s, W, W[:s.n_u] != 0,
                                                   W[s.n_u:s.trans_offset] != 0)
    assert_same_space(space, old.space)
    assert keep_obs.sum() == old.space.n_obs < s.n_obs
    np.testing.assert_array_equal(weights, old.weights)


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


def test_memory_is_what_the_guard_adds():
    from crfkit.training.memory import MemoryBudget
    from crfkit.training.train import _check_memory

    corpus = encoded(attach=new_attach())
    budget = MemoryBudget(1 << 50, 9, 2, 0)
    with_skip = _check_memory(corpus, budget, None).total_bytes
    part = SkipChain().memory(corpus, budget.vectors, budget.gradient_rows)
    corpus.graph = None
    assert with_skip - _check_memory(corpus, budget, None).total_bytes == part.extra_bytes > 0


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
