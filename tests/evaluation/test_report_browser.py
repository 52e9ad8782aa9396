"""The HTML reports of ``train --report`` and ``tune --report`` in a real browser.

Headless Chromium opens a copy of the page with a small script put first in
its ``<head>``: it records every error event (a script error, an image that
failed to load) and every ``console.error``, and once the page has loaded
writes what it found, and whether every image decoded, into the DOM, which
``--dump-dom`` prints. Skipped, with the reason, where Chromium is absent
(Debian: ``apt-get install chromium``).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.helpers import ROOT, run

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed "
                                "(apt-get install chromium)")
MARK = "crfkit-browser-check"
PROBE = """<script>
(function () {
  var errors = [];
  window.addEventListener("error", function (e) {
    var t = e.target || {};
    errors.push(t.tagName ? "failed to load " + t.tagName + " " + (t.alt || t.src || "")
                          : "error: " + e.message);
  }, true);
  var consoleError = console.error;
  console.error = function () {
    errors.push("console.error: " + Array.prototype.join.call(arguments, " "));
    consoleError.apply(console, arguments);
  };
  window.addEventListener("load", function () {
    var images = Array.prototype.map.call(document.images, function (img) {
      return {alt: img.alt, loaded: img.complete && img.naturalWidth > 0};
    });
    var out = document.createElement("pre");
    out.id = "MARK";
    out.textContent = JSON.stringify({errors: errors, images: images});
    document.body.appendChild(out);
  });
})();
</script>""".replace("MARK", MARK)
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def chromium(args: list[str], profile: Path) -> subprocess.CompletedProcess:
    return subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args],
                          capture_output=True, text=True, timeout=120)


def browser_check(page: Path, work: Path) -> dict:
    """What the browser saw on ``page``: ``errors`` (list) and ``images`` (alt, loaded)."""
    html = page.read_text(encoding="utf-8")
    probed = work / "probed.html"
    probed.write_text(re.sub(r"<head[^>]*>", lambda m: m.group(0) + PROBE, html, count=1),
                      encoding="utf-8")
    done = chromium(["--virtual-time-budget=10000", "--dump-dom", probed.as_uri()],
                    work / "profile")
    found = re.search(rf'<pre id="{MARK}">(.*?)</pre>', done.stdout, re.S)
    assert found, f"the probe did not run:\n{done.stderr[-2000:]}"
    text = found.group(1).replace("&quot;", '"').replace("&lt;", "<").replace("&gt;", ">")
    return json.loads(text.replace("&amp;", "&"))


def assert_page_sound(page: Path, work: Path, images: int) -> None:
    seen = browser_check(page, work)
    assert seen["errors"] == []
    assert len(seen["images"]) == images
    assert all(image["loaded"] for image in seen["images"]), seen["images"]


@pytest.fixture(scope="module")
def small_corpus(tmp_path_factory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("browser")
    lines = (ROOT / "data/address-train.txt").read_text(encoding="utf-8").splitlines()
    (tmp / "train.txt").write_text("\n".join(lines[:2000]) + "\n", encoding="utf-8")
    (tmp / "devel.txt").write_text("\n".join(lines[2000:2600]) + "\n", encoding="utf-8")
    return {"dir": tmp, "train": tmp / "train.txt", "devel": tmp / "devel.txt"}


@pytest.mark.slow
def test_train_report_loads_in_a_browser(small_corpus, tmp_path) -> None:
    pytest.importorskip("matplotlib")
    report = tmp_path / "report"
    result = run("train", "-q", "-i", "15", "-p", ROOT / "patterns/address.pat",
                 "-d", small_corpus["devel"], "--report", report,
                 small_corpus["train"], tmp_path / "m.model")
    assert result.exit_code == 0, result.output
    assert_page_sound(report / "index.html", tmp_path, images=4)


@pytest.mark.slow
def test_tune_report_loads_in_a_browser(small_corpus, tmp_path) -> None:
    pytest.importorskip("matplotlib")
    report = tmp_path / "report"
    result = run("tune", "-q", "-i", "15", "-p", ROOT / "patterns/address.pat",
                 "-d", small_corpus["devel"], "-2", "1,0.5", "--likely", "none",
                 "--report", report, small_corpus["train"], tmp_path / "m.model")
    assert result.exit_code == 0, result.output
    pngs = len(list(report.glob("*.png")))
    assert pngs >= 1
    assert_page_sound(report / "index.html", tmp_path, images=pngs)


def test_a_broken_image_and_a_script_error_are_caught(tmp_path) -> None:
    """The check itself can fail: a page with an undecodable image and a throwing script."""
    page = tmp_path / "index.html"
    page.write_text('<html><head><title>t</title></head><body>'
                    '<img alt="good" src="data:image/gif;base64,'
                    'R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7">'
                    '<img alt="broken" src="data:image/png;base64,AAAA">'
                    '<script>undefinedFunction()</script></body></html>', encoding="utf-8")
    seen = browser_check(page, tmp_path)
    assert [image["loaded"] for image in seen["images"]] == [True, False]
    assert any("broken" in error for error in seen["errors"])
    assert any("undefinedFunction" in error for error in seen["errors"])
    with pytest.raises(AssertionError):
        assert_page_sound(page, tmp_path, images=2)
