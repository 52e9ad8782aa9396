"""Second-order chains: label-pair states, label trigrams and the ``t`` patterns."""

from __future__ import annotations

from typing import ClassVar

from crfkit.structures.chain import Chain


class Order2(Chain):
    """Placeholder until the second order implements the interface: claims nothing."""

    name: ClassVar[str] = "order2"
    title: ClassVar[str] = "second-order chain"

    @classmethod
    def claims(cls, choice) -> bool:
        return False
