"""Skip-edge observations (e: patterns) come from the vectorised extractor; the slow
explainer (crfkit.features.explain.apply_pattern) is the oracle they must equal."""

from __future__ import annotations

import numpy as np
import pytest

from crfkit.features.explain import apply_pattern
from crfkit.features.patterns import parse_patterns
from crfkit.io.reader import Sequence
from crfkit.structures.skipchain.graph import (
    SkipOptions,
    build_graph,
    observations_at,
)

EDGE = parse_patterns("\n".join([
    "e:w=%x[0,0]",
    "e:far=%x[-3,0]|%x[2,1]",            # padding on both sides
    "e:abs=%x[@1,0]/%X[@-1,1]",          # absolute positions
    'e:init=%t[-1,0,"\\."]',             # a test past the start: false
    'e:shape=%m[0,0,"^\\u"]/%M[1,0,"[a-z]+"]',
    "e:two=%x[1,1]%x[-1,1]",
]))
WORDS = ["Green", "met", "Smith", "in", "Paris", ".", "the", "Berlin", "saw"]
TAGS = ["NNP", "VBD", "IN", "DT", "."]


def random_documents(seed: int) -> list[Sequence]:
    rng = np.random.default_rng(seed)
    sequences = []
    for _ in range(int(rng.integers(2, 9))):
        n = int(rng.integers(1, 7))
        rows = [[str(rng.choice(WORDS)), str(rng.choice(TAGS)), "O"] for _ in range(n)]
        sequences.append(Sequence(rows=rows, lines=list(range(1, n + 1))))
    return sequences


@pytest.mark.parametrize("seed", range(8))
def test_observations_at_are_the_explainers(seed):
    sequences = random_documents(seed)
    where = [(s, t) for s, seq in enumerate(sequences) for t in range(len(seq.rows))]
    tokens = np.arange(len(where), dtype=np.int64)
    rng = np.random.default_rng(seed)
    tokens = np.sort(rng.choice(tokens, size=max(1, len(tokens) // 2), replace=False))
    got = observations_at(sequences, EDGE, tokens)
    for p, pattern in enumerate(EDGE):
        expected = [apply_pattern(pattern, sequences[where[t][0]].rows, where[t][1])
                    for t in tokens.tolist()]
        assert got[p] == expected, pattern.text


def test_edges_get_the_blocks_of_the_explained_values():
    """The conditioned graph names its blocks by the explainer's values at the ends."""
    skip = parse_patterns("s:name=%m[0,0,\"^\\u.*\"]")
    sequences = random_documents(3) + random_documents(4)
    graph = build_graph(sequences, [0], skip + EDGE, SkipOptions(mode="all"))
    assert graph.n_edges
    starts = np.cumsum([0] + [len(s.rows) for s in sequences])
    for e in range(graph.n_edges):
        names = set()
        for t in (int(graph.e_i[e]), int(graph.e_j[e])):
            s = int(np.searchsorted(starts, t, side="right")) - 1
            names |= {f"{skip[0].text} | {apply_pattern(p, sequences[s].rows, t - starts[s])}"
                      for p in EDGE}
        blocks = graph.eb_blk[graph.eb_ptr[e]:graph.eb_ptr[e + 1]]
        assert blocks[0] == graph.e_pat[e]
        assert {graph.conditions[b - 1] for b in blocks[1:]} == names
