"""``teamproto demo``: a Lead and two members as real OS processes over one SQLite file (item 9)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.test_conformance_log import demo_log_validates

TIMEOUT = 120


def demo(*args: str, mutant: str = "", tmp: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TEAMPROTO_MUTANT": mutant, **({"TMPDIR": str(tmp)} if tmp is not None else {})}
    command = [sys.executable, "-m", "teamproto", "demo", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT, env=env, check=False)


def first(events: list[dict[str, Any]], actor: str, event: str) -> int:
    return next(i for i, e in enumerate(events) if e["actor"] == actor and e["event"].startswith(event))


@pytest.mark.clause("SHD-3", "SHD-5", "SHD-8", "SHD-10", "SHD-7", "MEM-1", "APR-5")
def test_the_demo_drains_acks_loses_a_member_and_keeps_every_invariant(tmp_path: Path) -> None:
    """The timeline shows approval, drain → release → ack, member_lost and the re-claim, and the
    command exits 0 with every invariant held; --keep leaves the database. Clause: SHD-5"""
    kept = tmp_path / "kept"
    result = demo("--json", "--keep", str(kept))
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert report["ok"] and report["invariant_violations"] == [] and report["scenario_failures"] == []
    assert len(report["invariants_checked"]) >= 7
    events = report["events"]
    assert first(events, "lead", "approved") < first(events, "m0", "consumed")
    drain = first(events, "m0", "draining")
    assert drain < first(events, "m0", "released") < first(events, "bus", "shutdown_ack m0 → lead")
    lost = [e for e in events if e["actor"] == "bus" and e["event"].startswith("member_lost")]
    assert len(lost) == 1
    assert first(events, "lead", "needs_inspection") < first(events, "lead", "restarted m1 as incarnation 2")
    assert first(events, "m1#2", "SIGTERM: shutting down") < first(events, "bus", "shutdown_notice m1")
    assert report["database"] == str(kept / "team.db") and (kept / "team.db").exists()
    demo_log_validates(kept)  # its log is a behaviour of the model (issue 15: --export-log, --log)
    again = demo("--keep", str(kept))
    assert again.returncode == 2 and again.stdout == ""
    assert len(again.stderr.strip().splitlines()) == 1 and "team.db exists" in again.stderr
    (tmp_path / "file").write_text("")
    refused = demo("--json", "--keep", str(tmp_path / "file"))
    assert refused.returncode == 2 and "not a folder" in refused.stderr
    assert json.loads(refused.stdout)["error"]["type"] == "UsageError"  # --json: always JSON
    for args in (["--keep", str(tmp_path / "file" / "sub")], ["--json", "--keep", str(tmp_path / "file" / "sub")]):
        unmade = demo(*args)
        lines = unmade.stderr.splitlines()
        assert unmade.returncode == 2 and len(lines) == 1, unmade.stderr
        assert lines[0].startswith("teamproto: error (definite): --keep ") and "cannot make the folder" in lines[0]
        assert (json.loads(unmade.stdout)["ok"] is False) if "--json" in args else unmade.stdout == ""


@pytest.mark.clause("SHD-10")
def test_the_demo_fails_when_a_clean_exit_owes_a_member_lost(tmp_path: Path) -> None:
    """With a mutant that makes a finished drain owe member_lost, the demo exits 1 and says why:
    its verdict can fail. Without ``--keep`` it leaves no folder behind, failed or not (an outside
    review kept every temporary one). Clause: SHD-10"""
    result = demo("--json", mutant="clean_exit_member_lost", tmp=tmp_path)
    assert list(tmp_path.iterdir()) == [] and json.loads(result.stdout)["database"] is None
    assert result.returncode == 1, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert not report["ok"] and report["database"] is None
    assert any("member_lost" in failure for failure in report["scenario_failures"])
