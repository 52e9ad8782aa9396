"""Command-line front end: a thin click layer over the library, one module per command.

Each command validates nothing itself beyond what click does; library code
raises :class:`crfkit.errors.CrfkitError` and :func:`main` turns it into one
line on stderr and exit status 1. Heavy modules (numba kernels) are imported
inside the commands that need them, so ``crfkit --help`` and ``crfkit eval``
start fast.
"""

from __future__ import annotations

import sys
from typing import NoReturn

import click

from crfkit import __version__
from crfkit.cli.common import ALGORITHM_NAMES, MODEL_TYPE_NAMES
from crfkit.cli.eval_command import eval_command
from crfkit.cli.help_command import help_command
from crfkit.cli.label_command import label_command
from crfkit.cli.model_commands import convert_command, dump_command, info_command
from crfkit.cli.patterns_command import patterns_command
from crfkit.cli.train_command import train_command
from crfkit.cli.tune_command import tune_command
from crfkit.cli.update_command import update_command
from crfkit.errors import CrfkitError

__all__ = ["ALGORITHM_NAMES", "MODEL_TYPE_NAMES", "cli", "console", "main"]


class _Group(click.Group):
    """A click group that reports library errors as one line and exit status 1 (usage and
    write errors too: crfkit.cli.failures), and the option habits of CRF++, Wapiti and
    CRFsuite as one line naming crfkit's spelling."""

    def main(self, *args, standalone_mode: bool = True, **kwargs):
        if not standalone_mode:
            return super().main(*args, standalone_mode=False, **kwargs)
        from crfkit.cli.failures import run_standalone

        run_standalone(lambda: super(_Group, self).main(*args, standalone_mode=False, **kwargs))

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta["crfkit.argv"] = list(args)
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context):
        try:
            _refuse_habits(self, ctx)
            return super().invoke(ctx)
        except CrfkitError as err:
            click.echo(f"crfkit: error: {err}", err=True)
            ctx.exit(1)
        except KeyboardInterrupt:
            from crfkit.cli.failures import interrupted_line

            click.echo(interrupted_line(sys.stderr), err=True)
            ctx.exit(130)
        except BrokenPipeError:
            sys.stderr.close()
            ctx.exit(141)


def _refuse_habits(group: click.Group, ctx: click.Context) -> None:
    """Another tool's option spelling (crfkit.cli.habits) stops here, before click's parser
    rejects it generically or reads it with crfkit's meaning."""
    from crfkit.cli.habits import habit_hint
    from crfkit.errors import UsageError

    argv = ctx.meta.get("crfkit.argv") or []
    if not argv or argv[0].startswith("-"):
        return
    hint = habit_hint(group.get_command(ctx, argv[0]), argv[0], argv[1:])
    if hint is not None:
        raise UsageError(hint)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="crfkit")
def cli() -> None:
    """Fast linear-chain CRFs: train, label, evaluate.

    Reads the column files and pattern (template) files of Wapiti and CRF++
    unchanged. Every FILE argument may be '-' for stdin/stdout.
    """


for command in (train_command, tune_command, label_command, convert_command, dump_command,
                info_command, update_command, eval_command, patterns_command, help_command):
    cli.add_command(command)


def main() -> None:
    """Run the command line (sys.argv); ends with SystemExit, as click does."""
    from crfkit.cli.startup import prepare_process

    prepare_process()
    cli(prog_name="crfkit")


def console() -> NoReturn:
    """The ``crfkit`` executable: :func:`main`, then the process ends without the
    interpreter's teardown (:mod:`crfkit.cli.quickexit`)."""
    from crfkit.cli.quickexit import exit_status, leave

    try:
        main()
        status = 0
    except SystemExit as end:
        status = exit_status(end.code)
    leave(status)


if __name__ == "__main__":
    console()

