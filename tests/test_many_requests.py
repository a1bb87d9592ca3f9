"""A drain or an inspection meets several open requests of its member at once (XPR-2, SHD-10).

The pinned configurations give a member one approval and one plan at most, so the model's
comparison with the reference never sees a member with two open requests of a kind; here a member
has up to four approvals and three plans in any status a drain can meet, beside another member's
open requests (the review that found a drain naming only the last of several jobs: the model's
bounds hide what a loop over several does).

Clause: XPR-2, SHD-10, XPR-5, INV-12.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from conformance._translate import plan_document
from reference import MemoryStorage
from spec.ids import message_id
from tests.conftest import Team

APPROVALS = st.lists(st.sampled_from(["requested", "approved", "rejected"]), max_size=4)
PLANS = st.lists(st.sampled_from(["draft", "pending", "approved"]), max_size=3)


def _approval(team: Team, member: str, n: int, status: str) -> str:
    h = team.harness
    pid = str(h.approvals.request(team.ctx(member, f"call-{member}-{n}"), "deploy", {"path": f"srv/{n}"}))
    if status != "requested":
        h.approvals.review("lead", pid, status, "ok")
    return pid


def _plan(team: Team, member: str, n: int, status: str) -> str:
    h, ctx = team.harness, team.ctx(member, f"plan-call-{member}-{n}")
    pid = str(h.plans.draft(ctx, f"plan-{member}-{n}", plan_document(0, 0, 1, 60.0)))
    if status != "draft":
        h.plans.submit(ctx, pid)
    if status == "approved":
        h.plans.decide("lead", pid, "approved")
    return pid


@settings(max_examples=40, deadline=None)
@given(APPROVALS, PLANS, st.sampled_from(["drain", "lost"]))
def test_every_open_request_of_the_member_ends_and_no_other(approvals: list[str], plans: list[str], how: str) -> None:
    """m0's requested approvals end ``cancelled`` and its draft and pending plans ``withdrawn``,
    each with the reason that names what became of m0 (``member_draining`` for a drain,
    ``crashed`` for a lost member inspected, XPR-5), and each decision once in the team log; its
    approved approvals and plans, and every request of m1, stay as they were."""
    team = Team(MemoryStorage())
    h = team.harness
    mine = {_approval(team, "m0", n, s): s for n, s in enumerate(approvals)}
    my_plans = {_plan(team, "m0", n, s): s for n, s in enumerate(plans)}
    others = {_approval(team, "m1", 0, "requested"): "requested", _plan(team, "m1", 0, "pending"): "pending"}
    if how == "drain":
        pid = h.shutdowns.request("lead", "m0", "scale down")
        h.shutdowns.begin_drain("m0", message_id(pid, "request"))
        reason = "member_draining"
    else:
        h.members.lapse("m0")
        h.members.inspect("m0")
        reason = "crashed"
    for key, was in mine.items():
        doc = h.read("operation_approval", key).doc  # type: ignore[union-attr]
        ended = was == "requested"
        assert doc["status"] == ("cancelled" if ended else was), (key, was, doc["status"])
        assert doc.get("reason") == (reason if ended else doc.get("reason"))
    for key, was in my_plans.items():
        doc = h.read("plan_approval", key).doc  # type: ignore[union-attr]
        ended = was in ("draft", "pending")
        assert doc["status"] == ("withdrawn" if ended else was), (key, was, doc["status"])
        if ended:
            assert doc["reason"] == reason
    for key, was in others.items():
        kind = "operation_approval" if h.read("operation_approval", key) is not None else "plan_approval"
        assert h.read(kind, key).doc["status"] == was  # type: ignore[union-attr]
    logged = [row.doc for row in h.storage.scan("audit_entry")]
    for key in [*mine, *my_plans]:
        ends = [e for e in logged if e["subject_id"] == key and e["event"].endswith((".cancelled", ".withdrawn"))]
        assert len(ends) == (1 if (mine.get(key) == "requested" or my_plans.get(key) in ("draft", "pending")) else 0)
