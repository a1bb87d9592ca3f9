"""Every comparison against time in the reference has a test that fails when its boundary moves
(SHD-2, SHD-6, SHD-9, SHD-10, PLN-2, PLN-5, PLN-9, APR-4, APR-5, REC-1, MSG-3, INV-12).

``tests/test_deadline_boundaries.py`` puts the clock exactly on each deadline a reader is known to
read; it cannot see a comparison nobody listed. Here the list comes from the code: every ordering
of the reference that reads the clock or a record's time (:func:`tests._time_flips.comparisons`,
found in the syntax tree) is either in :data:`CAUGHT_BY`, with the tests that fail when its
operator is flipped (``>`` and ``>=``, ``<`` and ``<=``) — checked here by running them with the
flip, each in a fresh process — or in :data:`EXEMPT` with the reason it is not a protocol boundary.
A new comparison fails :func:`test_every_time_comparison_is_known` until it has its row. The first
run found one no test saw: the lapse judged again at its write (``Members.lapse``), now
``tests/test_member_details.py::test_the_lapse_judged_again_at_its_write_agrees_with_lapsed_on_the_boundary``.
"""

from __future__ import annotations

import pytest

from tests._time_flips import comparisons, run_flipped

BOUNDARY = "tests/test_deadline_boundaries.py::test_a_deadline_still_holds_at_its_instant_and_has_passed_after_it"


def _row(name: str) -> str:
    return f"{BOUNDARY}[memory-{name}-0.0]"


CAUGHT_BY: dict[str, tuple[tuple[str, ...], list[str]]] = {
    'reference._approval:ApprovalProtocol._review_once:now > doc["deadline"]': (
        ("APR-4",),
        [_row("review_approval_requested")],
    ),
    'reference._approval:ApprovalProtocol._checked:now > doc["deadline"]': (
        ("APR-5",),
        [_row("consume_approval_approved")],
    ),
    'reference._approval:ApprovalProtocol._due:now > doc["deadline"]': (
        ("APR-5", "INV-12"),
        [_row("monitor_approval_approved"), _row("monitor_approval_requested")],
    ),
    'reference._approval:ApprovalProtocol.reconcile:self.h.clock.now() > doc["deadline"]': (
        ("REC-1", "APR-5"),
        ["tests/test_deadlines.py::test_reconciliation_at_and_after_the_deadline[memory-0.0]"],
    ),
    "reference._harness:Harness._expire_request_message:deadline < now": (
        ("MSG-3",),
        [_row("monitor_plan_request_message"), _row("monitor_shutdown_request_message")],
    ),
    'reference._members:Members.lapsed:now - row.doc["last_heartbeat_at"] > max_age': (
        ("SHD-10",),
        ["tests/test_member_details.py::test_a_heartbeat_exactly_max_age_old_has_not_lapsed[memory]"],
    ),
    "reference._members:Members.lapse.judge_and_write:now - beat <= max_age": (
        ("SHD-10", "STO-4"),
        [
            "tests/test_member_details.py::"
            "test_the_lapse_judged_again_at_its_write_agrees_with_lapsed_on_the_boundary[memory]"
        ],
    ),
    'reference._plans:PlanProtocol._decide_once:now > doc["deadline"]': (
        ("PLN-2", "PLN-5"),
        [_row("decide_plan_pending")],
    ),
    'reference._plans:PlanProtocol._startable:now > doc["deadline"]': (
        ("PLN-5", "PLN-7"),
        [_row("start_plan_delivered")],
    ),
    'reference._plans:PlanProtocol._expire_one:now > row.doc["deadline"]': (
        ("PLN-5", "INV-12"),
        [_row("monitor_plan_approved"), _row("monitor_plan_pending")],
    ),
    "reference._plans:_past:now > deadline": (
        ("PLN-9", "INV-12"),
        [_row("monitor_plan_execution_running"), _row("monitor_plan_execution_started_late")],
    ),
    "reference._runtime:SafePoints.check:now > self.unit_deadline": (
        ("SHD-9",),
        ["tests/test_runtime.py::test_at_the_deadline_itself_the_step_goes_on[memory]"],
    ),
    'reference._shutdown:ShutdownProtocol._drain_refusal:self.h.clock.now() > sd["deadline"]': (
        ("SHD-2",),
        [_row("begin_drain_shutdown_requested")],
    ),
    "reference._shutdown:_past:now > deadline": (
        ("SHD-6", "INV-12"),
        [_row("monitor_shutdown_draining"), _row("monitor_shutdown_requested")],
    ),
    "reference._tasks:Tasks._suspend:self.h.clock.now() < claimed_at + unit_seconds": (
        ("SHD-9",),
        ["tests/test_task_details.py::test_every_task_refusal_names_the_task_its_status_and_what_to_do[memory]"],
    ),
}
"""A time comparison -> (its clauses, the tests that must fail with its boundary flipped)."""

_MUTANT = "the branch a named reference mutant takes to move this very boundary; its own tests catch it"
EXEMPT: dict[str, str] = {
    'reference._approval:ApprovalProtocol._checked:now >= doc["deadline"]': _MUTANT + " (consume_closed_at_deadline)",
    'reference._approval:ApprovalProtocol._due:now >= doc["deadline"]': _MUTANT + " (monitor_expires_at_deadline)",
    "reference._plans:_past:now >= deadline": _MUTANT + " (plan_run_timed_out_at_deadline)",
    'reference._approval:ApprovalProtocol._cancel_once:now > doc["deadline"]': _MUTANT + " (late_cancel_refused)",
    "reference._shutdown:_past:now >= deadline": _MUTANT + " (shutdown_expires_at_deadline)",
    "reference._member_process:MemberProcess.tick:now - self.last_beat >= self.heartbeat_seconds": (
        "the rate limit of a member process's own heartbeat on its monotonic clock: beating at or just "
        "after the period are both the protocol (SHD-10 judges the lapse by max_age, above)"
    ),
    'reference._shutdown:_same_request:abs(stored_ttl - ttl_seconds) > 1e-9 + 4 * math.ulp(stored["deadline"])': (
        "STO-2's rounding tolerance between two timeouts, not a deadline: equal only at a difference of exactly "
        "the tolerance; both sides are tested (test_shutdown_details: another timeout refused, a retry on a "
        "wall clock accepted)"
    ),
    "reference._processes:wait_until:time.monotonic() >= deadline": (
        "a test helper's wait for a process on the monotonic clock, not a protocol deadline"
    ),
    "reference._storage:SQLiteStorage._write_ahead_log:time.monotonic() > deadline": (
        "how long SQLite's lock is retried while the write-ahead log is switched on, not a protocol deadline"
    ),
}
"""A time comparison that is not a protocol boundary -> why."""


def test_every_time_comparison_is_known() -> None:
    found = set(comparisons())
    assert not set(CAUGHT_BY) & set(EXEMPT)
    assert found - set(CAUGHT_BY) - set(EXEMPT) == set(), (
        "a comparison against time without its row: flip it (python -m tests._time_flips KEY) and "
        "name the tests that fail, or write one that puts the clock exactly on it"
    )
    assert (set(CAUGHT_BY) | set(EXEMPT)) - found == set(), "rows of comparisons no longer in the reference"


def test_the_scan_finds_comparisons_of_each_shape() -> None:
    """The scan is not vacuous: it finds the clock against a record's deadline, a deadline against
    the clock, a beat's age against its bound and the monotonic clock, in the modules they live in."""
    found = comparisons()
    assert len(found) >= 20
    shapes = ('now > doc["deadline"]', "deadline < now", "now - beat <= max_age", "time.monotonic() >= deadline")
    for shape in shapes:
        assert any(key.endswith(":" + shape) for key in found), shape
    assert {key.split(":", 1)[0] for key in found} >= {
        "reference._approval",
        "reference._plans",
        "reference._shutdown",
        "reference._members",
        "reference._tasks",
        "reference._runtime",
        "reference._harness",
    }


@pytest.mark.parametrize(
    "key", [pytest.param(k, marks=pytest.mark.clause(*CAUGHT_BY[k][0]), id=k.split(":", 2)[1]) for k in CAUGHT_BY]
)
def test_a_time_comparison_flipped_fails_its_tests(key: str) -> None:
    result = run_flipped(key, CAUGHT_BY[key][1])
    tail = "\n".join((result.stdout + result.stderr).splitlines()[-15:])
    assert result.returncode == 1 and "failed" in result.stdout, (
        f"{key} flipped: the tests named for it passed (exit {result.returncode}):\n{tail}"
    )


def test_the_flipped_tests_pass_unflipped() -> None:
    """Each named test passes as the reference is: its failure under a flip is the flip's."""
    import subprocess
    import sys

    from tests._time_flips import ROOT

    tests = sorted({t for _, named in CAUGHT_BY.values() for t in named})
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *tests],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-2000:]
