"""``python -m docs._gen [--check]``: regenerate the reference pages of ``docs/reference/`` from the
spec, or (``--check``) exit 1 naming each stale one. ``scripts/docs`` runs it before the build."""

from __future__ import annotations

import sys
from pathlib import Path

from .pages import stale_pages, write_pages

DOCS = Path(__file__).resolve().parents[1]


def main(argv: list[str]) -> int:
    if argv == ["--check"]:
        stale = stale_pages(DOCS)
        for path in stale:
            print(f"stale {path.relative_to(DOCS.parent)} — run `scripts/docs` and commit the result", file=sys.stderr)
        if not stale:
            print("generated reference pages are up to date")
        return 1 if stale else 0
    if argv:
        print("usage: python -m docs._gen [--check]", file=sys.stderr)
        return 2
    changed = write_pages(DOCS)
    print(f"{len(changed)} generated page(s) changed in docs/reference")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
