"""Named mutants of the reference's approval path and stores (DESIGN rule 7).

A mutant is switched on for a whole process by ``TEAMPROTO_MUTANT=<name>`` (``teamproto mutants``
runs the model tests once per mutant in a subprocess, so nothing in the working tree is edited).
Each names the clause whose check it removes; the model tests must catch every one.
"""

from __future__ import annotations

import os

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
    "sqlite_cas_check_then_act": "STO-4: the SQLite compare-and-set reads the version, then updates unconditionally",
    "consume_rereads_before_cas": "APR-5, APR-6: consume re-reads the approval just before its compare-and-set",
}

ACTIVE = os.environ.get("TEAMPROTO_MUTANT", "")
if ACTIVE and ACTIVE not in MUTANTS:
    raise SystemExit(f"TEAMPROTO_MUTANT={ACTIVE!r} is not a reference mutant; known: {', '.join(MUTANTS)}")


def broken(name: str) -> bool:
    """True when mutant ``name`` is switched on in this process."""
    assert name in MUTANTS, name
    return name == ACTIVE
