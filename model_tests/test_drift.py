"""A drift of a configuration's pinned counts explains itself in behaviour (issue 19).

Clause: REC-2, INV-12 (the manifest pins each configuration's reachable behaviour; a search that
outgrows its pin is stopped with a finding).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from spec import drift
from spec.explore import explore
from spec.model import Model, load_config, manifest


@pytest.fixture(scope="module")
def tiny() -> Any:
    return explore(Model(load_config("tiny")))


def test_the_pinned_behaviour_is_what_the_search_reaches(tiny: Any) -> None:
    """The generated part of the manifest is fresh (scripts/pin_manifest.py rebuilds it)."""
    pinned = manifest()["tiny"]
    assert drift.pin(tiny) == {key: pinned[key] for key in ("states", "transitions", "deadlocks", "reachable")}
    assert not drift.explain("tiny", pinned, tiny).drifted


def test_a_drift_names_what_became_reachable_with_a_shortest_witness(tiny: Any) -> None:
    pinned = dict(manifest()["tiny"])
    gone = "op approval.consume"
    pinned["reachable"] = [key for key in pinned["reachable"] if key != gone] + ["op plan.start"]
    pinned["states"] -= 1
    found = drift.explain("tiny", pinned, tiny)
    assert found.drifted
    assert list(found.gained) == [gone] and found.lost == ["op plan.start"]
    witness = found.gained[gone]
    assert witness[-1].startswith("approval.consume(") and len(witness) == 4  # claim, request, review, consume
    text = "\n".join(drift.describe(found))
    assert (
        "not a pass" in text
        and "shortest witness: task.claim(" in text
        and "no longer reachable: op plan.start" in text
    )
    assert json.loads(json.dumps(found.to_json()))["verdict"].startswith("a change of behaviour")


def test_an_unchanged_search_with_other_counts_still_drifts(tiny: Any) -> None:
    pinned = dict(manifest()["tiny"], transitions=1)
    found = drift.explain("tiny", pinned, tiny)
    assert found.drifted and not found.gained and not found.lost
    assert "only how they interleave changed" in "\n".join(drift.describe(found))


def test_a_search_that_outgrows_its_pin_stops_with_a_finding() -> None:
    """restart_keeps_incarnation makes fencing's search infinite; its bound ends it with a verdict."""
    pinned = manifest()["fencing"]
    bound = drift.state_bound(pinned)
    assert bound == 2 * pinned["states"]
    report = explore(Model(load_config("fencing"), "restart_keeps_incarnation"), max_states=bound)
    assert not report.complete
    finding = drift.outgrown("fencing", pinned, report)
    assert finding is not None and "outgrew" in finding and "member.restart(" in finding
    assert drift.outgrown("fencing", pinned, explore(Model(load_config("fencing")))) is None


def test_the_check_command_reports_a_drift_in_json(monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    from spec import check
    from teamproto import _check_cli
    from teamproto._cli import main

    pinned = {**manifest(), "tiny": dict(manifest()["tiny"], reachable=["op no.such"])}
    from spec.model import _config

    monkeypatch.setattr(check, "manifest", lambda: pinned)
    monkeypatch.setattr(_check_cli, "manifest", lambda: pinned)
    monkeypatch.setattr(_config, "manifest", lambda: pinned)  # pins(): a configuration's, or a part's
    assert main(["check", "--config", "tiny", "--json", "--jobs", "1"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["manifest_drift"] == ["tiny"] and not out["ok"]
    detail = out["manifest_drift_detail"][0]
    assert detail["no_longer_reachable"] == ["op no.such"]
    assert {"behaviour": "op task.claim", "witness": ["task.claim(member=0, task=0)"]} in detail["newly_reachable"]


def test_the_coverage_gate_fails_a_suite_that_never_crashes_at_some_point() -> None:
    """``spec.check.summarize``: runs that together take every edge of every machine and crash at
    every crash point but one pass no coverage gate: with coverage required (the default suite) the
    verdict fails and names the point, as it would name a missing edge (REC-2 rests on every crash
    point being tried; outside review 44 P18: the gate read only the edges). Not asked, or for a
    mutant, coverage does not count. The reports are simulations, which pin no counts to drift from."""
    from spec.check import all_edges, summarize
    from spec.explore import Report
    from spec.model import CRASH_POINTS

    missed = CRASH_POINTS[len(CRASH_POINTS) // 2]
    config = load_config("tiny")
    edges = Report("tiny", None, simulation=True, edges_taken=set(all_edges()))
    crashes = Report("tiny", None, simulation=True, crashed_at={p for p in CRASH_POINTS if p != missed})
    runs = [(edges, 1.0, config), (crashes, 1.0, config)]
    verdict = summarize(runs, coverage_required=True, mutant=None)
    assert (verdict.missing_edges, verdict.missing_crash_points, verdict.ok) == ([], [missed], False)
    assert summarize(runs, coverage_required=False, mutant=None).ok
    assert summarize(runs, coverage_required=True, mutant="consume_without_digest_check").ok
    crashes.crashed_at.add(missed)
    assert summarize(runs, coverage_required=True, mutant=None).ok
