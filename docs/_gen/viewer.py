"""The interactive trace viewer: one static, offline HTML page (no external scripts or styles).

It embeds every machine's generated SVG and the traces of :mod:`docs._gen.traces`, and steps a
trace forwards and backwards (buttons, or the arrow keys). At each step it highlights, in each
machine's diagram, the states its records are in and the edge just taken, and lists what the
step changed in the snapshot; the whole snapshot is one click away. Open it as
``viewer.html#trace=<name>&step=<n>``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from spec import MACHINES

from .traces import steps

_PROLOG = re.compile(r"^.*?(?=<svg)", re.S)

HERE = Path(__file__).resolve().parent
STYLE = (HERE / "viewer.css").read_text(encoding="utf-8")
SCRIPT = (HERE / "viewer.js").read_text(encoding="utf-8")


def _svg(diagrams: Path, machine: str) -> str:
    return _PROLOG.sub("", (diagrams / f"{machine}.svg").read_text(encoding="utf-8"), count=1)


def viewer_data(traces: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """What the page embeds: per trace its title, configuration and the viewer's steps."""
    out = {}
    for name, trace in traces.items():
        shown = steps(trace)
        for entry, step in zip(shown, trace["steps"], strict=True):
            entry["snapshot"] = step["snapshot"]
        out[name] = {"name": name, "title": trace["title"], "config": trace["config"], "steps": shown}
    return {"traces": out}


def viewer_html(traces: dict[str, dict[str, Any]], diagrams: Path) -> str:
    """The whole page."""
    data = json.dumps(viewer_data(traces), sort_keys=True).replace("</", "<\\/")
    options = "".join(f'<option value="{n}">{n}</option>' for n in traces)
    panels = "".join(f'<div class="machine" data-machine="{m}"><h3>{m}</h3>{_svg(diagrams, m)}</div>' for m in MACHINES)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>teamproto trace viewer</title>'
        f"<style>{STYLE}</style></head><body>\n"
        '<header><select id="pick" aria-label="trace">' + options + "</select> "
        '<button id="first" title="first step">|◀</button><button id="prev" title="previous step (←)">◀</button>'
        '<button id="next" title="next step (→)">▶</button><button id="last" title="last step">▶|</button> '
        '<span id="counter"></span><div id="action"></div><div id="title"></div></header>\n'
        '<main><div id="side"><b>Steps</b><ol id="list" start="0"></ol><b>What this step changed</b>'
        '<div id="changes"></div><details><summary>Whole snapshot</summary><pre id="snapshot"></pre></details></div>'
        f'<div id="machines">{panels}</div></main>\n'
        f'<script type="application/json" id="tp-data">{data}</script>\n<script>{SCRIPT}</script>\n</body></html>\n'
    )
