"""The second order behind the structure interface (crfkit.structures.order2.Order2).

Each method is checked against the code path it replaces, bit for bit: the corpus
encoder's second-order space and warm-start merge, the training objective and SGD epochs,
the decoder dispatch, the model file's order-2 part, compaction, info, dump, the memory
estimate, the compile notice's kernel groups and the option checks.
"""

from __future__ import annotations

from dataclasses import fields

import numpy as np
import pytest

from crfkit.config import NORM_GLOBAL
from crfkit.errors import ModelFormatError, UsageError
from crfkit.features.patterns import parse_patterns
from crfkit.io import fileformat
from crfkit.io.reader import Sequence
from crfkit.labelling.label import encode
from crfkit.model import describe
from crfkit.model.model import Model, ModelChecker, compact
from crfkit.space import FeatureSpace
from crfkit.structures import Choice, of_model
from crfkit.structures.base import DecodeRequest, DumpParts, Encoding, Setting
from crfkit.structures.order2 import ORDER, Order2
from crfkit.structures.order2.pair_decoder import decode_any
from crfkit.structures.order2.pair_space import first_order_parts
from crfkit.training import corpus as corpus_module
from crfkit.training import jitcache, memory
from crfkit.training.train import Problem, TrainOptions, make_objective, train
from tests.structures.order2.reference import PATTERNS_O2, encode2, options2

# the trigram patterns of both kinds: a column and a token (%X) one
PATTERNS_O2 = PATTERNS_O2.replace("t:s0=%x[0,1]\n", "t:s0=%x[0,1]\nt:w0=%X[0,0]\n")


@pytest.fixture(scope="module")
def model2(corpus) -> Model:
    return train(parse_patterns(PATTERNS_O2), corpus[:60], options2(maxiter=15,
                                                                        rho1=0.3))


def space_equal(a, b) -> None:
    assert type(a) is type(b)
    for f in fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, np.ndarray):
            assert x.dtype == y.dtype and np.array_equal(x, y), f.name
        else:
            assert x == y, f.name


def recording(monkeypatch, name: str) -> list:
    """Wrap corpus_module.<name>, recording (args, result) of each call."""
    calls = []
    old = getattr(corpus_module, name)

    def wrapper(*args):
        result = old(*args)
        calls.append((args, result))
        return result

    monkeypatch.setattr(corpus_module, name, wrapper)
    return calls


# -- encoding ------------------------------------------------------------------------------------
@pytest.mark.parametrize("all_features", [False, True])
def test_encode_space_is_the_corpus_encoders_second_order(monkeypatch, corpus, all_features):
    calls = recording(monkeypatch, "_second_order")
    encode2(parse_patterns(PATTERNS_O2), corpus[:20], all_features=all_features)
    (space, empirical, featurizer, obs, index, y, dense), (old_space, old_emp) = calls[0]
    assert dense == all_features
    new_space, new_emp = Order2().encode_space(
        space, empirical, Encoding(featurizer, obs, index, y, all_features))
    space_equal(new_space, old_space)
    assert np.array_equal(new_emp, old_emp)


def test_merge_init_is_the_corpus_encoders_warm_start(monkeypatch, model2, corpus):
    calls = recording(monkeypatch, "_merge_space2")
    extra = [Sequence(rows=[r[:-1] + ["NEW"] for r in corpus[0].rows],
                      lines=corpus[0].lines)]
    encode2(model2.patterns, corpus[30:] + extra, init=model2)
    args, (old_space, old_emp, old_x0) = calls[0]
    new_space, new_emp, new_x0 = Order2().merge_init(*args)
    space_equal(new_space, old_space)
    assert np.array_equal(new_emp, old_emp) and np.array_equal(new_x0, old_x0)


def test_dense_costs_add_the_trigram_part_of_all_features(model2):
    f = model2.featurizer
    listed = [f.patterns[p] for p in f.listed]
    L = model2.space.n_labels
    counts = np.bincount(f.vocab.pattern, minlength=len(f.patterns))[f.listed]
    uni, bi = np.ones(len(listed), dtype=bool), np.zeros(len(listed), dtype=bool)
    old = memory.dense_costs(listed, counts, uni, bi, L, corpus_module._trigram_flags(listed))
    first = memory.dense_costs(listed, counts, uni, bi, L)
    part = Order2().dense_costs(listed, L)
    assert [c.features for c in old] == [c.features + n * extra for c, n, extra in
                                         zip(first, counts, part.per_pattern, strict=True)]
    assert any(part.per_pattern) and [c.features for c in part.costs] == [L ** 3]


def test_patterns_keep_the_trigram_lines():
    patterns = parse_patterns(PATTERNS_O2)
    assert Order2().patterns(patterns, None) == patterns


# -- optimising ----------------------------------------------------------------------------------
def test_objective_is_the_trainings_second_order_objective(corpus):
    c = encode2(parse_patterns(PATTERNS_O2), corpus[:30])
    old = make_objective(Problem("crf", c, options2(rho2=0.5)))
    new = Order2().objective(c, 0.5, NORM_GLOBAL, {})
    w = np.random.default_rng(0).normal(scale=0.3, size=c.space.n_weights)
    g_old, g_new = np.empty_like(w), np.empty_like(w)
    assert old(w, g_old) == new(w, g_new)
    assert np.array_equal(g_old, g_new)
    assert (old.token_errors, old.sequence_errors) == (new.token_errors, new.sequence_errors)


def test_sgd_epochs_are_the_second_order_epochs(corpus):
    from crfkit.structures.order2.pair_epochs import SgdEpochs2

    c = encode2(parse_patterns(PATTERNS_O2), corpus[:20])
    old, new = SgdEpochs2(c.space, c.data), Order2().epochs("sgd", c)
    assert type(new) is SgdEpochs2
    order = np.arange(c.data.n_seqs)
    runs = []
    for epochs in (old, new):
        W, q, state = np.zeros(c.space.n_weights), np.zeros(c.space.n_weights), np.zeros(1)
        runs.append((epochs(W, order, 0, 0.1, 1.0, 0.01, q, state), W, q, state))
    assert runs[0][0] == runs[1][0]
    for a, b in zip(runs[0][1:], runs[1][1:], strict=True):
        assert np.array_equal(a, b)
    with pytest.raises(ValueError):
        Order2().epochs("perceptron", c)


def test_heading_is_the_progress_headers():
    from crfkit.training.train import structure_name

    assert Order2().heading("crf") == structure_name("crf", 2)


def test_recorded_options():
    assert Order2().recorded({"order": 2}) == {"order": 2}
    assert Order2.record_after == "model_type"


# -- decoding ------------------------------------------------------------------------------------
@pytest.mark.parametrize("asked", [
    {}, {"nbest": 3}, {"log_z": True, "marginals": True}, {"posterior": True, "log_z": True},
    {"masks": True}, {"masks": True, "nbest": 2, "marginals": True}])
def test_decode_is_decode_any(model2, corpus, asked):
    asked = dict(asked)
    data = encode(model2, corpus[40:])
    L = model2.space.n_labels
    if asked.pop("masks", False):
        rng = np.random.default_rng(1)
        asked["token_ok"] = rng.random((data.n_tokens, L)) < 0.95
        asked["trans_ok"] = rng.random((L, L)) < 0.9
    old = decode_any(model2, data, **asked)
    new = Order2().decode(model2, data, DecodeRequest(kernels=False, **asked))
    for name in ("paths", "scores", "log_z"):
        assert np.array_equal(getattr(old, name), getattr(new, name), equal_nan=True), name
    if old.marginals is None:
        assert new.marginals is None
        return
    # a sequence no path satisfies has no marginals (log Z nan: the caller refuses it)
    possible = np.repeat(np.isfinite(old.log_z), data.lengths)
    assert possible.any()
    assert np.array_equal(old.marginals[possible], new.marginals[possible])


# -- the model file ------------------------------------------------------------------------------
def first_order_file(model: Model) -> tuple[dict, dict]:
    meta, arrays = model._arrays_and_meta()
    for key in ("pairs", "tri", "g_ptr", "g_tri"):
        del arrays[key]
    del meta["order"], meta["has_tri"]
    return meta, arrays


def test_save_appends_what_the_model_file_held(model2):
    meta, arrays = model2._arrays_and_meta()
    new_meta, new_arrays = first_order_file(model2)
    Order2().save(model2.space, new_meta, new_arrays)
    assert fileformat.dumps(new_meta, new_arrays) == fileformat.dumps(meta, arrays)
    assert list(new_meta) == list(meta)


def test_load_is_the_model_checkers_second_order(model2):
    meta, arrays = fileformat.loads(model2.to_bytes())
    base = FeatureSpace(**first_order_parts(model2.space))
    old = ModelChecker("m", meta, arrays).order2(meta, base, "crf", model2.patterns)
    new = Order2().load(ModelChecker("m", meta, arrays), base, model2.patterns, "crf",
                        model2.info)
    space_equal(new, old)
    assert of_model(meta).name == "order2" and of_model({}).name == "chain"


@pytest.mark.parametrize("damage", ["tri_index", "order3", "memm", "no_owner"])
def test_load_refuses_what_the_model_checker_refused(model2, damage):
    meta, arrays = fileformat.loads(model2.to_bytes())
    meta, arrays, patterns, model_type = dict(meta), dict(arrays), model2.patterns, "crf"
    if damage == "tri_index":
        arrays["g_tri"] = arrays["g_tri"].copy()
        arrays["g_tri"][0] = len(arrays["tri"])
    elif damage == "order3":
        meta["order"] = 3
    elif damage == "memm":
        model_type = "memm"
    else:
        patterns = [p for p in patterns if not p.is_constant]
    base = FeatureSpace(**first_order_parts(model2.space))
    with pytest.raises(ModelFormatError) as old:
        ModelChecker("m", meta, arrays).order2(meta, base, model_type, patterns)
    with pytest.raises(ModelFormatError) as new:
        Order2().load(ModelChecker("m", meta, arrays), base, patterns, model_type, {})
    assert str(new.value) == str(old.value)


def test_compact_is_the_models_compaction(model2):
    old = compact(model2)
    s, W = model2.space, model2.weights
    assert (W[s.g_offset:s.tri_offset] == 0).any()  # rho1: something to drop
    space, weights, keep_obs = Order2().compact(s, W, W[:s.n_u] != 0,
                                                W[s.n_u:s.trans_offset] != 0)
    space_equal(space, old.space)
    assert np.array_equal(weights, old.weights) and keep_obs.sum() == old.space.n_obs


# -- describing, sizing, compiling ---------------------------------------------------------------
def test_describe_gives_infos_order_lines(model2):
    lines = describe.info(model2)
    new = Order2().describe(model2)
    assert new.lines == lines[4:6] and new.feature_counts == []


def test_dump_rows_are_describes_trigram_rows(model2):
    s = model2.space
    obs_text = np.array(model2.featurizer.observation_strings(), dtype=object)
    chain = [np.arange(3), np.arange(5)]  # the chain's parts: only their length matters

    def parts() -> DumpParts:
        return DumpParts([c.copy() for c in chain], [c.copy() for c in chain],
                         [c.copy() for c in chain])

    old, new = parts(), parts()
    prev2_old = describe._trigram_parts(model2, obs_text, old.observation, old.prev, old.label)
    prev2_new = Order2().dump_rows(model2, obs_text, new)
    assert np.array_equal(prev2_old, prev2_new) and s.has_tri
    for a, b in ((old.observation, new.observation), (old.prev, new.prev),
                 (old.label, new.label)):
        assert len(a) == len(b) and all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))


def test_memory_part_is_the_estimates_second_order_part(corpus):
    c = encode2(parse_patterns(PATTERNS_O2), corpus[:30])
    f = c.featurizer
    old = memory.seen_costs(f.patterns, f.listed, f.vocab.pattern, c.space)
    first = memory.seen_costs(f.patterns, f.listed, f.vocab.pattern,
                              FeatureSpace(**first_order_parts(c.space)))
    part = Order2().memory(c, 3, 1)
    extra = np.bincount(f.vocab.pattern, weights=part.per_observation,
                        minlength=len(f.patterns))
    assert [o.features for o in old] == [a.features + int(extra[i])
                                         for a, i in zip(first, f.listed, strict=True)]
    assert [(p.pattern, p.features) for p in part.costs] == [(f.patterns[-1], len(c.space.tri))]


@pytest.mark.parametrize("algo", ["l-bfgs", "sgd-l1"])
@pytest.mark.parametrize("devel", [False, True])
def test_kernel_groups_are_the_compile_notices(algo, devel):
    old = list(jitcache._groups(algo, "crf", devel, 2))[1:]  # after the counting kernels
    new = list(Order2().kernels(algo, "crf", devel))
    assert [s for s, _ in new] == [s for s, _ in old]
    assert [k() for _, k in new] == [k() for _, k in old]
    label = list(Order2().label_kernels(True))
    old_label = list(jitcache._label_groups(2, False))
    assert [(s, k()) for s, k in label] == [(s, k()) for s, k in old_label]


# -- choosing and refusing -----------------------------------------------------------------------
def test_claims_recognises_and_continues():
    assert Order2.claims(Choice(None, None, {"order": 2}))
    assert Order2.claims(Choice(None, None, {"structure": "order2"}))
    assert not Order2.claims(Choice(None, None, {"order": 1}))
    assert not Order2.claims(Choice(None, None, {}))
    assert Order2.recognises({"order": 2}) and not Order2.recognises({})
    Order2().continue_from({"order": None})
    with pytest.raises(UsageError, match="the initial model has order 2: it cannot continue "
                                         "with --order 1"):
        Order2().continue_from({"order": 1})


@pytest.mark.parametrize("given", [
    {"algo": "l2sgd"}, {"algo": "ap"}, {"model_type": "memm"}, {"model_type": "maxent"},
    {"likely": 0.5}, {}, {"algo": "sgd-l1"}])
def test_refuse_says_what_train_options_said(given):
    options = options2(**given)
    try:
        options.validate()
        old = None
    except UsageError as err:
        old = str(err)
    setting = Setting("train", options.algo, options.model_type or "crf", {"order": 2},
                      likely=options.likely is not None)
    try:
        Order2().refuse(setting)
        new = None
    except UsageError as err:
        new = str(err)
    assert new == old


def test_refuse_tune_and_dask_and_a_contradiction():
    with pytest.raises(UsageError, match="^--order 2 is not available with --dask$"):
        Order2().refuse(Setting("dask", "l-bfgs", "crf", {"order": 2}))
    with pytest.raises(UsageError, match="^--likely scores likely features of first-order "):
        Order2().refuse(Setting("tune", "l-bfgs", "crf", {"order": 2}, likely=True))
    Order2().refuse(Setting("tune", "l-bfgs", "crf", {"order": 2}, devel=True))
    with pytest.raises(UsageError, match="--order 1 contradicts --structure order2"):
        Order2().refuse(Setting("train", "l-bfgs", "crf", {"order": 1, "structure": "order2"}))


def test_order_option_checks_its_value():
    assert ORDER.check(2) is None and ORDER.check(None) is None
    with pytest.raises(UsageError) as old:
        TrainOptions(order=3).validate()
    assert ORDER.check(3) == str(old.value)
