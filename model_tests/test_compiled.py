"""The compiled explorer finds exactly what the interpreted one finds (``spec/_compiled.py``).

Clause: INV-1 … INV-12 (``teamproto check`` runs the compiled modules when a fresh build exists:
they must report the same states, transitions, violations with the same shortest traces, edges,
crash points and deadlocks as the source they are compiled from, run interpreted).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from spec import _compiled
from spec.explore import Report, explore
from spec.model import Model, load_config
from spec.simulate import Plan, simulate

RUNS = [
    ("tiny", None),
    ("tiny", "consume_without_digest_check"),
    ("plan", "execute_plan_twice"),
    ("shutdown", None),
    ("shutdown", "finish_keeps_task"),
    ("pair", None),
    ("fencing", "stale_incarnation_accepted"),
    ("plan_drain", "resumed_drain_keeps_requests"),
]

WALKS = 200


def _summary(report: Report) -> dict[str, Any]:
    return {
        "states": report.states,
        "transitions": report.transitions,
        "depth": report.depth,
        "findings": json.loads(json.dumps(report.findings())),
        "traces": {name: [str(action) for action, _ in v.trace] for name, v in sorted(report.violations.items())},
    }


def _all() -> list[dict[str, Any]]:
    out = [_summary(explore(Model(load_config(name), mutant))) for name, mutant in RUNS]
    out.append(_summary(simulate(Model(load_config("standard")), Plan(walks=WALKS))))
    return out


def test_the_compiled_explorer_finds_what_the_interpreted_one_finds() -> None:
    if not _compiled.ACTIVE:
        if os.environ.get("CI"):
            pytest.fail("CI runs the compiled explorer: scripts/setup builds it (scripts/compile.py)")
        pytest.skip("no fresh compiled build (scripts/compile.py)")
    assert Path(sys.modules["spec.explore"].__file__ or "").suffix == ".so"
    compiled = _all()
    assert Path(sys.modules["spec._flat_explore"].__file__ or "").suffix == ".so"  # pair ran on plain tuples
    pure = subprocess.run(
        [sys.executable, "-c", "import json, model_tests.test_compiled as t; print(json.dumps(t._all()))"],
        env={**os.environ, "TEAMPROTO_PURE": "1"},
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[1],
    )
    interpreted = json.loads(pure.stdout)
    for (name, mutant), got, want in zip([*RUNS, ("standard", "walks")], compiled, interpreted, strict=True):
        assert got == want, f"{name} {mutant}: compiled and interpreted differ"
    assert any(run["traces"] for run in compiled), "the runs should include violations, or this test shows nothing"


def test_an_edited_source_is_never_shadowed_by_a_stale_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The build is used only while its stamp is the digest of the source as it is now: any edit
    of any module changes that digest."""
    digest = _compiled.source_digest()
    copy = tmp_path / "spec"
    for path in _compiled.SOURCE.rglob("*.py"):
        target = copy / path.relative_to(_compiled.SOURCE)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(path.read_bytes())
    monkeypatch.setattr(_compiled, "SOURCE", copy)
    assert _compiled.source_digest() == digest
    for name in ("model/_state.py", "invariants.py"):  # one compiled module's dependency, one compiled module
        edited = copy / name
        original = edited.read_bytes()
        edited.write_bytes(original + b"\n# edited\n")
        assert _compiled.source_digest() != digest, name
        edited.write_bytes(original)
    monkeypatch.setenv("TEAMPROTO_PURE", "1")
    assert not _compiled._fresh()


def test_an_incomplete_build_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A build missing its runtime library or a module would fail on import: it is not used."""
    if not _compiled.ACTIVE:
        pytest.skip("no fresh compiled build (scripts/compile.py)")
    assert _compiled._complete()
    monkeypatch.setattr(_compiled, "RUNTIME", tmp_path)
    assert not _compiled._complete()
    monkeypatch.undo()
    monkeypatch.setattr(_compiled, "COMPILED", (*_compiled.COMPILED, "spec/model/_missing.py"))
    assert not _compiled._complete()
