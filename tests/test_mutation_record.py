"""The mutation record is in step with the tool's output and the source (DESIGN rule 7).

``scripts/mutation.py`` writes the surviving mutants of its last run to ``mutation/survivors.json``
(mutmut 3's names and diffs); ``mutation/equivalent.json`` gives, for each, why it cannot change
what any caller or store sees. Every survivor must be explained, nothing explained may be gone,
and every line a survivor changed must still be in the source as it is now — else the record is
stale: run ``scripts/mutation.py`` again.
"""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RECORD = ROOT / "mutation"


def load(name: str) -> dict[str, dict[str, str]]:
    return json.loads((RECORD / name).read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def test_every_survivor_is_explained_and_every_explanation_is_a_survivor() -> None:
    survivors = {name for mutants in load("survivors.json").values() for name in mutants}
    equivalent = load("equivalent.json")
    assert sorted(survivors - equivalent.keys()) == [], "survivors without a reason: kill them or explain them"
    assert sorted(equivalent.keys() - survivors) == [], "explained mutants that no longer survive: drop them"
    assert all(entry["reason"].strip() for entry in equivalent.values())


def test_the_recorded_survivors_match_the_source_as_it_is() -> None:
    for module, mutants in load("survivors.json").items():
        source = (ROOT / module).read_text(encoding="utf-8")
        for name, diff in mutants.items():
            removed = [line[1:].strip() for line in diff.splitlines() if line.startswith("-")]
            missing = [line for line in removed if line and line not in source]
            assert not missing, f"{name}: {missing} is no longer in {module}; run scripts/mutation.py again"
