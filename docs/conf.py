"""Sphinx configuration: MyST Markdown pages, built strictly (``scripts/docs`` runs ``-W``)."""

from __future__ import annotations

import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS.parent))

project = "teamproto"
author = "the teamproto authors"
extensions = ["myst_parser"]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "_gen", "_generated", "**/README.md"]
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3
html_theme = "alabaster"
html_theme_options = {"page_width": "1200px", "body_max_width": "none"}
html_extra_path = ["_generated/extra"]
suppress_warnings: list[str] = []
nitpicky = True


def _generate(app: object) -> None:
    from docs._gen.build import build_generated

    build_generated(DOCS)


def setup(app: object) -> None:
    app.connect("config-inited", lambda app, config: _generate(app))  # type: ignore[attr-defined]
