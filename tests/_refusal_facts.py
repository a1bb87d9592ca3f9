"""Every refusal's facts, checked against the store at the moment it is made (DESIGN rule 8).

A refusal is what an agent reads to decide what to do next, so the facts it states — the record's
status, its deadline and the time now, the requester, the incarnation it was made for and the
current one — must be the store's. Word-for-word tests pin the text of some refusals in some
states; an outside review swapped two arguments of a plan's expiry (``PlanExpired(pid, now,
deadline, …)``: "its ttl ran out at <now> (now <deadline>)") and every test passed, since the plan
refusals were checked by type alone.

So the facts are checked where every test makes them: :func:`watching` wraps the constructor of
each refusal class named in :data:`RULES`; when the reference constructs one inside a harness
operation (the harness is found on the calling frames), the constructor's arguments — bound to
their parameter names — are checked against that harness's snapshot by the class's rule. A
problem is kept and the test fails at its end (``conftest.py``), so a test that expects the
refusal still sees it, and one that catches refusals broadly cannot hide the problem. A refusal
made with no harness on the stack (a test that builds one, the documentation's examples) is not
checked, nor one made on another thread than the main one: the interleaving explorer's instances
run on threads it schedules at every store access, and a snapshot taken there would add accesses
of its own (and see the other instance's operation half done; its linearizability check judges
what those refusals say). ``tests/test_refusal_facts.py`` holds that every refusal class has a rule or a reason.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import inspect
import os
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

import reference as r
from spec.schemas import RECORD_SCHEMAS

Facts = dict[str, Any]
Snap = dict[str, Any]
Rule = Callable[[Facts, Snap, "r.Harness"], list[str]]


def _one(snap: Snap, kind: str, field: str, value: object) -> dict[str, Any] | None:
    return next((doc for doc in snap[kind] if doc.get(field) == value), None)


def _record(snap: Snap, kind: str, field: str, value: object) -> dict[str, Any]:
    """The record the refusal names: a refusal naming a record the store lacks misstates it."""
    doc = _one(snap, kind, field, value)
    if doc is None:
        raise LookupError(f"{kind} {value} is not in the store")
    return doc


def _approval(snap: Snap, facts: Facts) -> dict[str, Any]:
    return _record(snap, "operation_approval", "protocol_id", facts["protocol_id"])


def _protocol(snap: Snap, facts: Facts) -> dict[str, Any]:
    """An approval's or a plan's record (a review refusal names either)."""
    for kind in ("operation_approval", "plan_approval"):
        if (doc := _one(snap, kind, "protocol_id", facts["protocol_id"])) is not None:
            return doc
    raise LookupError(f"no approval or plan {facts['protocol_id']} is in the store")


def _plan(snap: Snap, plan_id: str) -> dict[str, Any]:
    return _record(snap, "plan_approval", "protocol_id", plan_id)


def _member(snap: Snap, member_id: str) -> dict[str, Any]:
    return _record(snap, "member", "member_id", member_id)


def _task(snap: Snap, task_id: str) -> dict[str, Any]:
    return _record(snap, "task", "task_id", task_id)


def _same(name: str, stated: object, stored: object) -> list[str]:
    return [] if stated == stored else [f"{name} is {stated!r}, the store has {stored!r}"]


def _differ(a: str, b: str, facts: Facts) -> list[str]:
    return [] if facts[a] != facts[b] else [f"{a} and {b} are both {facts[a]!r}: nothing was refused"]


def _now(facts: Facts, snap: Snap) -> list[str]:
    return _same("now", facts["now"], snap["clock"])


def _past(facts: Facts) -> list[str]:
    return [] if facts["now"] > facts["deadline"] else [f"now {facts['now']} is not past deadline {facts['deadline']}"]


def _approval_field(name: str, field: str) -> Rule:
    return lambda f, s, h: _same(name, f[name], _approval(s, f)[field])


def _approval_other(name: str, field: str, other: str) -> Rule:
    return lambda f, s, h: _same(name, f[name], _approval(s, f)[field]) + _differ(name, other, f)


def _status_of_actor(f: Facts, s: Snap, h: r.Harness) -> list[str]:
    status = _member(s, f["actor"])["status"]
    return _same("status", f["status"], status) + ([] if status != "running" else ["the member is running"])


def _stale_plan(f: Facts, s: Snap, h: r.Harness) -> list[str]:
    plan = _plan(s, f["plan_id"])
    current = _member(s, plan["requester_id"])["incarnation"]
    return (
        _same("made_for", f["made_for"], plan["requester_incarnation"])
        + _same("current", f["current"], current)
        + _differ("made_for", "current", f)
    )


def _execution_status(f: Facts, s: Snap, h: r.Harness) -> list[str]:
    execution = _one(s, "plan_execution", "plan_id", f["plan_id"])
    return _same("status", f["status"], None if execution is None else execution["status"])


def _message_status(f: Facts, s: Snap, h: r.Harness) -> list[str]:
    message = next((m for m in s["message"] if m["message"]["message_id"] == f["message_id"]), None)
    return _same("status", f["status"], None if message is None else message["status"])


def _profile(f: Facts, s: Snap, h: r.Harness) -> list[str]:
    profile = _one(s, "capability_profile", "member_id", f["actor"])
    version = None if profile is None else profile["version"]  # none yet: version 0, no tools
    tools = [] if profile is None else profile["tools"]
    return _same("version", f["version"], version or 0) + (
        [f"{f['tool']} is in the profile"] if f["tool"] in tools else []
    )


def _profile_changed(f: Facts, s: Snap, h: r.Harness) -> list[str]:
    approval = _approval(s, f)
    profile = _one(s, "capability_profile", "member_id", approval["requester_id"])
    return (
        _same("approved", f["approved"], approval["profile_version"])
        + _same("current", f["current"], None if profile is None else profile["version"])
        + _differ("approved", "current", f)
    )


def _plan_status(f: Facts, s: Snap, h: r.Harness) -> list[str]:
    """The plan's status, or it qualified ("approved and delivered": PLN-6 tells the two apart)."""
    stored = _plan(s, f["plan_id"])["status"]
    return [] if f["status"].split(" and ")[0] == stored else _same("status", f["status"], stored)


def _member_busy(f: Facts, s: Snap, h: r.Harness) -> list[str]:
    """The member's status — where the Lead's force-termination was cut after it flagged the
    member's task (``needs_inspection``) but before it wrote the member, the member is the
    ``unhealthy`` one reconciliation finishes it to (SHD-6, REC-2), and a release says so."""
    member = _member(s, f["member_id"])
    task = _one(s, "task", "task_id", member["current_task_id"])
    flagged = task is not None and task["status"] == "needs_inspection" and member["status"] == "draining"
    return _same("status", f["status"], "unhealthy" if flagged else member["status"])


def _not_task_owner(f: Facts, s: Snap, h: r.Harness) -> list[str]:
    """The caller does not hold the task it names (none named: ``<none>``)."""
    task = None if f["task"] == "<none>" else _one(s, "task", "task_id", f["task"])
    held = task is not None and (task["status"], task["owner_id"]) == ("claimed", f["actor"])
    member = _one(s, "member", "member_id", f["actor"])
    current = member is not None and task is not None and task["owner_incarnation"] == member["incarnation"]
    return [f"{f['actor']} holds task {f['task']}"] if held and current else []


def _absent(kind: str, field: str, name: str) -> Rule:
    return lambda f, s, h: [] if _one(s, kind, field, f[name]) is None else [f"{kind} {f[name]} is in the store"]


RULES: dict[str, Rule] = {
    # approvals (APR-4, APR-5, APR-9, XPR-4)
    "ApprovalExpired": lambda f, s, h: _approval_field("deadline", "deadline")(f, s, h) + _now(f, s) + _past(f),
    "ApprovalNotActive": _approval_field("status", "status"),
    "ApprovalOtherAgent": _approval_other("requester", "requester_id", "actor"),
    "ApprovalOtherTask": _approval_other("approved", "task_id", "actual"),
    "ArgumentsChanged": _approval_other("expected_digest", "arguments_digest", "actual_digest"),
    "NotResponder": lambda f, s, h: (
        _same("responder", f["responder"], _protocol(s, f)["responder_id"]) + _differ("responder", "actor", f)
    ),
    "ReviewConflict": _approval_field("status", "status"),
    "ToolMismatch": _approval_other("approved", "tool_name", "actual"),
    "ProfileChanged": _profile_changed,
    "ToolNotInProfile": _profile,
    "UnknownApproval": _absent("operation_approval", "protocol_id", "protocol_id"),
    "ProtocolConflict": lambda f, s, h: _differ("stored", "offered", f),
    # plans (PLN-1 … PLN-11, XPR-1, XPR-2)
    "PlanExpired": lambda f, s, h: (
        _same("deadline", f["deadline"], _plan(s, f["plan_id"])["deadline"]) + _now(f, s) + _past(f)
    ),
    "PlanStatusConflict": _plan_status,
    "NotPlanRequester": lambda f, s, h: (
        _same("requester", f["requester"], _plan(s, f["plan_id"])["requester_id"]) + _differ("requester", "actor", f)
    ),
    "StalePlan": _stale_plan,
    "PlanAlreadyStarted": _execution_status,
    "ExecutionNotRunning": _execution_status,
    "PlanMemberNotRunning": _status_of_actor,
    "DecisionNotDelivered": lambda f, s, h: _same(
        "decision_delivered", False, _plan(s, f["plan_id"])["decision_delivered"]
    ),
    "UnknownPlan": _absent("plan_approval", "protocol_id", "plan_id"),
    # members, tasks, messages (MEM-1, TSK-1, MSG-3, SHD-*)
    "MemberNotRunning": _status_of_actor,
    "MemberBusy": _member_busy,
    "StaleMember": lambda f, s, h: (
        _same("current", f["current"], _member(s, f["member_id"])["incarnation"]) + _differ("made_for", "current", f)
    ),
    "StaleIncarnation": lambda f, s, h: _differ("made_for", "current", f),
    "TaskNotDue": lambda f, s, h: _same("status", f["status"], _task(s, f["task_id"])["status"]),
    "TaskTaken": lambda f, s, h: (
        _same("status", f["status"], _task(s, f["task_id"])["status"])
        + _same("holder", f["holder"], _task(s, f["task_id"])["owner_id"])
    ),
    "MessageNotPending": _message_status,
    "NotLead": lambda f, s, h: _same("lead", f["lead"], h.lead_id) + _differ("actor", "lead", f),
    "UnknownMember": _absent("member", "member_id", "member_id"),
    "UnknownTask": _absent("task", "task_id", "task_id"),
    "NotTaskOwner": _not_task_owner,
}
"""Each refusal class's facts against the snapshot (and the harness) it was refused in: a list of
what it misstates. Classes without a rule: :data:`UNCHECKED`, each with its reason."""

UNCHECKED: dict[str, str] = {
    "AlreadyExists": "a store's refusal, raised under the store's lock (no snapshot can be read there)",
    "VersionConflict": "a store's refusal, raised under the store's lock",
    "CorruptRecord": "a store's refusal: the record is not readable (a snapshot would refuse too)",
    "UnknownWriteStep": "a store's refusal of a step name; its one fact is the name given",
    "ForgedIdentity": "its one fact is the field name the caller forged",
    "FailClosed": "wraps the cause it names (an exception, not a record)",
    "UnknownTool": "its one fact is the name given; the tools are the harness's, no record",
    "UnknownRecord": "a refusal of an id in no table the caller named; its facts are the arguments given",
    "UnknownProfileTool": "its facts are the arguments given and the harness's tools (no record)",
    "BadArguments": "its facts are the arguments given and what the schema expected",
    "BadCheckpoint": "its facts are the checkpoint given and why it is not plain JSON",
    "BadDecisionMessage": "its facts are the message given and what is wrong with it",
    "BadInstanceId": "its fact is the id given",
    "InstanceInUse": "its facts are the registry's (an internal table, in no snapshot)",
    "UnknownInstance": "its facts are the registry's (an internal table, in no snapshot)",
    "CancelRefused": "a reason in words (the status it names is checked by the word-for-word tests)",
    "ClaimRefused": "a reason in words (tests/test_task_details.py pins each word for word)",
    "JobRefused": "a reason in words (tests/test_task_details.py pins each word for word)",
    "ShutdownRefused": "a reason in words (tests/test_shutdown_details.py pins each word for word)",
    "DrainNotReady": "what it waits for in words (tests/test_shutdown_details.py)",
    "NotClaimHolder": "a detail in words: which of holder, token or incarnation differs",
    "PlanNoTask": "refused before the plan is written: the task the context names",
    "PlanDeviation": "its facts are the step offered and the approved plan's (tests/test_plans.py pins them)",
    "ProcessesSurvive": "its facts are OS pids (no record)",
    "EffectBeforeRecord": "a job runner's refusal of its own order; its facts are the job record read just before",
    "DrainRequested": "raised in a member's own process, which has no harness",
    "MemberCannotContinue": "raised in a member's own process, which has no harness",
    "ShutdownSignalled": "raised in a member's own process on a signal",
    "UnitDeadlineExceeded": "raised in a member's own process against its own clock",
}

_WATCHES: list[list[str]] = []
"""The problems lists of the :func:`watching` blocks open now, innermost last: a refusal's problems
go to the innermost (a test of the check opens its own inside the one ``conftest.py`` opens)."""


def _harness_on_stack() -> r.Harness | None:
    frame = sys._getframe(2)
    for _ in range(12):
        if frame is None:
            return None
        me = frame.f_locals.get("self")
        if isinstance(me, r.Harness):
            return me
        for name in ("h", "harness"):
            # a method's harness (self.h), or a function's (the Lead's inspection takes ``harness``)
            for found in (getattr(me, name, None), frame.f_locals.get(name)):
                if isinstance(found, r.Harness):
                    return found
        frame = frame.f_back
    return None


TALLY: collections.Counter[tuple[str, str]] = collections.Counter()
"""(refusal class, what became of it) → how many were made in this process: ``checked``, or left
unchecked because made ``on a thread`` (an interleaving's instance) or with ``no harness`` on the
calling frames (outside review 58's D6: a skip must leave a trace; ``conftest.py`` prints the sums)."""
OUT_OF_REACH = ("on a thread", "no harness")
NO_HARNESS_IN: collections.Counter[tuple[str, str]] = collections.Counter()
"""(refusal class, test file) → the refusals made there with no harness on the calling frames: where
to look when a class's facts go unchecked (a harness held under another name, a process of its own)."""


def _test_file() -> str:
    current = os.environ.get("PYTEST_CURRENT_TEST", "")
    return current.split("::", 1)[0] or "outside a test"


class _Sections(dict[str, Any]):
    """The harness's snapshot (``Harness.snapshot``), each record kind's section read when a rule
    first asks for it: a rule reads one or two kinds, and a whole snapshot for every refusal was
    a seventh of the stateful test's time."""

    def __init__(self, h: r.Harness) -> None:
        super().__init__(clock=h.clock.now())
        self._h = h

    def __missing__(self, kind: str) -> list[dict[str, Any]]:
        if kind not in RECORD_SCHEMAS:
            raise KeyError(kind)
        self[kind] = [row.doc for row in self._h.storage.scan(kind)]
        return self[kind]


def _check(cls: type, facts: Facts) -> None:
    if not _WATCHES:
        return
    if threading.current_thread() is not threading.main_thread():
        TALLY[cls.__name__, "on a thread"] += 1
        return  # an interleaving's instance thread: a snapshot there would be a yield point of its own
    h = _harness_on_stack()
    if h is None:
        TALLY[cls.__name__, "no harness"] += 1
        NO_HARNESS_IN[cls.__name__, _test_file()] += 1
        return
    TALLY[cls.__name__, "checked"] += 1
    try:
        problems = RULES[cls.__name__](facts, _Sections(h), h)
    except LookupError as missing:
        problems = [str(missing)]
    _WATCHES[-1].extend(f"{cls.__name__}{tuple(facts.values())}: {problem}" for problem in problems)


def _wrapped(cls: type) -> Callable[..., None]:
    init = cls.__dict__["__init__"]
    signature = inspect.signature(init)

    @functools.wraps(init)
    def checked(self: BaseException, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        if type(self) is cls:
            bound = signature.bind(self, *args, **kwargs)
            bound.apply_defaults()
            _check(cls, dict(list(bound.arguments.items())[1:]))

    checked.__refusal_facts__ = init  # type: ignore[attr-defined]
    return checked


def refusal_classes() -> dict[str, type]:
    """Every exception class ``reference`` exports that has constructor arguments of its own."""
    return {
        name: cls
        for name in r.__all__
        if isinstance(cls := getattr(r, name), type) and issubclass(cls, Exception) and "__init__" in cls.__dict__
    }


@contextlib.contextmanager
def watching() -> Iterator[list[str]]:
    """Check the facts of every refusal made inside; yields the list of problems found there."""
    problems: list[str] = []
    outermost = not _WATCHES
    classes = [cls for name, cls in refusal_classes().items() if name in RULES] if outermost else []
    for cls in classes:
        cls.__init__ = _wrapped(cls)  # type: ignore[misc]
    _WATCHES.append(problems)
    try:
        yield problems
    finally:
        _WATCHES.pop()
        for cls in classes:
            cls.__init__ = cls.__init__.__refusal_facts__  # type: ignore[misc]


def summary(
    tally: collections.Counter[tuple[str, str]], places: collections.Counter[tuple[str, str]] | None = None
) -> list[str]:
    """Lines for the end of a test run: how many refusals had their facts checked, how many of each
    class were out of reach (and, given ``places``, in which test files those with no harness were
    made), and which classes with a rule no test made checkably."""
    checked = {name for (name, how), n in tally.items() if how == "checked" and n}
    lines = [
        f"refusal facts: {sum(n for (_, how), n in tally.items() if how == 'checked')} refusals checked, "
        f"{len(checked)}/{len(RULES)} classes with a rule"
        + "".join(f"; {sum(n for (_, h), n in tally.items() if h == how)} {how}" for how in OUT_OF_REACH)
    ]
    unreached = sorted((name, how, n) for (name, how), n in tally.items() if how != "checked" and n)
    if unreached:
        lines.append("refusal facts out of reach: " + ", ".join(f"{name} {n} {how}" for name, how, n in unreached))
    if places:
        files: dict[str, list[str]] = collections.defaultdict(list)
        for (name, file), n in sorted(places.items()):
            files[file].append(f"{name} {n}")
        lines.append(
            "refusal facts with no harness, by test file: "
            + "; ".join(f"{file} ({', '.join(names)})" for file, names in sorted(files.items()))
        )
    never = sorted(set(RULES) - checked)
    if never:
        reached = {name: how for (name, how), n in tally.items() if n and name in never}
        lines.append(
            "refusal facts never checked: "
            + ", ".join(f"{name} ({reached[name]} only)" if name in reached else name for name in never)
        )
    return lines
