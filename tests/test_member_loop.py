"""The member process's loop in-process, on a manual clock: which shutdown requests it handles, how
long its unit of work runs, and the exit code each way of stopping gives (SHD-2, SHD-9, XPR-1).

``tests/test_member_processes.py`` runs members as real processes; these are the loop's decisions
one at a time (an outside review planted each of these in the loop, and every process test passed).

Clause: SHD-2, SHD-9, XPR-1, MEM-3.
"""

from __future__ import annotations

import pytest

from reference import Harness, InProcessJobRunner, ManualClock, MemoryStorage
from reference._member_process import EXIT_NOT_RUNNING, EXIT_STALE, MemberProcess
from reference._runtime import ScriptedModel, ToolCall, Turn


def team(*members: str) -> tuple[Harness, ManualClock]:
    clock = ManualClock(0.0)
    h = Harness(MemoryStorage(), clock, jobs=InProcessJobRunner())
    for member in members:
        h.add_member(member, [])
    return h, clock


@pytest.mark.clause("SHD-9", "TSK-3")
def test_a_unit_of_work_counts_from_the_latest_claim_of_its_task() -> None:
    """A task released and claimed again long after its first claim: the unit's hard deadline
    counts from the claim that holds it now, and a step runs (outside review 41 counted from the
    first claim: the step was refused as past its deadline, and the suspension that followed was
    refused as not due, killing the member)."""
    h, clock = team("m0")
    h.add_task("t0")
    h.claim("m0", "t0")
    member = MemberProcess(h, "m0", 1, ScriptedModel([Turn((ToolCall("note", {"x": 1}),))]), unit_seconds=60)
    member.release_own_task("t0")
    h.set_member_task("task.finish/member", "m0", None)
    clock.advance(100)  # past the first claim's unit deadline, well within the second's
    h.claim("m0", "t0")
    member.work("t0")
    task = h.task_row("t0").doc
    assert (task["status"], task["owner_id"]) == ("claimed", "m0")
    assert (task["checkpoint"]["state"]["step"], task["checkpoint"]["saved_at"]) == (1, 100.0)  # the step ran
    assert h.snapshot()["message"] == []  # and nothing was suspended


@pytest.mark.clause("SHD-2", "MEM-3")
def test_a_member_handles_only_the_shutdown_requests_addressed_to_it() -> None:
    """The Lead asks m0 to stop: m1's pass reads the request and leaves it alone, still running;
    m0's pass begins m0's drain (outside review 41 let every member handle every pending request:
    a bystander's pass was refused, and its process stopped)."""
    h, _ = team("m0", "m1")
    pid = h.shutdowns.request(h.lead_id, "m0", "scale-down", "scale down", ttl_seconds=20)
    bystander = MemberProcess(h, "m1", 1, ScriptedModel([Turn(done=True)]))
    bystander.tick()
    assert [h.member(m)["status"] for m in ("m0", "m1")] == ["running", "running"] and bystander.log == []
    MemberProcess(h, "m0", 1, ScriptedModel([Turn(done=True)])).tick()
    assert (h.member("m0")["status"], h.member("m0")["shutdown_request_id"]) == ("draining", pid)
    assert h.member("m1")["status"] == "running"


@pytest.mark.clause("XPR-1", "SHD-10")
@pytest.mark.parametrize(("case", "code"), [("restarted", EXIT_STALE), ("lapsed", EXIT_NOT_RUNNING)])
def test_each_way_a_member_is_stopped_under_its_process_has_its_exit_code(case: str, code: int) -> None:
    """A process whose incarnation was superseded by a restart exits ``EXIT_STALE``; one whose
    member lapsed exits ``EXIT_NOT_RUNNING`` (outside review 41 swapped them, and no test read an
    exit code but the clean one)."""
    h, clock = team("m0")
    clock.advance(10)
    h.members.lapse("m0", 1)
    if case == "restarted":
        h.members.inspect("m0")
        h.restart_member("m0")  # incarnation 2 exists; this process is incarnation 1
    member = MemberProcess(h, "m0", 1, ScriptedModel([Turn(done=True)]))
    assert member.run() == code
    assert EXIT_STALE != EXIT_NOT_RUNNING
