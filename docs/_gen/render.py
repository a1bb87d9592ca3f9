"""Render any trace in the explorer's format (``teamproto-trace/1``) — a counterexample written by
``teamproto check --trace-out``, the run a failing model test writes, a random walk — as a sequence
diagram and in a trace viewer of its own::

    python -m docs._gen.render trace.json [more.json …] --out DIR

writes ``DIR/<name>.svg`` for each trace and ``DIR/viewer.html`` holding them all.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from .build import ROOT
from .sequence import sequence_svg
from .viewer import viewer_html


def load(path: Path) -> dict[str, Any]:
    """A trace file, named after the file and titled by its violation when it has none."""
    trace: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    if trace.get("format") != "teamproto-trace/1":
        raise ValueError(f"{path}: not a teamproto-trace/1 file (format {trace.get('format')!r})")
    trace.setdefault("name", path.stem.replace("-", "_"))
    violation = trace.get("violation") or {}
    trace.setdefault("title", " ".join(str(violation.get(k, "")) for k in ("clause", "invariant", "message")).strip())
    return trace


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description="render teamproto traces as sequence diagrams and a viewer")
    parser.add_argument("traces", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    try:
        traces = {t["name"]: t for t in (load(p) for p in args.traces)}
    except (OSError, ValueError) as error:  # json.JSONDecodeError is a ValueError
        print(f"render: {error}", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    for name, trace in traces.items():
        (args.out / f"{name}.svg").write_text(sequence_svg(trace), encoding="utf-8")
    (args.out / "viewer.html").write_text(viewer_html(traces, ROOT / "diagrams"), encoding="utf-8")
    print(f"wrote {len(traces)} sequence diagram(s) and viewer.html to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
