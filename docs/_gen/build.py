"""What the site needs beyond the committed pages, generated at every build into ``docs/_generated/``
(not committed): the traces as JSON, their sequence diagrams as SVG, and the trace viewer."""

from __future__ import annotations

import json
from pathlib import Path

from .sequence import sequence_svg
from .traces import all_traces
from .viewer import viewer_html

ROOT = Path(__file__).resolve().parents[2]


def build_generated(docs: Path, diagrams: Path = ROOT / "diagrams") -> dict[str, Path]:
    """Write traces, sequence diagrams and ``extra/viewer.html`` under ``docs/_generated``."""
    out = docs / "_generated"
    for sub in ("traces", "sequences", "extra"):
        (out / sub).mkdir(parents=True, exist_ok=True)
    traces = all_traces()
    written = {}
    for name, trace in traces.items():
        _write(out / "traces" / f"{name}.json", json.dumps(trace, indent=1, sort_keys=True) + "\n")
        _write(out / "sequences" / f"{name}.svg", sequence_svg(trace))
    written["viewer"] = out / "extra" / "viewer.html"
    _write(written["viewer"], viewer_html(traces, diagrams))
    return written


def _write(path: Path, text: str) -> None:
    if not path.exists() or path.read_text(encoding="utf-8") != text:  # unchanged files keep their time
        path.write_text(text, encoding="utf-8")
