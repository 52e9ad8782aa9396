"""Click options built from the declarations (crfkit.options.Option) of the code that reads
them: a command lists the declarations, not the options."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

import click

from crfkit.options import Option

F = TypeVar("F", bound=Callable)


def click_options(declared: Iterable[Option]) -> Callable[[F], F]:
    """Decorate a command with one click option per declaration, in the order given."""
    def decorate(command: F) -> F:
        for o in reversed(list(declared)):
            if o.kind is None and o.default is None:
                command = click.option(*o.flags, o.name, is_flag=True, help=o.help)(command)
            elif o.kind is None:
                command = click.option(*o.flags, o.name, is_flag=True, default=o.default,
                                       help=o.help)(command)
            else:
                command = click.option(*o.flags, o.name, type=o.kind, default=o.default,
                                       metavar=o.metavar, show_default=o.show_default,
                                       help=o.help)(command)
        return command
    return decorate
