"""Every problem a check can report is reported for some model mutant, or is listed with the reason
none does (DESIGN rule 7, at the grain of one reported problem).

``model_tests/test_model_mutants.py`` shows that each check catches the mutant named for it; a check
can still hold a branch that no mutant reaches, and weakening or deleting that branch changes no
verdict of any test (outside review 55 weakened INV-4 and INV-5 that way; both were seen only
because some mutant happened to need the branch). :mod:`model_tests._check_lines` explores every
model mutant with line tracing and lists the problem lines of :mod:`spec.invariants` and
:mod:`spec.safety` that none reaches. The list must be exactly :data:`UNREACHED`: a new check's
branch without a mutant fails here, and so does a listed branch a new mutant now reaches (take it
off the list). It runs interpreted, in a fresh process (about 30 s).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

_AUDIT = "the model keeps no audit log (AUD-5): reference mutants reach it (test_model_mutants.REFERENCE_ONLY)"
_TABLES = (
    "the model's own move() refuses an illegal transition before any snapshot shows it (the explorer "
    "reports INV-3 transitions_follow_tables from the IllegalTransition); this is the snapshot-level check "
    "the reference's tests and the conformance suite run"
)
_MESSAGES = (
    "the model writes a message's body from its records in one place (message_info), so no model mutant "
    "makes parties, replies or decision numbers disagree; the conformance suite's bad-input and message "
    "cases reach it on implementations"
)
_NOTICES = (
    "the model writes a notice's body from its records in one place (message_info) and its tasks keep no "
    "history of claims; the reference's notices reach it through tests/test_message_parties.py, whose each field "
    "changed alone must be named"
)
_DANGLING = (
    "the model's records always name a member of the team (slots); an implementation's snapshot may not: "
    "model_tests/verdicts.py's near misses reach it (a member, an owner or a target gone), and the "
    "conformance suite judges implementations with it"
)
UNREACHED: dict[str, str] = {
    "safety.py:profile_changes_raise_version:problems.append(f\"capability_profile/{profile['member_id']}: {fell}\")": (
        "no move of the model lowers a profile's version (a change adds one); an implementation's store may (a "
        "profile restored from an older copy): test_a_profile_whose_version_fell_is_reported"
    ),
    "invariants.py:shutdown_completed_iff_member_stopped:problems.append(f\"shutdown_request/{sd['protocol_id']}: "
    "targets {sd['target_id']!r}, no member of the team\")": _DANGLING,
    "invariants.py:_stale_consumptions:problems.append(f\"operation_approval/{ap['protocol_id']}: consumed for "
    "{ap['requester_id']!r}, no member\")": _DANGLING,
    "invariants.py:release_only_after_jobs_settle:problems.append(f\"task/{task['task_id']}: claimed by "
    "{task['owner_id']!r}, no member of the team\")": _DANGLING,
    "invariants.py:claims_only_by_eligible_members:problems.append(f\"task/{task['task_id']}: claimed by "
    "{task['owner_id']!r}, no member of the team\")": "the model's claim always names its member (a slot); an "
    "implementation's snapshot may not: model_tests/verdicts.py's near misses reach it (a claimed task's owner "
    "set to none), and the conformance suite judges implementations with it",
    'invariants.py:_table_steps:problems.append(f"{kind}/{key}: created as {status!r}, not {start!r}")': _TABLES,
    'invariants.py:_table_steps:problems.append(f"{kind}/{key}: illegal {previous!r} -> {status!r}")': _TABLES,
    "invariants.py:audit_log_is_a_chain:return [": _AUDIT,
    "invariants.py:audit_log_is_a_chain:return [f\"audit_entry/{index}: links to {entry['previous_hash'][:12]}…, "
    'not to the entry before it"]': _AUDIT,
    'invariants.py:audit_log_is_a_chain:return [f"audit_entry: entry {index} is missing (the next is number '
    "{entry['sequence']})\"]": _AUDIT,
    "invariants.py:decisions_audited:problems.append(": _AUDIT,
    'invariants.py:decisions_audited:problems.append(f"audit_entry: {entry[1]} of {subject}, which no record holds")': (
        _AUDIT
    ),
    "invariants.py:records_keep_their_status_events:problems.append(": _AUDIT,
    "invariants.py:retry_creates_no_duplicate:problems.append(f\"operation_approval/{ap['protocol_id']}: not the "
    'stable id {expected}")': "the model's ids are functions of their slots: no model state has another id",
    "safety.py:_parties_agree:problems.append(": _MESSAGES,
    "safety.py:_parties_agree:problems.append(f\"{name}: replies to {message.get('reply_to')}, not to {answers}\")": (
        _MESSAGES
    ),
    'safety.py:_parties_agree:problems.append(f"{name}: {wrong}")': _MESSAGES
    + " (a notice's parties: reference mutant suspension_notice_misaddressed)",
    "safety.py:_parties_agree:problems.append(f\"{name}: no rule says who sends a {message['message_type']} to whom "
    '(MSG-1)")': "every message the model writes is of a type spec.MESSAGE_TYPES names, and each of those has its "
    "rule (tests/test_message_parties.py); this line is for a type added later",
    'safety.py:_parties_agree:problems.append(f"{name}: says {field} {body.get(field)!r}, but its {section} says '
    '{said!r}")': _MESSAGES + " (each field changed alone: tests/test_message_parties.py)",
    "safety.py:_notices_agree:problems.append(": _NOTICES + " (reference mutant lost_notice_heartbeat_zero)",
    "safety.py:_notices_agree:problems.append(f\"{name}: about {message['correlation_id']}, no claim of "
    "task/{body['task_id']}\")": _NOTICES,
    "safety.py:_notices_agree:problems.append(f\"{name}: names task/{body['task_id']}, which the team does not "
    'have")': _NOTICES,
    "safety.py:_notices_agree:problems.append(f\"{name}: names {body['member_id']}, but the claim it is about was "
    "{holder}'s\")": _NOTICES,
    "safety.py:messages_agree_with_records:problems.append(": (
        "the model's outbox puts its entry's very message on the bus (one function writes both); reference mutant "
        "send_restamps_message reaches it, and model_tests/verdicts.py's near misses"
    ),
    "safety.py:_plan_decisions_agree:problems.append(": _MESSAGES,
    "safety.py:_replies_agree:problems.append(f\"shutdown_ack/{message['message_id']}: says {body}, but the request "
    'is {facts}")': _MESSAGES,
    "safety.py:members_hold_their_claims:problems.append("
    'f"member/{name}: holds task {current}, which does not exist")': (
        "the model's tasks are fixed slots: no model state names a task that does not exist"
    ),
    "safety.py:consumed_calls_have_outcomes:problems.append(": (
        "a call still started after reconciliation: the model's recovery looks every started call up (no mutant "
        "leaves one started; recovery_assumes_call_failed guesses it failed); model_tests/verdicts.py's near misses "
        "(an execution's status changed to started) reach it"
    ),
    "safety.py:restart_raises_incarnation:problems.append(": (
        "only an incarnation that falls reaches it, which no step writes; restart_keeps_incarnation reaches the "
        "branch beside it (a restart that keeps its incarnation)"
    ),
}
"""Problem line (``file:function:first line``) -> why no model mutant reaches it."""


@pytest.mark.clause("INV-1", "INV-4", "INV-12")
def test_every_problem_line_is_reached_by_a_mutant_or_listed() -> None:
    env = {**os.environ, "TEAMPROTO_PURE": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "model_tests._check_lines"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    found = json.loads(result.stdout)
    unreached = set(found["unreached"])
    assert found["lines"] > 60 and len(unreached) < found["lines"] // 2
    assert unreached - set(UNREACHED) == set(), "problem lines no model mutant reaches: add a mutant, or list why"
    assert set(UNREACHED) - unreached == set(), "listed lines a mutant now reaches (or gone): take them off"


def test_the_line_finder_sees_each_kind_of_report() -> None:
    from model_tests._check_lines import problem_lines

    keys = problem_lines()
    assert any(":approval_consumed_at_most_once:problems.append(" in key for key in keys)
    assert any(":world_agrees:return [" in key for key in keys)
    assert any(key.startswith("safety.py:") for key in keys)


def test_a_profile_whose_version_fell_is_reported() -> None:
    """XPR-4: the one problem line of ``profile_changes_raise_version`` no model move reaches."""
    from spec.safety import profile_changes_raise_version

    def snap(version: int) -> dict[str, object]:
        return {"capability_profile": [{"member_id": "m0", "version": version, "tools": ["deploy"]}]}

    assert profile_changes_raise_version(snap(2), snap(1)) == ["capability_profile/m0: its version fell from 2 to 1"]
    assert profile_changes_raise_version(snap(1), snap(2)) == []  # a version raised with the same tools is fine
