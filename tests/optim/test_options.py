"""The algorithms' option declarations are what the command line offers."""

from __future__ import annotations

import click

from crfkit.cli import cli
from crfkit.optim import options
from crfkit.options import Option

DECLARED = [value for value in vars(options).values() if isinstance(value, Option)]


def test_every_declared_option_is_a_train_option_with_its_flags_and_help():
    params = {p.name: p for p in cli.commands["train"].params if isinstance(p, click.Option)}
    assert DECLARED
    for option in DECLARED:
        param = params[option.name]
        assert tuple(param.opts) == option.flags
        assert param.help == option.help
        assert param.default == option.default


def test_declared_readers_are_training_algorithms():
    from crfkit.cli import ALGORITHM_NAMES

    for option in DECLARED:
        assert option.reads and set(option.reads) <= set(ALGORITHM_NAMES), option.name
