"""Named mutants of the reference's approval path and stores (DESIGN rule 7).

A mutant is switched on for a whole process by ``TEAMPROTO_MUTANT=<name>`` (``teamproto mutants``
runs the model tests once per mutant in a subprocess, so nothing in the working tree is edited).
Each names the clause whose check it removes; the model tests must catch every one.
"""

from __future__ import annotations

import os

from ._process_mutants import PROCESS_MUTANTS

MUTANTS: dict[str, str] = {
    "skip_digest_check": "APR-5: consume accepts changed arguments",
    "skip_deadline_on_consume": "APR-5: consume ignores the approval's deadline",
    "skip_ownership_check": "APR-5: consume ignores who holds the task and who requested",
    "consume_twice": "APR-6: a consumed approval can be used again",
    "message_before_record": "MSG-6: the request message is written before the protocol record",
    "unstable_message_id": "MSG-4: a retried request gets a fresh message id",
    "dedup_disabled": "MSG-5: a duplicate delivery records a new result",
    "reconcile_skips_redelivery": "REC-3: reconciliation does not re-send owed messages",
    "secret_not_redacted": "AUD-3: the risk summary is stored as written",
    "profile_version_ignored": "XPR-4: consume ignores the capability profile's version and tools",
    "cancel_after_consume": "APR-9: a consumed approval can be cancelled",
    "recovery_repeats_call": "APR-8: recovery re-issues a started call instead of looking it up",
    "claim_while_draining": "MEM-1: a member that is not running or not accepting may claim",
    "claim_ignores_shutdown_request": "MEM-1: a claim ignores an active shutdown request (the window "
    "between persisting the request and updating the member)",
    "release_before_jobs_settle": "SHD-3: a drain releases the task while a job still runs",
    "drain_completes_task": "SHD-3: a draining member completes its task to get out of the drain",
    "ack_before_record": "SHD-5: the shutdown_ack is owed before the completed record is persisted",
    "stale_incarnation_accepted": "XPR-1: a shutdown request for an older incarnation begins a drain",
    "stale_claim_token_accepted": "TSK-1: a stale claim token may finish the task",
    "lapse_twice": "SHD-10: a heartbeat lapse owes two member_lost notices",
    "clean_exit_member_lost": "SHD-10: a clean finished drain also owes member_lost",
    "timed_out_as_completed": "SHD-6: the monitor completes a drain past its deadline instead of timing it out",
    "signal_non_cancellable": "JOB-2: a drain pass asks a non-cancellable job to cancel",
    "drain_keeps_requests": "XPR-2: beginning a drain keeps the member's own requested approvals",
    "reconcile_skips_outbox": "REC-3: reconciliation does not owe the messages the records owe",
}

MUTANTS.update(PROCESS_MUTANTS)  # caught by the real-process tests (reference._process_mutants)

ACTIVE = os.environ.get("TEAMPROTO_MUTANT", "")
if ACTIVE and ACTIVE not in MUTANTS:
    raise SystemExit(f"TEAMPROTO_MUTANT={ACTIVE!r} is not a reference mutant; known: {', '.join(MUTANTS)}")


def broken(name: str) -> bool:
    """True when mutant ``name`` is switched on in this process."""
    assert name in MUTANTS, name
    return name == ACTIVE
