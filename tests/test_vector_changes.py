"""``teamproto conformance --write-vectors`` says what a rebuild changed: a protocol designer's
edit that changes no behaviour moves only the source stamp; one that does names the vectors it
added, removed and changed, and the covered items gained and lost.

Clause: MSG-4.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from conformance._vectors import VECTORS, render, what_changed

TINY = json.loads((VECTORS / "tiny.json").read_text(encoding="utf-8"))


def _with(change: Any) -> str:
    document = copy.deepcopy(TINY)
    change(document)
    return render(document)


@pytest.mark.clause("MSG-4")
def test_a_rebuild_says_whether_only_the_stamp_moved_or_which_vectors_changed() -> None:
    old = render(TINY)
    assert what_changed(old, _with(lambda d: d.update(source="0" * 64))) == "only the source stamp (no vector changed)"
    first = TINY["vectors"][0]["name"]
    changed = what_changed(old, _with(lambda d: d["vectors"][0]["steps"].pop()))
    assert changed == f"1 vector(s) changed ({first})"
    removed = what_changed(old, _with(lambda d: (d["vectors"].pop(0), d["covers"].pop(0))))
    assert removed == f"1 vector(s) removed ({first}); 1 covered item(s) lost"
    added = what_changed(old, _with(lambda d: d["vectors"].append({**d["vectors"][0], "name": "tiny-999"})))
    assert added == "1 vector(s) added (tiny-999)"
    assert what_changed(None, old) == "new file"
    assert what_changed("{", old) == "rewritten (the old file was not JSON)"
