"""MSG-1, SHD-2: the check that a shutdown request's message never expires unread once a drain began
under it, branch by branch — each status of ``DRAIN_BEGUN`` is refused, each status before or
without a drain is not (an outside review removed ``completed`` from the check's set and no test
failed: the model mutant reaches the check through ``timed_out`` only).
"""

from __future__ import annotations

from typing import Any

import pytest

from spec import safety
from spec.safety import DRAIN_BEGUN

pytestmark = pytest.mark.clause("MSG-1", "SHD-2", "SHD-6")

PID, MID = "sd-1", "sd-1/request"


def _snapshot(status: str, message: str) -> dict[str, Any]:
    request = {"protocol_id": PID, "status": status, "deadline": 5.0, "events": []}
    envelope = {"message_type": "shutdown_request", "message_id": MID, "correlation_id": PID}
    return {
        "clock": 9.0,
        "operation_approval": [],
        "plan_approval": [],
        "shutdown_request": [request],
        "message": [{"message": envelope, "status": message}],
    }


def _problems(status: str) -> list[str]:
    return safety.expiry_only_after_deadline(_snapshot(status, "pending"), _snapshot(status, "expired"))


@pytest.mark.parametrize("status", sorted(DRAIN_BEGUN))
def test_a_begun_drains_message_never_expires_unread(status: str) -> None:
    assert [p for p in _problems(status) if "a drain began under it" in p] != []


@pytest.mark.parametrize("status", ["requested", "expired", "cancelled"])
def test_a_message_no_drain_began_under_expires_after_the_deadline(status: str) -> None:
    assert _problems(status) == []


def test_the_set_is_every_status_a_drain_reaches() -> None:
    """DRAIN_BEGUN is the shutdown machine's states reachable from ``draining`` (with it)."""
    from spec._tables import _ALLOWED

    allowed = _ALLOWED["shutdown_request"]
    reach, frontier = {"draining"}, ["draining"]
    while frontier:
        for target in allowed.get(frontier.pop(), frozenset()):
            if target not in reach:
                reach.add(target)
                frontier.append(target)
    assert reach == set(DRAIN_BEGUN)
