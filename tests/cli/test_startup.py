"""What the command line changes in Numba's import (crfkit.cli.startup): scipy and yaml,
which Numba loads only to check a version and to read a configuration file, are kept out
of its import, and both stay importable after it; yaml is loaded when the working
directory has Numba's configuration file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT

IMPORT = '''
import sys
from crfkit.cli.startup import prepare_process
prepare_process()
assert "numba" not in sys.modules
import numba
print(sorted(name for name in ("scipy", "yaml") if name in sys.modules))
import scipy, yaml
print(scipy.__name__, yaml.__name__)
'''


@pytest.mark.parametrize("config_file", [False, True])
def test_numba_imports_without_scipy_and_yaml(tmp_path: Path, config_file: bool) -> None:
    pytest.importorskip("scipy")
    pytest.importorskip("yaml")
    if config_file:
        (tmp_path / ".numba_config.yaml").write_text("# no settings\n", encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = subprocess.run([sys.executable, "-c", IMPORT], env=env, cwd=tmp_path,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    during, after = run.stdout.splitlines()
    assert during == ("['yaml']" if config_file else "[]")
    assert after == "scipy yaml"
