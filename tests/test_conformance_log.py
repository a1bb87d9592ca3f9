"""Log validation (issue 15): the reference's own audit logs are behaviours of the model; a log
edited to consume an approval twice is not, and the validator names that event.

Clause: APR-6, INV-1 (a second consume is no behaviour), AUD-5 (the audit log as the record).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import reference as r
from conformance._log import export_reference_log, validate
from model_tests.test_stateful import SqliteComparison, crash_at

ROOT = Path(__file__).resolve().parents[1]


def scripted_run(step: str) -> list[dict[str, object]]:
    """One of the model tests' scripted programs (crashed after ``step``) on SQLite, exported."""
    machine = SqliteComparison()
    try:
        crash_at(machine, step, caller=1)
        machine.request_and_approve(1)
        machine.tick(0)
        machine.monitor()
        machine.approved_call(0, None, "changed")
        machine.storage.close()
        return export_reference_log(machine.folder / "team.db")
    finally:
        machine.teardown()


@pytest.mark.clause("AUD-5", "REC-2")
@pytest.mark.parametrize("step", [s for s in r.APPROVAL_STEPS if s.split("/")[1] in ("record", "execution", "call")])
def test_the_reference_logs_are_behaviours_of_the_model(step: str) -> None:
    log = scripted_run(step)
    assert len(log) > 3
    assert validate(log[0], log[1:]) == {"ok": True, "events": len(log) - 1}


@pytest.mark.clause("APR-6", "INV-1")
def test_a_log_that_consumes_an_approval_twice_is_refused_naming_the_event(tmp_path: Path) -> None:
    log = scripted_run("approval.consume/outcome")
    index = next(i for i, event in enumerate(log) if event.get("event") == "approval.consumed")
    edited = [*log[: index + 1], dict(log[index]), *log[index + 1 :]]
    path = tmp_path / "edited.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in edited))
    out = subprocess.run(
        [sys.executable, "-m", "teamproto._cli", "conformance", "--log", str(path), "--json"],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )  # fmt: skip
    verdict = json.loads(out.stdout)
    assert out.returncode == 1 and verdict["index"] == index + 1 and verdict["event"]["event"] == "approval.consumed"
    assert any("consumed" in state for state in verdict["possible"])
    path.write_text("".join(json.dumps(e) + "\n" for e in log))
    again = subprocess.run(
        [sys.executable, "-m", "teamproto._cli", "conformance", "--log", str(path)],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )  # fmt: skip
    assert again.returncode == 0 and "a behaviour of the model" in again.stdout


def test_an_event_out_of_order_is_refused() -> None:
    log = scripted_run("approval.review/record")
    review = next(i for i, event in enumerate(log) if event.get("event") == "approval.approved")
    swapped = [*log[: review - 1], log[review], log[review - 1], *log[review + 1 :]]
    verdict = validate(swapped[0], swapped[1:])
    assert not verdict["ok"] and verdict["index"] == review - 1


@pytest.mark.clause("AUD-5", "REC-2")
def test_logs_of_runs_with_crashes_and_sigkills_validate(tmp_path: Path) -> None:
    """The reference driven by the suite's random programs (armed crashes, SIGKILLs, restarts on
    the same directory): each run's audit log is a behaviour of the model."""
    from conformance._run import Options, run_suite

    _, result = run_suite(
        Options(f"{sys.executable} -m reference.driver", data_dir=tmp_path, sections=("random programs",), programs=3)
    )
    assert result["exit"] == 0
    stores = sorted(tmp_path.glob("case-*/data/team.db"))
    assert len(stores) == 3
    for store in stores:
        log = export_reference_log(store)
        assert any(e.get("event") == "approval.consumed" for e in log)
        assert validate(log[0], log[1:])["ok"], store


def demo_log_validates(folder: Path) -> None:
    """``teamproto demo``'s log (a real clock, its times put on whole ticks by the export) is a
    behaviour of the model, through the command line; edited to consume its approval twice, it is
    refused naming the second consume. Called by the demo's own test (one demo run for both)."""
    exported = subprocess.run(
        [sys.executable, "-m", "teamproto._cli", "conformance", "--export-log", str(folder)],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )  # fmt: skip
    assert exported.returncode == 0, exported.stderr
    log = [json.loads(line) for line in exported.stdout.splitlines()]
    assert [e["event"] for e in log[1:]] == ["approval.requested", "approval.approved", "approval.consumed"]
    assert all(float(e["at"]) == int(e["at"]) for e in log[1:])
    path = folder / "events.jsonl"
    path.write_text(exported.stdout)
    checked = subprocess.run(
        [sys.executable, "-m", "teamproto._cli", "conformance", "--log", str(path), "--json"],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )  # fmt: skip
    assert checked.returncode == 0 and json.loads(checked.stdout) == {"ok": True, "events": 3}, checked.stdout
    edited = [*log, dict(log[-1])]
    verdict = validate(edited[0], edited[1:])
    assert not verdict["ok"] and verdict["index"] == 4 and verdict["event"]["event"] == "approval.consumed"


HEADER = {"format": "teamproto-events/1", "members": ["m0", "m1"], "tasks": ["t0", "t1"], "lead": "lead"}


def _event(event: str, actor: str, at: float, **extra: object) -> dict[str, object]:
    return {"event": f"approval.{event}", "subject": "a-1", "actor": actor, "at": at, **extra}


GOOD = [_event("requested", "m0", 0.0, ttl_seconds=1), _event("approved", "lead", 1.0), _event("consumed", "m0", 1.0)]
"""Requested at 0 with a ttl of 1, approved and consumed at its deadline's instant (INV-12)."""

BAD = {
    "self-approval": (1, _event("approved", "m0", 1.0)),  # APR-4: only the responder reviews
    "another-member-consumes": (2, _event("consumed", "m1", 1.0)),  # APR-5: only its requester
    "a-member-expires-it": (1, _event("expired", "m0", 2.0)),  # INV-12: the monitor's move
    "review-after-the-deadline": (1, _event("approved", "lead", 5.0)),  # APR-4
    "consume-after-the-deadline": (2, _event("consumed", "m0", 2.0)),  # APR-5
    "time-goes-back": (1, _event("approved", "lead", -1.0)),
}
"""Each case: the index of GOOD's event it replaces, and the event put there."""


@pytest.mark.clause("APR-4", "APR-5", "INV-12", "AUD-5")
def test_a_log_of_a_healthy_run_by_hand_validates() -> None:
    assert validate(HEADER, GOOD) == {"ok": True, "events": 3}


@pytest.mark.clause("APR-4", "APR-5", "INV-12", "AUD-5")
@pytest.mark.parametrize("case", sorted(BAD))
def test_a_log_whose_actor_or_time_no_behaviour_has_is_refused_naming_the_event(case: str) -> None:
    """Who acted and when are part of the behaviour: a review by the requester itself, a
    consumption by another member, an expiry by a member, a review or a consumption after the
    deadline, a time before the last event's: each is refused at that event."""
    index, event = BAD[case]
    log = [*GOOD[:index], event, *GOOD[index + 1 :]]
    verdict = validate(HEADER, log)
    assert not verdict["ok"] and verdict["index"] == index + 1, verdict


GOOD_LOGS = {
    "consumed": GOOD,
    "rejected": [_event("requested", "m1", 0.0, ttl_seconds=1), _event("rejected", "lead", 0.0)],
    "cancelled": [_event("requested", "m1", 0.0, ttl_seconds=1), _event("cancelled", "m1", 1.0)],
    "expired": [_event("requested", "m0", 0.0, ttl_seconds=1), _event("expired", "monitor", 2.0)],
}
"""Good logs that between them hold every event kind of the format once at least."""
ACTORS = ["m0", "m1", "lead", "monitor", "ghost"]
"""Every member of the header, its lead, the monitor, and a name the header does not know."""


@pytest.mark.clause("APR-3", "APR-4", "APR-5", "APR-9", "INV-12", "AUD-5")
@pytest.mark.parametrize("actor", ACTORS)
@pytest.mark.parametrize(
    ("log", "index"),
    [(name, index) for name, events in sorted(GOOD_LOGS.items()) for index in range(len(events))],
)
def test_every_event_by_anyone_but_its_actor_is_refused_naming_the_event(log: str, index: int, actor: str) -> None:
    """Each event of each good log, said to be by each other actor, is refused at that event: the
    request by anyone but a member of the header (a name it does not know is no requester), a
    review by anyone but the lead, a consumption or cancellation by anyone but the requester, an
    expiry by anyone but the monitor. By its own actor the log still validates. (An outside
    review's plant that stopped checking who cancelled, and the healthy validator that took a
    request by a name outside the header as anyone's, both passed the hand-made cases above.)"""
    events = GOOD_LOGS[log]
    own = str(events[index]["actor"])
    requested_by_another_member = index == 0 and actor in HEADER["members"]
    edited = [*events[:index], {**events[index], "actor": actor}, *events[index + 1 :]]
    if requested_by_another_member:  # the whole log by that member: still a behaviour
        edited = [{**e, "actor": actor} if e["actor"] == own else e for e in events]
    verdict = validate(HEADER, edited)
    if actor == own or requested_by_another_member:
        assert verdict == {"ok": True, "events": len(events)}, verdict
    else:
        assert not verdict["ok"] and verdict["index"] == index + 1, verdict


def _about(subject: str, event: str, actor: str, at: float, **extra: object) -> dict[str, object]:
    return {**_event(event, actor, at, **extra), "subject": subject}


TWO = {
    "consumed": (
        [_about("A", "requested", "m0", 0.0, ttl_seconds=1), _about("B", "requested", "m0", 0.0, ttl_seconds=1)],
        [_about("A", "approved", "lead", 0.0), _about("A", "consumed", "m0", 1.0)],
    ),
    "cancelled": (
        [_about("A", "requested", "m0", 0.0, ttl_seconds=1), _about("B", "requested", "m0", 0.0, ttl_seconds=1)],
        [
            _about("A", "approved", "lead", 0.0),
            _about("B", "rejected", "lead", 0.0),
            _about("A", "cancelled", "m0", 1.0),
        ],
    ),
    "expired": (
        [_about("A", "requested", "m0", 0.0, ttl_seconds=1), _about("B", "requested", "m0", 1.0, ttl_seconds=1)],
        [_about("A", "expired", "monitor", 2.0)],
    ),
}
"""Two approvals of one requester, then events about A that B, in its status, could not have."""


@pytest.mark.clause("APR-4", "APR-5", "APR-9", "INV-1", "INV-12", "AUD-5")
@pytest.mark.parametrize("case", sorted(TWO))
def test_an_event_about_another_approval_is_refused_naming_the_event(case: str) -> None:
    """Events are matched to their own approval: the last event said to be about B — B never
    approved and consumed (INV-1), cancelled once rejected, expired before its deadline — is
    refused at that event, though A, by the same requester, could do it there. (An outside
    review's plant matched an event by its kind and requester alone, and every log above passed.)"""
    requests, events = TWO[case]
    assert validate(HEADER, [*requests, *events]) == {"ok": True, "events": len(requests) + len(events)}
    edited = [*requests, *events[:-1], {**events[-1], "subject": "B"}]
    verdict = validate(HEADER, edited)
    assert not verdict["ok"] and verdict["index"] == len(edited), verdict


@pytest.mark.clause("SHD-6", "INV-12", "AUD-5")
@pytest.mark.parametrize("order", ["AB", "BA"])
def test_approvals_expired_by_one_monitor_pass_validate_in_either_order(order: str) -> None:
    """One monitor pass expires every overdue approval (one transition of the model), and the log
    writes one event each, in the order its implementation wrote them: both orders validate, and a
    third expiry in the same pass, of an approval not yet overdue, does not. (The validator took
    only transitions that show one event, and refused a healthy log of two requests expiring
    together.)"""
    requests = [_about(s, "requested", m, 0.0, ttl_seconds=1) for s, m in (("A", "m0"), ("B", "m1"))]
    expired = [_about(s, "expired", "monitor", 2.0) for s in order]
    assert validate(HEADER, [*requests, *expired]) == {"ok": True, "events": 4}
    late = [*requests, _about("C", "requested", "m0", 1.0, ttl_seconds=1), *expired]
    verdict = validate(HEADER, [*late, _about("C", "expired", "monitor", 2.0)])
    assert not verdict["ok"] and verdict["index"] == 6, verdict


@pytest.mark.clause("APR-1", "APR-3", "AUD-5")
def test_a_request_by_a_member_that_holds_no_task_is_refused() -> None:
    """Who requested is part of the match: with one task, only its holder requests; a second
    member's request is no behaviour, though the first member could make it (an outside review
    stopped comparing the requester, and every log above passed)."""
    header = {**HEADER, "tasks": ["t0"]}
    log = [
        _about("A", "requested", "m0", 0.0, ttl_seconds=1),
        _about("B", "requested", "m1", 0.0, ttl_seconds=1),
    ]
    verdict = validate(header, log)
    assert not verdict["ok"] and verdict["index"] == 2, verdict
    assert validate(header, [log[0], {**log[1], "actor": "m0"}]) == {"ok": True, "events": 2}
