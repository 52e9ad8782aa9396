"""How a command ends when something goes wrong: one line on stderr and a fixed exit status.

click's own handling prints a usage error as a synopsis, a hint and the
message (three or four lines), and lets an ``OSError`` from writing standard
output (``crfkit info > /dev/full``) escape as a traceback; the interpreter
then fails again flushing standard output at exit. Here every failure is one
``crfkit: error: ...`` line:

* a command line click cannot parse: exit status 2 (click's), with a hint to
  ``--help`` on the same line;
* an output that cannot be written (a file, or ``<stdout>``): exit status 1;
  a trained model that cannot be written is kept elsewhere first
  (:func:`save_trained`), and the message says where.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Callable
from typing import TYPE_CHECKING, NoReturn, TextIO

import click

from crfkit.cli.termination import TERMINATED_STATUS, terminate_like_interrupt, terminated
from crfkit.errors import OutputError
from crfkit.io.atomic import WRITE_ERRNOS

if TYPE_CHECKING:
    from crfkit.model.model import Model

STDOUT_NAME = "<stdout>"
_NO_ARGS_IS_HELP = getattr(click.exceptions, "NoArgsIsHelpError", ())  # click >= 8.2


def run_standalone(main: Callable[[], object]) -> NoReturn:
    """Run ``main`` (click's ``main`` with ``standalone_mode=False``) and exit as click
    would, but with every failure on one line."""
    terminate_like_interrupt()
    try:
        result = main()
        status = result if isinstance(result, int) else 0
    except click.UsageError as err:
        status = _usage_error(err)
    except click.ClickException as err:
        _error_line(err.format_message())
        status = err.exit_code
    except click.Abort:
        click.echo(interrupted_line(sys.stderr), err=True)
        status = 130
    except OSError as err:
        if err.errno not in WRITE_ERRNOS:
            raise
        _write_failed(err.filename or STDOUT_NAME, err)
        status = 1
    if terminated():
        status = TERMINATED_STATUS
    sys.exit(_flushed_stdout(status))


def save_trained(model: Model, path: str) -> None:
    """Write a trained model to ``path``; if that fails, keep it elsewhere and say where.

    The model-path probe before training catches most failures, but a disk can
    fill up during training: the weights of hours of work are never dropped.
    """
    try:
        model.save(path)
    except OutputError as err:
        kept = _keep_elsewhere(model)
        where = (f"the trained model is kept in {kept}" if kept is not None
                 else "the trained model could not be written anywhere else either")
        raise OutputError(f"{err.message}; {where}", path=err.path) from None


def _keep_elsewhere(model: Model) -> str | None:
    """Save ``model`` to a new file in the temporary directory, the working directory or
    the home directory, the first that takes it; its name, or None."""
    for directory in (tempfile.gettempdir(), os.getcwd(), os.path.expanduser("~")):
        try:
            fd, name = tempfile.mkstemp(prefix="crfkit-kept-", suffix=".model", dir=directory)
        except OSError:
            continue
        os.close(fd)
        try:
            model.save(name)
            return name
        except OutputError:
            os.unlink(name)
    return None


def interrupted_line(stream: TextIO) -> str:
    """``crfkit: interrupted``, first erasing a live status line a terminal may show
    (reading, encoding): Ctrl-C can come while one is half written."""
    isatty = getattr(stream, "isatty", None)
    return ("\r\x1b[K" if isatty and isatty() else "") + "crfkit: interrupted"


def _usage_error(err: click.UsageError) -> int:
    """One line for what click reports in three or four: the message and the hint.
    A bare ``crfkit`` is no error to explain: it shows the help, as click does."""
    if isinstance(err, _NO_ARGS_IS_HELP):
        err.show()
        return err.exit_code
    message = " ".join(err.format_message().split())
    if err.ctx is not None:
        message += f" (try '{err.ctx.command_path} --help')"
    _error_line(message)
    return err.exit_code


def _flushed_stdout(status: int) -> int:
    """Flush standard output now, while a failure can still be one line and status 1."""
    try:
        sys.stdout.flush()
    except OSError as err:
        if err.errno not in WRITE_ERRNOS:
            raise
        _write_failed(STDOUT_NAME, err)
        return status or 1
    return status


def _write_failed(name: str, err: OSError) -> None:
    """Report a failed write; point standard output at /dev/null so that the
    interpreter's own flush at exit has nothing left to fail on."""
    _error_line(f"{name}: cannot write: {err.strerror or err}")
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # a stdout without a file descriptor (a test runner's)
        pass


def _error_line(message: str) -> None:
    click.echo(f"crfkit: error: {message}", err=True)
