"""Latent-dynamic CRFs: K hidden states per label (the structure: :mod:`.structure`).

Imports nothing: the registry reads :mod:`.options` for the command line without numpy.
"""
