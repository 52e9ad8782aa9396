"""Skip-chain CRFs: documents, skip edges between repeated tokens, loopy belief propagation.

The chain's features are encoded as for a linear chain; :meth:`SkipChain.attach` adds the
documents and skip edges (:mod:`.graph`), one ``L x L`` weight block per skip pattern and
per skip-edge observation after the chain's weights (:class:`.space.SkipSpace`). Training
minimises the Bethe objective (:mod:`.bethe`); labelling runs belief propagation over whole
documents. A model file is a chain's with ``type: skipchain`` and ``n_skip``.
"""

# The structure is crfkit.structures.skipchain.structure.SkipChain; this package imports nothing, so
# that the registry reads its options module without loading numpy (crfkit --help).
