"""A drain with several jobs: every cancellable one asked once, every one waited for, all of them named.

The model bounds a member to one job, so its comparison with the reference never sees a second
one; these tests give a member one to four jobs, cancellable or not, ending in any order (an
outside review's plant that kept only the last cancelled job in ``waited_job_ids`` passed every
test with one job).

Clause: SHD-3, SHD-4, SHD-5, JOB-1, JOB-2, AUD-2.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from reference import Harness, InProcessJobRunner, ManualClock, MemoryStorage, RecordingTool
from spec.ids import message_id

JOBS = st.lists(st.booleans(), min_size=1, max_size=4).flatmap(
    lambda cancellable: st.tuples(st.just(cancellable), st.permutations(range(len(cancellable))))
)
"""Each job's ``cancellable``, and the order in which the jobs exit."""


@settings(max_examples=60, deadline=None)
@given(JOBS)
def test_a_drain_waits_for_every_job_and_names_every_job_it_asked_to_stop(jobs: tuple[list[bool], list[int]]) -> None:
    """Member m0 holds t0 and runs the jobs; a shutdown drains it, one pass per job exit. Each
    pass before the last exit is not ready and names exactly the jobs still busy; every
    cancellable job is signalled once (JOB-1), a non-cancellable one never (JOB-2, SHD-4); the task
    is released only when none runs (INV-5); the request and its ``shutdown_ack`` name every job
    asked to stop (AUD-2), in order, none twice."""
    cancellable, exit_order = jobs
    runner = InProcessJobRunner()
    h = Harness(MemoryStorage(), ManualClock(1000.0), [RecordingTool().tool()], jobs=runner)
    h.add_member("m0", ["deploy"])
    h.add_task("t0")
    h.claim("m0", "t0")
    ids = [f"j{n}" for n in range(len(cancellable))]
    for job_id, flag in zip(ids, cancellable, strict=True):
        h.jobs.start("m0", job_id, "make build", cancellable=flag)
    pid = h.shutdowns.request("lead", "m0", "scale down")
    h.shutdowns.begin_drain("m0", message_id(pid, "request"))
    asked = sorted(job_id for job_id, flag in zip(ids, cancellable, strict=True) if flag)
    running = set(ids)
    for index in exit_order:
        report = h.shutdowns.drain_pass("m0")
        assert report == {"ready": False, "waiting": sorted(running)}
        assert h.read("task", "t0").doc["status"] == "claimed", "released while a job still runs (INV-5)"
        runner.finish(ids[index], -15 if cancellable[index] else 0)
        h.jobs.poll()
        running.discard(ids[index])
    assert h.shutdowns.drain_pass("m0") == {"ready": True, "released": "t0"}
    assert sorted(runner.cancelled) == asked and len(runner.cancelled) == len(asked)
    request = h.read("shutdown_request", pid).doc
    assert (request["status"], request["waited_job_ids"], request["released_task_id"]) == ("completed", asked, "t0")
    acks = [
        row.doc["message"]["body"]
        for row in h.storage.scan("outbox_entry")
        if row.doc["message"]["message_type"] == "shutdown_ack"
    ]
    assert acks == [{"protocol_id": pid, "released_task_id": "t0", "waited_job_ids": asked}]
    outcomes = {job_id: h.read("job", job_id).doc["status"] for job_id in ids}
    assert outcomes == {
        job_id: ("cancelled" if flag else "succeeded") for job_id, flag in zip(ids, cancellable, strict=True)
    }
