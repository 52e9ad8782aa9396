"""crfkit.dask: the same vocabulary, objective, model and labels as one process.

The vocabulary merge is checked without a cluster, on shards of every size;
the rest runs on one LocalCluster of two worker processes (loopback only),
started once for the module. Shards are made small (a few kilobytes), so
that a corpus has many of them and the parts (runs of blocks) straddle
shard boundaries.
"""

from __future__ import annotations

import io
import os
import signal

import numpy as np
import pytest

from crfkit.dask.shard_vocab import count_shard, merge_counts, merge_space, shard_pairs
from crfkit.dask.shards import Shard, plan_shards, read_shard
from crfkit.errors import InputError
from crfkit.features.intern import renumber
from crfkit.features.patterns import read_patterns
from crfkit.io.reader import read_items, read_sequences
from crfkit.kernels.blocks import set_thread_count
from crfkit.kernels.objective import Objective
from crfkit.labelling.label import LabelOptions, label_stream
from crfkit.training.corpus import encode_training
from crfkit.training.train import TrainOptions, train
from tests.conftest import ADDRESS_PATTERNS

distributed = pytest.importorskip("distributed")

SMALL = 3000  # bytes per shard: the 200-sequence sample makes about a dozen


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=":0", host="127.0.0.1")
    with distributed.Client(cluster) as c:
        yield c
    cluster.close()


def _skip_chain_ready() -> bool:
    from crfkit.features.patterns import parse_patterns
    from crfkit.structures import named
    from crfkit.structures.base import Choice

    return named("skipchain").claims(Choice(None, parse_patterns("U:%x[0,0]\ns:%x[0,0]\n"), {}))


needs_skip_chain = pytest.mark.skipif(
    not _skip_chain_ready(),
    reason="the skip chain does not implement the structure interface in this tree")


def single(patterns, path, **options):
    set_thread_count(1)
    return train(patterns, read_sequences(path, min_columns=2),
                 TrainOptions(nthread=1, **options))


@pytest.mark.parametrize("shard_bytes", [700, 5000, 1 << 20])
@pytest.mark.parametrize("cutoff", [1, 2])
def test_merged_vocabulary_and_space_are_those_of_one_process(address_sample, shard_bytes,
                                                              cutoff):
    patterns = read_patterns(ADDRESS_PATTERNS)
    path = str(address_sample["train"])
    whole = encode_training(patterns, list(read_sequences(path)), cutoff=cutoff)
    shards = plan_shards([path], shard_bytes)
    assert (len(shards) > 1) == (shard_bytes < os.path.getsize(path))
    counted = [count_shard(patterns, read_shard(s, encoding="utf-8", sep="auto")[0])
               for s in shards]
    vocab = merge_counts(patterns, [c.counts for c in counted], cutoff)
    f, g = whole.featurizer, vocab.featurizer
    assert [t.strings for t in f.tables] == [t.strings for t in g.tables]
    assert np.array_equal(f.vocab.keys, g.vocab.keys)
    assert np.array_equal(f.vocab.values, g.vocab.values)
    assert vocab.labels == whole.labels
    unigram = np.array([patterns[p].has_unigram for p in g.listed])
    bigram = np.array([patterns[p].has_bigram and not patterns[p].is_constant
                       for p in g.listed])
    pairs = []
    for c, obs_map, label_map in zip(counted, vocab.obs_maps, vocab.label_maps, strict=True):
        obs = np.array(c.obs, order="F")
        renumber(obs, obs_map, c.offsets)
        pairs.append(shard_pairs(obs, label_map[c.y], c.first_token, unigram, bigram,
                                 len(g.vocab), len(vocab.labels)))
    space, empirical = merge_space(pairs, len(g.vocab), len(vocab.labels),
                                   whole.space.has_trans)
    assert space.arrays()[:5].__repr__() == whole.space.arrays()[:5].__repr__()
    assert np.array_equal(empirical, whole.empirical)


def test_shards_cut_after_blank_lines(tmp_path):
    path = tmp_path / "c.txt"
    path.write_bytes(b"a A\nb B\n\nc C\r\n\r\nd D\n\n\ne E\n")
    for size in range(1, 12):
        shards = plan_shards([str(path)], size)
        assert shards[0].start == 0 and shards[-1].stop == path.stat().st_size
        for before, after in zip(shards, shards[1:], strict=False):
            assert before.stop == after.start
            assert path.read_bytes()[:after.start].endswith((b"\n\n", b"\n\r\n"))
        seqs = [seq.rows for s in shards for seq in read_shard(s, encoding="utf-8",
                                                                 sep="auto")[0]]
        assert seqs == [seq.rows for seq in read_sequences(path)]


def test_objective_and_gradient_equal_one_process(client, address_sample):
    from crfkit.dask.training import ClusterObjective, distribute

    patterns = read_patterns(ADDRESS_PATTERNS)
    path = str(address_sample["train"])
    whole = encode_training(patterns, list(read_sequences(path)))
    dist = distribute(client, patterns, plan_shards([path], SMALL), model_type="crf", cutoff=1)
    assert len(dist.parts) == 2
    set_thread_count(1)
    local = Objective(whole.space, whole.data, whole.empirical, 1.0)
    remote = ClusterObjective(client, dist.parts, dist.corpus.empirical, 1.0, 0, 2)
    rng = np.random.default_rng(3)
    for scale in (0.0, 0.3):
        w = scale * rng.standard_normal(whole.space.n_weights)
        g1, g2 = np.empty_like(w), np.empty_like(w)
        f1, f2 = local(w, g1), remote(w, g2)
        assert f1 == f2 and np.array_equal(g1, g2)
        assert (local.token_errors, local.sequence_errors) == \
            (remote.token_errors, remote.sequence_errors)


@pytest.mark.parametrize("options", [{}, {"rho1": 0.5, "cutoff": 2}, {"model_type": "memm"}])
def test_model_is_byte_identical_to_one_thread(client, address_sample, options):
    import crfkit.dask

    patterns = read_patterns(ADDRESS_PATTERNS)
    path = str(address_sample["train"])
    expected = single(patterns, path, maxiter=6, **options)
    # the inputs crfkit train records, which crfkit.dask.train records too
    expected.info.update(pattern_file=str(ADDRESS_PATTERNS), train_file=path, encoding="utf-8")
    got = crfkit.dask.train(str(ADDRESS_PATTERNS), path, client=client, shard_bytes=SMALL,
                            maxiter=6, **options)
    assert got.to_bytes() == expected.to_bytes()


def test_a_killed_worker_changes_nothing(client, address_sample):
    from crfkit.dask import training
    from crfkit.progress import Progress

    patterns = read_patterns(ADDRESS_PATTERNS)
    path = str(address_sample["train"])
    expected = single(patterns, path, maxiter=8)
    pids = client.run(os.getpid)
    killed = []

    class Killer(Progress):
        def iteration(self, it, *args, **kwargs):
            if it == 3 and not killed:  # a worker dies, with its part, mid-training
                killed.append(next(iter(pids.values())))
                os.kill(killed[0], signal.SIGKILL)

    got = training.train(client, patterns, plan_shards([path], SMALL), TrainOptions(maxiter=8),
                         progress=Killer(quiet=True))
    assert killed and got.to_bytes() == expected.to_bytes()
    client.wait_for_workers(2, timeout=30)


def test_a_ragged_line_is_reported_at_its_file_and_line(client, tmp_path, address_sample):
    import crfkit.dask

    lines = address_sample["train"].read_text().split("\n")
    bad = len(lines) - 40  # far into the file: in a later shard
    while not lines[bad]:
        bad += 1
    lines[bad] += " extra"
    path = tmp_path / "ragged.txt"
    path.write_text("\n".join(lines))
    with pytest.raises(InputError) as err:
        crfkit.dask.train(ADDRESS_PATTERNS, str(path), client=client, shard_bytes=SMALL,
                          maxiter=1)
    assert (err.value.path, err.value.line) == (str(path), bad + 1)
    assert "expected" in err.value.message and "columns" in err.value.message


@pytest.mark.parametrize("options", [LabelOptions(), LabelOptions(scores=True, nbest=2),
                                     LabelOptions(check=True, marginals=True)])
def test_labelling_output_is_byte_identical(client, address_model, address_sample, options):
    from crfkit.dask.labelling import label_file

    path = str(address_sample["test"])
    one = io.StringIO()
    expected = label_stream(address_model, read_items(path), one, options)
    many = io.StringIO()
    stats = label_file(client, address_model, plan_shards([path], 1000), many, options,
                       encoding="utf-8", sep="auto", window=3)
    assert many.getvalue() == one.getvalue()
    assert stats == expected


def compile_worker_epochs(algo: str, path: str) -> None:
    """Run the epoch kernel the workers run for ``algo`` once here: compiled once into the
    cache, which both workers then load, instead of both compiling it at the same time."""
    from crfkit.kernels.epochs import PerceptronEpochs, SgdEpochs

    corpus = encode_training(read_patterns(ADDRESS_PATTERNS), list(read_sequences(path)))
    W, order = np.zeros(corpus.space.n_weights), np.zeros(1, dtype=np.int64)
    if algo == "sgd-l1":
        SgdEpochs(corpus.space, corpus.data)(W, order, 0, 0.1, 0.9, 0.0, np.zeros(W.size),
                                             np.zeros(1))
    else:
        PerceptronEpochs(corpus.space, corpus.data)(W, np.zeros(W.size), order, 0)


@pytest.mark.parametrize("algo", ["sgd-l1", "ap"])
def test_online_training_does_not_depend_on_the_shards(client, address_sample, algo):
    import crfkit.dask

    path = str(address_sample["train"])
    compile_worker_epochs(algo, path)
    models = [crfkit.dask.train(ADDRESS_PATTERNS, path, client=client, shard_bytes=size,
                                algo=algo, maxiter=3).to_bytes()
              for size in (SMALL, 1 << 20)]
    assert models[0] == models[1]


def test_shard_paths_must_exist():
    from crfkit.dask.shards import expand_inputs
    from crfkit.errors import UsageError

    with pytest.raises(UsageError, match="names no file"):
        expand_inputs("/nonexistent/part-*.txt")
    assert isinstance(Shard("x"), Shard)


@pytest.mark.parametrize("dense", ["all_features", "all_labels", "order"])
def test_dense_feature_sets_are_refused_before_the_cluster_is_used(dense):
    from crfkit.dask.training import train as dask_train
    from crfkit.errors import UsageError
    from crfkit.structures import named
    from crfkit.structures.base import Choice

    if dense == "order" and not named("order2").claims(Choice(None, None, {"order": 2})):
        pytest.skip("the second order does not implement the structure interface in this tree")
    options = TrainOptions(structure={"order": 2}) if dense == "order" else \
        TrainOptions(**{dense: True})
    with pytest.raises(UsageError, match="not available with --dask"):
        dask_train(None, [], [], options)


@pytest.mark.parametrize("algo", ["mira", "pa", "arow", "l2sgd"])
def test_algorithms_without_cluster_epochs_are_refused(algo):
    """The workers run sgd-l1's and ap's epochs only: another online algorithm is refused
    rather than trained as ap."""
    from crfkit.dask.training import train as dask_train
    from crfkit.errors import UsageError

    with pytest.raises(UsageError, match=f"-a {algo} is not available with --dask"):
        dask_train(None, [], [], TrainOptions(algo=algo))


def test_no_worker_left_keeps_the_last_finished_iteration(address_sample, monkeypatch):
    from crfkit.dask import cluster, training
    from crfkit.progress import Progress

    monkeypatch.setattr(cluster, "NO_WORKER_GRACE", 1.0)
    patterns = read_patterns(ADDRESS_PATTERNS)
    path = str(address_sample["train"])
    expected = single(patterns, path, maxiter=2)
    # a worker thread of this process: what is checked is the driver's, not the worker's
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address=":0") as one, \
            distributed.Client(one) as c:

        class Retire(Progress):
            def iteration(self, it, *args, **kwargs):
                if it == 2:  # the last worker leaves for good
                    one.scale(0)

        got = training.train(c, patterns, plan_shards([path], SMALL), TrainOptions(maxiter=9),
                             progress=Retire(quiet=True))
    assert got.info["stop_reason"].startswith("no Dask worker")
    assert got.info["iterations"] == 2
    assert np.array_equal(got.weights, expected.weights)


@pytest.mark.slow
def test_command_line_train_and_label_on_local_cluster(address_sample, tmp_path):
    from tests.helpers import one_error_line, run

    train_file, test_file = address_sample["train"], address_sample["test"]
    for name, extra in (("one", ["-t", "1"]), ("dask", ["--dask", "local:2"])):
        result = run("train", "-q", "-i", "4", "-p", ADDRESS_PATTERNS, *extra, train_file,
                     tmp_path / f"{name}.model")
        assert result.exit_code == 0, result.stderr
    model = tmp_path / "one.model"
    assert (tmp_path / "dask.model").read_bytes() == model.read_bytes()
    for name, extra in (("one", []), ("dask", ["--dask", "local:2"])):
        result = run("label", "-m", model, "-c", *extra, test_file, tmp_path / f"{name}.out")
        assert result.exit_code == 0, result.stderr
    assert (tmp_path / "dask.out").read_bytes() == (tmp_path / "one.out").read_bytes()
    result = run("train", "-p", ADDRESS_PATTERNS, "--dask", "local:0", train_file,
                 tmp_path / "x.model")
    one_error_line(result, "local:N")


def test_plain_import_and_label_start_up_do_not_import_dask():
    import subprocess
    import sys

    code = ("import sys, crfkit, crfkit.cli, crfkit.labelling.label, crfkit.training.train; "
            "print(sorted(m for m in ('dask', 'distributed') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"


def test_a_bag_trains_and_labels_as_one_process(client, address_sample, address_model):
    import dask.bag

    import crfkit.dask
    from crfkit.labelling.label import label_sequences

    patterns = read_patterns(ADDRESS_PATTERNS)
    path = str(address_sample["train"])
    sequences = list(read_sequences(path))
    bag = dask.bag.from_sequence([[list(row) for row in s.rows] for s in sequences],
                                 npartitions=5)
    got = crfkit.dask.train(patterns, bag, client=client, maxiter=4)
    assert got.to_bytes() == single(patterns, path, maxiter=4).to_bytes()
    test = list(read_sequences(address_sample["test"]))
    labels = crfkit.dask.label(address_model, dask.bag.from_sequence(test, npartitions=3))
    assert labels.compute() == label_sequences(address_model, test)


@pytest.mark.parametrize("refusal", [OSError("No valid workers found"),
                                     KeyError("inproc://192.0.2.2/13356/4")])
@pytest.mark.parametrize("workers", [0, 1])
def test_a_refused_scatter_says_whether_any_worker_is_left(workers, refusal):
    """The scheduler refuses data when its last worker has just left (no worker to choose,
    or the chosen one gone before the data was recorded on it: a KeyError): the stop
    reason then reads as gather's (the retiring-worker test above met both races in CI)."""
    from crfkit.dask.cluster import NoWorkers, Watch

    class Refusing:
        def scatter(self, data, hash=False):
            raise refusal

        def scheduler_info(self, n_workers=-1):
            return {"workers": {f"w{i}": {} for i in range(workers)}}

    with pytest.raises(NoWorkers) as caught:
        Watch(Refusing(), grace=0.0).scatter([1])
    assert str(caught.value).startswith("cannot send data" if workers else "no Dask worker left")


@needs_skip_chain
def test_skip_chain_patterns_are_refused_before_a_cluster_is_started(address_sample, tmp_path):
    from tests.helpers import ROOT, one_error_line, run

    result = run("train", "-p", ROOT / "patterns/ner-nl-skip.pat", "--dask", "local:2",
                 address_sample["train"], tmp_path / "x.model")
    one_error_line(result, "skip-chain", "not available with --dask")
    assert not (tmp_path / "x.model").exists()


@pytest.mark.parametrize("command", ["train", "label"])
def test_crfsuite_format_is_refused_with_dask(command, address_model_file, tmp_path):
    from tests.helpers import one_error_line, run

    data = tmp_path / "data.crfsuite"
    data.write_text("B-NP\tw=He\nO\tw=.\n\n")
    args = (["train", data, tmp_path / "x.model"] if command == "train"
            else ["label", "-m", address_model_file, data, tmp_path / "out"])
    result = run(*args, "--format", "crfsuite", "--dask", "local:2")
    one_error_line(result, "--dask", "--format crfsuite")


def test_a_bag_of_feature_dicts_is_refused_in_one_line(client):
    import dask.bag

    import crfkit.dask

    items = [[{"w": "He", "label": "B-NP"}, {"w": ".", "label": "O"}]] * 4
    with pytest.raises(InputError, match="feature dicts"):
        crfkit.dask.train(read_patterns(ADDRESS_PATTERNS), dask.bag.from_sequence(items),
                          client=client, maxiter=1)


def test_the_api_writes_the_model_file_of_the_command_line(client, address_sample, tmp_path):
    """crfkit.dask.train(...).save() and crfkit train -t 1 give the same file, byte for
    byte (the inputs recorded in the model's info included)."""
    import crfkit.dask
    from tests.helpers import run

    patterns, train_file = str(ADDRESS_PATTERNS), str(address_sample["train"])
    cli = run("train", "-q", "-t", "1", "-i", "4", "-p", patterns, train_file,
              tmp_path / "cli.model")
    assert cli.exit_code == 0, cli.stderr
    crfkit.dask.train(patterns, train_file, client=client, shard_bytes=SMALL,
                      maxiter=4).save(tmp_path / "api.model")
    assert (tmp_path / "api.model").read_bytes() == (tmp_path / "cli.model").read_bytes()


def test_bag_labelling_sends_the_model_once_not_in_the_graph(client, address_model,
                                                             address_sample):
    import dask.bag
    from distributed.protocol.pickle import dumps

    import crfkit.dask

    test = list(read_sequences(address_sample["test"]))
    labels = crfkit.dask.label(address_model, dask.bag.from_sequence(test, npartitions=4),
                               client=client)
    graph = dumps(dict(labels.__dask_graph__()))
    assert len(graph) < len(address_model.to_bytes()) / 2
    assert len(labels.compute()) == len(test)


def test_a_part_dask_cannot_remake_is_made_again_by_the_driver(client, address_sample):
    """Dask cancels a held part it lost with a worker and cannot recompute (it forgot the
    tasks that made it); cancelling one here is that loss, without the race of killing a
    worker (test_dask_faults.py kills real ones). The objective is still one process's."""
    from crfkit.dask.training import ClusterObjective, distribute
    from crfkit.progress import Progress

    patterns = read_patterns(ADDRESS_PATTERNS)
    path = str(address_sample["train"])
    whole = encode_training(patterns, list(read_sequences(path)))
    log = io.StringIO()
    dist = distribute(client, patterns, plan_shards([path], SMALL), model_type="crf", cutoff=1,
                      progress=Progress(log))
    remote = ClusterObjective(client, dist.parts, dist.corpus.empirical, 1.0, 0, 2,
                              recover=dist.recovering)
    client.cancel(dist.parts[1])
    set_thread_count(1)
    local = Objective(whole.space, whole.data, whole.empirical, 1.0)
    w = 0.3 * np.random.default_rng(5).standard_normal(whole.space.n_weights)
    g1, g2 = np.empty_like(w), np.empty_like(w)
    assert local(w, g1) == remote(w, g2) and np.array_equal(g1, g2)
    assert "1 part(s) made again" in log.getvalue()
    assert not dist.failures


@needs_skip_chain
def test_labelling_with_a_skip_chain_model_is_refused(tmp_path):
    """Shards are cut at blank lines, so they would cut a skip-chain model's documents."""
    from tests.helpers import one_error_line, run, skip_corpus

    data, pat = skip_corpus(tmp_path, [("Green", "PER", 3), ("Paris", "LOC", 2)])
    model = tmp_path / "skip.model"
    assert run("train", "-q", "-t", "1", "-i", "3", "-p", pat, data, model).exit_code == 0
    result = run("label", "-m", model, "--dask", "local:2", data, tmp_path / "out")
    one_error_line(result, "--dask", "skip-chain")
    assert not (tmp_path / "out").exists()
