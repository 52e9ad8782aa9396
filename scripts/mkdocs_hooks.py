"""MkDocs hook: API reference entries named by where the public names live today.

A line ``<!-- api crfkit.NAME -->`` in a page becomes mkdocstrings' ``::: MODULE.NAME``
for the module that defines ``crfkit.NAME``; ``<!-- api crfkit.NAME OTHER -->`` names
``OTHER`` from that same module. The pages name objects by their public spelling,
so moving a module does not break the manual's strict build.
"""

from __future__ import annotations

import importlib
import re

API_LINE = re.compile(r"^<!-- api ([\w.]+)(?: (\w+))? -->$", re.M)


def _locate(public: str, other: str | None) -> str:
    package, _, name = public.rpartition(".")
    obj = getattr(importlib.import_module(package), name)
    return f"::: {obj.__module__}.{other or obj.__qualname__}"


def on_page_markdown(markdown: str, **kwargs) -> str:
    return API_LINE.sub(lambda found: _locate(found.group(1), found.group(2)), markdown)
