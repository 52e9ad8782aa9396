"""sklearn-crfsuite's own release tests, run against crfkit.sklearn.

The tests are not copied here: point ``SKLEARN_CRFSUITE_TESTS`` at the ``tests/``
directory of sklearn-crfsuite's source distribution (MIT licensed), e.g.::

    pip download --no-deps --no-binary :all: sklearn-crfsuite==0.5.0 -d /tmp/skc
    tar xzf /tmp/skc/sklearn_crfsuite-0.5.0.tar.gz -C /tmp/skc
    SKLEARN_CRFSUITE_TESTS=/tmp/skc/sklearn_crfsuite-0.5.0/tests \\
        python -m pytest tests/sklearn/test_sklearn_crfsuite_release.py

They run on a copy whose only change is the import (``sklearn_crfsuite`` ->
``crfkit.sklearn``): the one-import promise, checked by its original tests.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SOURCE = os.environ.get("SKLEARN_CRFSUITE_TESTS")
ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.skipif(not SOURCE, reason="SKLEARN_CRFSUITE_TESTS is not set")
def test_release_tests_pass_with_one_import_changed(tmp_path):
    copy = tmp_path / "tests"
    shutil.copytree(SOURCE, copy)
    for path in copy.glob("*.py"):
        text = path.read_text(encoding="utf-8")
        path.write_text(text.replace("from sklearn_crfsuite import",
                                     "from crfkit.sklearn import"), encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           str(copy)], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-3000:]
