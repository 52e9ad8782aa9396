"""crfkit: fast linear-chain CRFs for sequence labelling."""

__version__ = "0.1.0"
