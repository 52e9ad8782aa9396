"""Skip-chain CRFs: documents, skip edges between repeated tokens, loopy belief propagation."""

from __future__ import annotations

from typing import ClassVar

from crfkit.structures.chain import Chain


class SkipChain(Chain):
    """Placeholder until the skip chain implements the interface: claims nothing."""

    name: ClassVar[str] = "skipchain"
    title: ClassVar[str] = "skip chain"

    @classmethod
    def claims(cls, choice) -> bool:
        return False
