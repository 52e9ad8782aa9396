"""sklearn-crfsuite's own release tests, run against crfkit.sklearn.

The tests are not copied here: point ``SKLEARN_CRFSUITE_TESTS`` at the ``tests/``
directory of sklearn-crfsuite's source distribution (MIT licensed), e.g.::

    pip download --no-deps --no-binary :all: sklearn-crfsuite==0.5.0 -d /tmp/skc
    tar xzf /tmp/skc/sklearn_crfsuite-0.5.0.tar.gz -C /tmp/skc
    SKLEARN_CRFSUITE_TESTS=/tmp/skc/sklearn_crfsuite-0.5.0/tests \\
        python -m pytest tests/sklearn/test_sklearn_crfsuite_release.py

They run on a copy whose only change is the import (``sklearn_crfsuite`` ->
``crfkit.sklearn``): the one-import promise, checked by its original tests. They
run in this process (a session of their own): a new interpreter would import and
load the kernels again, and joblib's worker processes, which their cross-validation
starts, are reused from the tests before.
"""

from __future__ import annotations

import os
import shutil

import pytest

SOURCE = os.environ.get("SKLEARN_CRFSUITE_TESTS")


@pytest.mark.slow
@pytest.mark.skipif(not SOURCE, reason="SKLEARN_CRFSUITE_TESTS is not set")
def test_release_tests_pass_with_one_import_changed(tmp_path, monkeypatch):
    copy = tmp_path / "sklearn_crfsuite_tests"
    shutil.copytree(SOURCE, copy)
    for path in copy.glob("*.py"):
        text = path.read_text(encoding="utf-8")
        path.write_text(text.replace("from sklearn_crfsuite import",
                                     "from crfkit.sklearn import"), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    status = pytest.main(["-q", "-p", "no:cacheprovider", "--import-mode=importlib",
                          "--rootdir", str(copy), str(copy)])
    assert status == 0
