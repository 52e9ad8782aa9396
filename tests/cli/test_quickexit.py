"""The ``crfkit`` executable ends without the interpreter's teardown, having done what a
normal exit does that matters: exit handlers, flushed streams, running threads waited for."""

from __future__ import annotations

import subprocess
import sys

import pytest

from crfkit.cli.quickexit import exit_status
from tests.helpers import ROOT

# A child that runs the console entry point after setting up what the test watches.
_PRELUDE = """import atexit, sys, threading, time
class Teardown:
    def __del__(self):
        sys.stderr.write("teardown ran\\n")
witness = Teardown()  # freed when the interpreter tears its modules down
"""


def _console(setup: str, *argv: str) -> subprocess.CompletedProcess:
    code = (_PRELUDE + setup + f"\nsys.argv = ['crfkit', *{list(argv)!r}]\n"
            "from crfkit.cli import console\nconsole()\n")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)


def test_the_executable_skips_the_teardown_but_runs_exit_handlers_and_flushes():
    setup = ("atexit.register(lambda: sys.stderr.write('handler ran\\n'))\n"
             "sys.stdout.write('buffered ')  # still in the buffer when the command ends")
    child = _console(setup, "--version")
    assert child.returncode == 0, child.stderr
    assert child.stdout.startswith("buffered crfkit, version ")
    assert "handler ran" in child.stderr
    assert "teardown ran" not in child.stderr


def test_a_failing_command_keeps_its_status_and_message():
    child = _console("", "label", "-m", "no-such.model")
    assert child.returncode == 2  # click's usage status
    assert child.stderr.startswith("crfkit: error: ") and "no-such.model" in child.stderr
    assert "teardown ran" not in child.stderr


def test_a_thread_still_running_is_waited_for_as_usual(tmp_path):
    done = tmp_path / "done"
    setup = ("def late():\n    time.sleep(0.5)\n"
             f"    open({str(done)!r}, 'w').write('x')\n"
             "threading.Thread(target=late).start()")
    child = _console(setup, "--version")
    assert child.returncode == 0, child.stderr
    assert done.read_text() == "x"
    assert "teardown ran" in child.stderr  # the usual exit


@pytest.mark.parametrize(("code", "status"), [(None, 0), (0, 0), (2, 2), (141, 141),
                                              (256, 0), ("message", 1)])
def test_exit_status_is_the_interpreters(code, status, capsys):
    assert exit_status(code) == status
    assert capsys.readouterr().err == ("message\n" if code == "message" else "")
