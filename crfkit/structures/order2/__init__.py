"""Second-order chains: label-pair states, label trigrams and the ``t`` patterns.

The space (:mod:`crfkit.structures.order2.pair_space`) extends the chain's first-order
one with observation trigrams and a label-trigram block; the kernels are the pair lattice's
(:mod:`crfkit.structures.order2.pair_lattice`, :mod:`crfkit.structures.order2.lanes`). A
model file marks it with ``order: 2`` (and its four arrays), as before the interface, so
older files load unchanged.
"""

# The structure is crfkit.structures.order2.structure.Order2; this package imports nothing, so
# that the registry reads its options module without loading numpy (crfkit --help).
