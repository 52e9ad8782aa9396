"""Skip-edge modes: ``first`` (a star per key) against a brute-force grouping, the cap,
and the mode recorded in the model and used by ``crfkit label``."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest

import crfkit.structures.skipchain.documents
from crfkit.features.patterns import parse_patterns
from crfkit.io.reader import Sequence
from crfkit.model.model import Model
from crfkit.structures.skipchain.graph import SkipOptions, build_graph
from tests.helpers import run, skip_corpus

SKIP = parse_patterns('s:cap=%t[-1,0,"."]%m[0,0,"^\\u.*"]')


def seq(*words: str) -> Sequence:
    return Sequence(rows=[[w, "N", "O"] for w in words], lines=list(range(1, len(words) + 1)))


def edges(graph) -> list[tuple[int, int]]:
    return list(zip(graph.e_i.tolist(), graph.e_j.tolist(), strict=True))


def test_first_mode_joins_every_later_occurrence_to_the_first():
    # tokens: Green(0, initial: no key) met Green(2) | the Green(4) and Green(6) Red(7)
    #         | Red(8, initial) Green(9) Red(10)
    doc = [seq("Green", "met", "Green"), seq("the", "Green", "and", "Green", "Red"),
           seq("Red", "Green", "Red")]
    star = build_graph(doc, [0], SKIP, SkipOptions(mode="first"))
    assert edges(star) == [(2, 4), (2, 6), (2, 9), (7, 10)]
    path = build_graph(doc, [0], SKIP, SkipOptions(mode="next"))
    assert edges(path) == [(2, 4), (4, 6), (6, 9), (7, 10)]
    # the first occurrence is the hub: it carries one edge per later occurrence
    assert np.diff(star.inc_ptr)[2] == 3 and np.diff(star.inc_ptr)[[4, 6, 9]].tolist() == [1] * 3
    # the cap keeps the shortest edges of the document
    capped = build_graph(doc, [0], SKIP, SkipOptions(mode="first", cap=2))
    assert edges(capped) == [(2, 4), (7, 10)]
    # documents: the star never leaves one; the second document's first Green is the hub
    apart = build_graph(doc, [0, 1], SKIP, SkipOptions(mode="first"))
    assert edges(apart) == [(4, 6), (4, 9), (7, 10)]
    assert list(apart.edge_ptr) == [0, 0, 3]


def brute_force_star(doc: list[Sequence], starts: list[int]) -> list[tuple[int, int]]:
    """The star edges computed the slow way: per document and key, first -> every later."""
    offsets = np.cumsum([0] + [len(s.rows) for s in doc]).tolist()
    bounds = starts + [len(doc)]
    found = []
    for d in range(len(starts)):
        positions = defaultdict(list)
        for s in range(bounds[d], bounds[d + 1]):
            for k, row in enumerate(doc[s].rows):
                if k > 0 and row[0][0].isupper():  # capitalised, not sentence-initial
                    positions[row[0]].append(offsets[s] + k)
        found += [(group[0], t) for group in positions.values() for t in group[1:]]
    return sorted(found)


@pytest.mark.parametrize("seed", range(5))
def test_first_mode_equals_brute_force_on_random_documents(seed):
    rng = np.random.default_rng(seed)
    words = ["Ann", "Bob", "cat", "Dee", "eel", "Ann"]
    doc = [seq(*(str(w) for w in rng.choice(words, size=int(rng.integers(1, 7)))))
           for _ in range(12)]
    starts = sorted({0, *rng.choice(np.arange(1, 12), size=3, replace=False).tolist()})
    graph = build_graph(doc, starts, SKIP, SkipOptions(mode="first"))
    assert sorted(edges(graph)) == brute_force_star(doc, starts)
    # a star per key has as many edges as a path per key
    assert graph.n_edges == build_graph(doc, starts, SKIP, SkipOptions(mode="next")).n_edges


@pytest.fixture()
def files(tmp_path):
    names = ["Green", "Paris", "Green", "Smith"]
    return skip_corpus(tmp_path, [(name, "LOC" if name == "Paris" else "PER", 2 + d % 2)
                                  for d, name in enumerate(names)])


def test_the_model_records_the_mode_and_label_uses_it(files, tmp_path, monkeypatch):
    data, pat = files
    model = tmp_path / "m.model"
    assert run("train", "-q", "-t", "1", "-i", "5", "--skip-mode", "first", "-p", pat,
               data, model).exit_code == 0
    assert Model.load(model).info["skip"]["mode"] == "first"
    assert "first" in run("info", model).output
    seen = []
    build = crfkit.structures.skipchain.documents.build_graph

    def spy(sequences, starts, patterns, options, conditions=None):
        seen.append(options.mode)
        return build(sequences, starts, patterns, options, conditions)

    monkeypatch.setattr(crfkit.structures.skipchain.documents, "build_graph", spy)
    out = run("label", "-t", "1", "-m", model, "-c", data)
    assert out.exit_code == 0 and out.stdout.startswith("-DOCSTART- X O O\n")
    assert seen and set(seen) == {"first"}
    bad = run("train", "-q", "--skip-mode", "star", "-p", pat, data, model)
    assert bad.exit_code == 2 and "'star' is not one of" in bad.stderr
    assert "Traceback" not in bad.output
