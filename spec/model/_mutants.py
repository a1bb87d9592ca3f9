"""Named, deliberately broken variants of the model (DESIGN rule 7).

Each mutant disables one check of one protocol step. ``teamproto check --mutant NAME`` must find a
violation, and ``model_tests/test_model_mutants.py`` asserts that it is found by the invariant
named here — proof that the invariant and the check are real.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Mutant:
    name: str
    breaks: str  # the clause whose check is removed
    caught_by: str  # the invariant that must catch it
    config: str  # the smallest configuration that shows it
    description: str


MUTANTS: dict[str, Mutant] = {
    m.name: m
    for m in (
        Mutant(
            "consume_without_digest_check",
            "APR-5",
            "INV-1",
            "tiny",
            "consume accepts a call whose arguments differ from the approved digest",
        ),
        Mutant(
            "consume_after_deadline",
            "APR-5",
            "INV-1",
            "tiny",
            "consume skips the deadline check (before the monitor has expired it)",
        ),
        Mutant(
            "consume_by_other_member",
            "APR-5",
            "INV-1",
            "pair",
            "consume skips the requester check: another member's call uses the approval",
        ),
        Mutant(
            "approval_grants_capability",
            "APR-7",
            "INV-9",
            "tiny",
            "consume skips the capability-profile check and the profile version check",
        ),
        Mutant(
            "cancel_after_consume",
            "APR-9",
            "INV-3",
            "tiny",
            "the requester may cancel an approval that was already consumed",
        ),
        Mutant(
            "recovery_repeats_call",
            "APR-8",
            "INV-1",
            "tiny",
            "reconcile re-issues a started call instead of looking its outcome up",
        ),
        Mutant(
            "retry_new_message_id",
            "MSG-4",
            "INV-6",
            "tiny",
            "a retried request gets a fresh message id instead of its stable id",
        ),
        Mutant("secret_not_redacted", "AUD-3", "INV-10", "tiny", "the risk summary is stored without redaction"),
        Mutant(
            "claim_ignores_shutdown_request",
            "MEM-1",
            "INV-2",
            "shutdown",
            "claim checks the member record only, not the persisted shutdown requests",
        ),
        Mutant(
            "release_before_jobs_settle",
            "SHD-3",
            "INV-5",
            "shutdown",
            "a drain pass releases the task while the member's job is still running",
        ),
        Mutant(
            "finish_keeps_task",
            "SHD-5",
            "INV-4",
            "shutdown",
            "finishing a shutdown stops the member without the task having been released",
        ),
        Mutant(
            "stale_incarnation_accepted",
            "XPR-1",
            "INV-11",
            "fencing",
            "begin-drain accepts a shutdown_request made for an older incarnation",
        ),
        Mutant(
            "reconcile_skips_redelivery",
            "REC-3",
            "INV-7",
            "tiny",
            "reconcile does not re-deliver a request whose message was lost in a crash",
        ),
        Mutant(
            "timeout_approves_plan",
            "PLN-5",
            "INV-8",
            "plan",
            "the deadline monitor approves a pending plan instead of expiring it",
        ),
        Mutant(
            "execute_plan_twice",
            "PLN-7",
            "INV-8",
            "plan",
            "plan start ignores the executed marker and starts the steps again",
        ),
        Mutant(
            "monitor_skips_shutdown",
            "SHD-6",
            "INV-12",
            "monitor",
            "the deadline monitor never expires or times out shutdown requests",
        ),
        Mutant(
            "resumed_drain_keeps_requests",
            "XPR-2",
            "INV-12",
            "plan_drain",
            "reconcile resumes a drain that crashed after the member's half without cancelling the "
            "member's own requests: its draft plan can never become final",
        ),
        Mutant(
            "inspection_keeps_requests",
            "SHD-10",
            "INV-12",
            "plan_lost",
            "inspecting a lost member leaves its draft plan open: only its running requester could end it",
        ),
    )
}
