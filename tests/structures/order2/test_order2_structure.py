"""The second order behind the structure interface (crfkit.structures.order2.Order2).

Each method is checked against brute force or an invariant of what it builds: the
encoder's trigram states and gold counts are those of the corpus, the warm start keeps
every old weight at its feature's new place, --all-features' estimate counts what it
builds, the model file round-trips and refuses damage in one line, dump rows name the
features that exist, the memory part counts them, and the option checks refuse in one
line what a second order cannot train.
"""

from __future__ import annotations

import io
from collections import Counter
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
from crfkit.progress import Progress
from crfkit.space import FeatureSpace
from crfkit.structures import named, of_model
from crfkit.structures.base import Choice, DecodeRequest, DumpParts, Setting
from crfkit.structures.order2.options import ORDER
from crfkit.structures.order2.pair_decoder import decode_any
from crfkit.structures.order2.pair_space import first_order_parts
from crfkit.structures.order2.structure import Order2
from crfkit.training import jitcache, memory
from crfkit.training.train import TrainOptions, train
from tests import naive
from tests.structures.order2.reference import (
    PATTERNS_O2,
    encode2,
    options2,
    reference_lattice,
)

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


def trigram_code(labels: np.ndarray, t: int, L: int) -> int:
    return int((labels[t - 2] * L + labels[t - 1]) * L + labels[t])


def gold_trigrams(c) -> tuple[Counter, Counter, set]:
    """By plain loops over the encoded corpus: label trigram counts, (observation of a t
    pattern, trigram) counts and the label pairs, each at the positions that have them."""
    d, L, f = c.data, c.space.n_labels, c.featurizer
    trigram = [p.has_trigram and not p.is_constant for p in f.patterns]
    tri, obs_tri, pairs = Counter(), Counter(), set()
    for s in range(d.n_seqs):
        for t in range(d.seq_ptr[s], d.seq_ptr[s + 1]):
            position = t - d.seq_ptr[s]
            if position >= 1:
                pairs.add(int(d.labels[t - 1] * L + d.labels[t]))
            if position < 2:
                continue
            code = trigram_code(d.labels, t, L)
            tri[code] += 1
            for o in d.tok_obs[d.tok_ptr[t]:d.tok_ptr[t + 1]]:
                if trigram[f.vocab.pattern[o]]:
                    obs_tri[int(o), code] += 1
    return tri, obs_tri, pairs


def trigram_features(space) -> dict[tuple[int, int], int]:
    """(observation, label trigram code) -> index of its observation-trigram weight."""
    return {(o, int(space.tri[space.g_tri[k]])): space.g_offset + k
            for o in range(space.n_obs) for k in range(space.g_ptr[o], space.g_ptr[o + 1])}


# -- encoding ------------------------------------------------------------------------------------
@pytest.mark.parametrize("all_features", [False, True])
def test_encode_space_holds_the_corpus_trigrams(corpus, all_features):
    c = encode2(parse_patterns(PATTERNS_O2), corpus[:20], all_features=all_features)
    s, L = c.space, c.space.n_labels
    tri, obs_tri, pairs = gold_trigrams(c)
    assert tri and obs_tri
    if all_features:  # every pair and trigram a state, every trigram for each t observation
        assert list(s.pairs) == list(range(L * L)) and list(s.tri) == list(range(L ** 3))
        trigram = [p.has_trigram and not p.is_constant for p in c.featurizer.patterns]
        wanted = {(o, code) for o in range(s.n_obs) if trigram[c.featurizer.vocab.pattern[o]]
                  for code in range(L ** 3)}
    else:  # exactly the label pairs and trigrams seen, the observation trigrams seen
        assert list(s.pairs) == sorted(pairs) and list(s.tri) == sorted(tri)
        wanted = set(obs_tri)
    features = trigram_features(s)
    assert set(features) == wanted and len(features) == s.n_g
    assert all(c.empirical[k] == obs_tri.get(key, 0) for key, k in features.items())
    assert s.has_tri
    assert [c.empirical[s.tri_offset + k] for k in range(len(s.tri))] == \
        [tri.get(int(code), 0) for code in s.tri]


def keyed_weights(space, weights: np.ndarray, featurizer, labels: list[str]) -> dict:
    """Every feature of a second-order space, named by its observation's pattern and text
    and its labels' names -> its weight (names survive a warm start's renumbering)."""
    text = featurizer.observation_strings()
    obs = [(int(featurizer.vocab.pattern[o]), text[o]) for o in range(space.n_obs)]
    L = space.n_labels

    def names(code: int) -> tuple[str, str, str]:
        return labels[code // (L * L)], labels[(code // L) % L], labels[code % L]

    out = {}
    for o in range(space.n_obs):
        for k in range(space.u_ptr[o], space.u_ptr[o + 1]):
            out["u", obs[o], labels[space.u_lab[k]]] = weights[k]
        for k in range(space.b_ptr[o], space.b_ptr[o + 1]):
            out["b", obs[o], labels[space.b_prev[k]], labels[space.b_cur[k]]] = \
                weights[space.n_u + k]
    if space.has_trans:
        for i in range(L * L):
            out["trans", labels[i // L], labels[i % L]] = weights[space.trans_offset + i]
    for (o, code), k in trigram_features(space).items():
        out["g", obs[o], names(code)] = weights[k]
    if space.has_tri:
        for k, code in enumerate(space.tri):
            out["tri", names(int(code))] = weights[space.tri_offset + k]
    return out


def test_warm_start_keeps_every_old_weight_at_its_features_new_place(model2, corpus):
    extra = [Sequence(rows=[r[:-1] + ["NEW"] for r in corpus[0].rows],
                      lines=corpus[0].lines)]
    c = encode2(model2.patterns, corpus[30:] + extra, init=model2)
    assert "NEW" in c.labels
    old = keyed_weights(model2.space, model2.weights, model2.featurizer, model2.labels)
    new = keyed_weights(c.space, c.x0, c.featurizer, c.labels)
    assert len(old) == model2.space.n_weights and len(new) == c.space.n_weights
    assert any(key[0] == "g" for key in old) and any(key[0] == "tri" for key in old)
    assert {key: new.get(key) for key in old} == old  # every old feature, its weight kept
    assert all(new[key] == 0.0 for key in new.keys() - old.keys())
    assert any("NEW" in str(key) for key in new.keys() - old.keys())
    # the new corpus' trigrams have states, with their gold counts
    tri, obs_tri, _ = gold_trigrams(c)
    features = trigram_features(c.space)
    assert set(obs_tri) <= set(features) and set(tri) <= set(c.space.tri.tolist())
    assert all(c.empirical[features[key]] == n for key, n in obs_tri.items())


def test_dense_costs_count_what_all_features_builds(corpus):
    c = encode2(parse_patterns(PATTERNS_O2), corpus[:20], all_features=True)
    f, s = c.featurizer, c.space
    listed = [f.patterns[p] for p in f.listed]
    part = Order2().dense_costs(listed, s.n_labels)
    observations = np.bincount(f.vocab.pattern, minlength=len(f.patterns))[f.listed]
    built = np.bincount(f.vocab.pattern, weights=np.diff(s.g_ptr),
                        minlength=len(f.patterns))[f.listed]
    assert built.any()
    assert list(observations * part.per_pattern) == list(built.astype(np.int64))
    assert [c.features for c in part.costs] == [len(s.tri) if s.has_tri else 0]


def test_patterns_keep_the_trigram_lines():
    patterns = parse_patterns(PATTERNS_O2)
    assert Order2().patterns(patterns, None) == patterns


# -- optimising ----------------------------------------------------------------------------------


def test_objective_is_the_enumerated_log_likelihood(corpus):
    short = [Sequence(rows=s.rows[:4], lines=s.lines[:4]) for s in corpus[:8]]
    c = encode2(parse_patterns(PATTERNS_O2), short)
    assert c.space.n_labels ** 4 <= 10_000 and c.space.n_g and c.space.has_tri
    objective = Order2().objective(c, 0.5, NORM_GLOBAL, {})
    W = np.random.default_rng(0).normal(scale=0.3, size=c.space.n_weights)
    g = np.empty_like(W)
    log_z = sum(naive.order2_summary(*reference_lattice(c.space, W, c.data, s))[0]
                for s in range(c.data.n_seqs))
    assert objective(W, g) == pytest.approx(log_z - W @ c.empirical + 0.25 * W @ W, rel=1e-10)
    i = int(np.argmax(np.abs(g)))
    step = np.zeros_like(W)
    step[i] = 1e-5
    scratch = np.empty_like(W)
    slope = (objective(W + step, scratch) - objective(W - step, scratch)) / 2e-5
    assert slope == pytest.approx(g[i], rel=1e-5, abs=1e-7)


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




def test_heading_names_the_order_in_the_trainings_header(corpus):
    out = io.StringIO()
    train(parse_patterns(PATTERNS_O2), corpus[:10], options2(maxiter=1),
          progress=Progress(out))
    header = next(line for line in out.getvalue().splitlines() if line.startswith("* "))
    assert header.startswith(f"* {Order2().heading('crf')}, l-bfgs: ")
    assert Order2().heading("crf") != named("chain").heading("crf")
    assert "crf" in Order2().heading("crf") and "2" in Order2().heading("crf")


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


def test_save_load_round_trip_gives_the_same_space(model2):
    loaded = Model.from_bytes(model2.to_bytes())
    space_equal(loaded.space, model2.space)
    assert np.array_equal(loaded.weights, model2.weights)
    meta, arrays = fileformat.loads(model2.to_bytes())
    base = FeatureSpace(**first_order_parts(model2.space))
    new = Order2().load(ModelChecker("m", meta, arrays), base, model2.patterns, "crf",
                        model2.info)
    space_equal(new, model2.space)
    assert of_model(meta).name == "order2" and of_model({}).name == "chain"


def damaged(model2: Model, damage: str) -> tuple[dict, dict, list, str]:
    meta, arrays = fileformat.loads(model2.to_bytes())
    meta, arrays, patterns, model_type = dict(meta), dict(arrays), model2.patterns, "crf"
    if damage == "tri_index":
        arrays["g_tri"] = arrays["g_tri"].copy()
        arrays["g_tri"][0] = len(arrays["tri"])
    elif damage == "order3":
        meta["order"] = 3
    elif damage == "memm":
        model_type = meta["type"] = "memm"
    else:
        patterns = [p for p in patterns if not p.is_constant]
        assert patterns[:len(patterns)] == model2.patterns[:len(patterns)]  # "*" is last
        meta["patterns"] = meta["patterns"][:len(patterns)]
    return meta, arrays, patterns, model_type


@pytest.mark.parametrize(("damage", "named"), [
    ("tri_index", "second-order space"), ("order3", "order 3"), ("memm", "memm"),
    ("no_owner", "constant pattern")])
def test_load_refuses_each_damaged_file_in_one_line(model2, damage, named):
    meta, arrays, patterns, model_type = damaged(model2, damage)
    base = FeatureSpace(**first_order_parts(model2.space))
    with pytest.raises(ModelFormatError, match=named) as direct:
        Order2().load(ModelChecker("m", meta, arrays), base, patterns, model_type, {})
    with pytest.raises(ModelFormatError) as through_file:
        Model.from_bytes(fileformat.dumps(meta, arrays))
    for err in (direct, through_file):
        assert "\n" not in str(err.value)


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


def test_dump_rows_read_prev2_prev_label_of_features_that_exist(model2):
    s, L = model2.space, model2.space.n_labels
    obs_text = np.array(model2.featurizer.observation_strings(), dtype=object)
    chain = [np.arange(3), np.arange(5)]  # the chain's parts: only their length matters
    parts = DumpParts([c.copy() for c in chain], [c.copy() for c in chain],
                      [c.copy() for c in chain])
    prev2 = Order2().dump_rows(model2, obs_text, parts)
    assert len(parts.label) > len(chain) and s.has_tri and s.n_g
    for got, wanted in ((parts.observation, chain), (parts.prev, chain), (parts.label, chain)):
        assert all(np.array_equal(a, b)  # the chain's parts untouched
                   for a, b in zip(got[:2], wanted, strict=True))
    rows = list(zip(np.concatenate(parts.observation[2:]).tolist(), prev2[8:].tolist(),
                    np.concatenate(parts.prev[2:]).tolist(),
                    np.concatenate(parts.label[2:]).tolist(), strict=True))
    assert list(prev2[:8]) == [-1] * 8 and len(prev2) == 8 + len(rows)
    owner = next(p for p in model2.patterns if p.is_constant).text
    wanted = [(obs_text[o], code // (L * L), (code // L) % L, code % L)
              for (o, code) in trigram_features(s)]
    wanted += [(owner, code // (L * L), (code // L) % L, code % L) for code in s.tri.tolist()]
    assert rows == wanted


def test_memory_part_counts_the_trigram_features(corpus):
    c = encode2(parse_patterns(PATTERNS_O2), corpus[:30])
    f, s = c.featurizer, c.space
    part = Order2().memory(c, 3, 1)
    per_obs = Counter(o for o, _ in trigram_features(s))
    assert list(part.per_observation) == [per_obs.get(o, 0) for o in range(s.n_obs)]
    owner = next(p for p in f.patterns if p.is_constant)
    assert [(p.pattern, p.features) for p in part.costs] == [(owner, len(s.tri))]
    # with the chain's, every feature but the transitions is counted once
    seen = memory.seen_costs(f.patterns, f.listed, f.vocab.pattern, s, part.per_observation)
    counted = sum(p.features for p in seen) + sum(p.features for p in part.costs)
    assert counted == s.n_weights - (s.g_offset - s.trans_offset)


def dispatchers(groups) -> list[str]:
    return [f"{d.py_func.__module__}.{d.__name__}" for _, kernels in groups
            for alternatives in kernels() for d in alternatives]


@pytest.mark.parametrize("algo", ["l-bfgs", "sgd-l1"])
@pytest.mark.parametrize("devel", [False, True])
def test_kernel_groups_name_the_order2_kernels(algo, devel):
    order2 = "crfkit.structures.order2."
    names = dispatchers(Order2().kernels(algo, "crf", devel))
    trains = {"l-bfgs": order2 + "pair_lattice.loss_block2",
              "sgd-l1": order2 + "pair_epochs.sgd_epoch2"}
    assert trains[algo] in names
    assert [n for n in trains.values() if n in names] == [trains[algo]]
    assert (order2 + "pair_decoder.decode_block2" in names) == devel
    # the training's groups: the counting kernels, then these
    assert dispatchers(jitcache._groups(algo, "crf", devel, Order2()))[2:] == names
    assert dispatchers(Order2().label_kernels(True)) == [order2 + "pair_decoder.decode_block2"]


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


@pytest.mark.parametrize(("given", "named"), [
    ({"algo": "l2sgd"}, "-a l2sgd"), ({"algo": "ap"}, "-a ap"),
    ({"model_type": "memm"}, "-T/--type"), ({"model_type": "maxent"}, "-T/--type"),
    ({"likely": 0.5}, "--likely-features")])
def test_refuse_gives_one_line_naming_the_option(corpus, given, named):
    options = options2(**given)
    with pytest.raises(UsageError) as direct:
        Order2().refuse(Setting("train", options.algo, options.model_type or "crf",
                                {"order": 2}, likely=options.likely is not None))
    with pytest.raises(UsageError) as trained:  # the public path refuses it before encoding
        train(parse_patterns(PATTERNS_O2), corpus[:5], options)
    for err in (direct, trained):
        assert named in str(err.value) and "\n" not in str(err.value)
        assert "order 2" in str(err.value) or "second-order" in str(err.value)


@pytest.mark.parametrize("given", [{}, {"algo": "sgd-l1"}])
def test_refuse_lets_l_bfgs_and_sgd_l1_through(given):
    options = options2(**given)
    options.validate()
    Order2().refuse(Setting("train", options.algo, "crf", {"order": 2}))


def test_refuse_tune_and_dask_and_a_contradiction():
    with pytest.raises(UsageError, match="^--order 2 is not available with --dask$"):
        Order2().refuse(Setting("dask", "l-bfgs", "crf", {"order": 2}))
    with pytest.raises(UsageError, match="^--likely scores likely features of first-order "):
        Order2().refuse(Setting("tune", "l-bfgs", "crf", {"order": 2}, likely=True))
    Order2().refuse(Setting("tune", "l-bfgs", "crf", {"order": 2}, devel=True))
    with pytest.raises(UsageError, match="--order 1 contradicts --structure order2"):
        Order2().refuse(Setting("train", "l-bfgs", "crf", {"order": 1, "structure": "order2"}))


def test_order_option_checks_its_value():
    assert ORDER.check(2) is None and ORDER.check(None) is None and ORDER.check(1) is None
    message = ORDER.check(3)
    assert "--order" in message and "3" in message and "\n" not in message
    with pytest.raises(UsageError) as err:  # train's options run the check
        TrainOptions(structure={"order": 3}).validate()
    assert str(err.value) == message
