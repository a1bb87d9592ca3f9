"""Reference mutants caught through the driver: each section of the conformance suite (bad input,
random programs, vectors) must fail the reference with one protocol bug switched on in the
driver's process (``TEAMPROTO_MUTANT``). Apart from ``tests/test_conformance.py`` so that the two
test workers of ``pytest -n auto --dist loadfile`` share the suite's runs."""

from __future__ import annotations

import pytest

from tests.test_conformance import REFERENCE, suite

MUTANTS = [
    ("consume_twice", "APR-6", {"sections": ("bad input",), "clauses": ("APR-6",)}),
    ("dedup_disabled", "MSG-5", {"sections": ("bad input",), "clauses": ("MSG-5",)}),
    # an answered duplicate that changed the snapshot: the judge's "unchanged" rule for accepted
    # duplicates, not only for refusals (an outside review dropped it and nothing failed)
    ("unstable_message_id", "STO-2", {"sections": ("bad input",), "clauses": ("STO-2",)}),
    # 8 programs: seed 0's first 4 met the mutant 1-2 times, depending on where a SIGKILL landed
    ("skip_digest_check", "APR-5", {"sections": ("random programs",), "programs": 8}),
    ("reconcile_skips_redelivery", "REC-2", {"sections": ("vectors",), "configs": ("tiny",)}),
    ("timed_out_as_completed", "SHD-6", {"sections": ("vectors",), "configs": ("monitor",), "clauses": ("SHD-6",)}),
    ("shutdown_by_anyone", "SHD-1", {"sections": ("bad input",), "clauses": ("SHD-1",)}),
    ("retraction_after_delivery", "PLN-6", {"sections": ("bad input",), "clauses": ("PLN-6",)}),
    ("marker_after_first_step", "PLN-7", {"sections": ("vectors",), "configs": ("plan",), "clauses": ("PLN-7",)}),
    # no model step deviates: only the deviation cases send one (each kind, deterministically)
    ("step_deviation_allowed", "PLN-4", {"sections": ("bad input",), "clauses": ("PLN-4",)}),
    ("complete_with_steps_left", "PLN-4", {"sections": ("bad input",), "clauses": ("PLN-4",)}),
    # the abstraction leaves the audit log out: only the invariants checked after every step see it
    ("shutdown_not_audited", "AUD-5", {"sections": ("vectors",), "configs": ("shutdown",), "clauses": ("SHD-1",)}),
    # the jobs' statuses in the abstraction: a job left cancel_requested by the last rung
    ("force_terminate_spares_cancelling_jobs", "SHD-7", {"sections": ("vectors",), "configs": ("monitor",)}),
    # the approval requests' statuses in the abstraction: one left pending past its deadline (MSG-1;
    # the monitor vectors that expire it are labelled with the monitor's clauses)
    ("approval_request_never_expires", "INV-12", {"sections": ("vectors",), "configs": ("tiny",)}),
    # a message's phase in the vectors' coverage: the start after a retraction acknowledges decision-1
    ("start_acknowledges_first_decision", "PLN-7", {"sections": ("vectors",), "configs": ("plan",)}),
    # a guard one tick too strict: only the vectors that take a deadline edge on its boundary see it
    ("review_closed_at_deadline", "APR-4", {"sections": ("vectors",), "configs": ("approval_drain",)}),
    ("consume_closed_at_deadline", "APR-5", {"sections": ("vectors",), "configs": ("approval_drain",)}),
    # a status read, asked by id, that hands any record to anyone (an outside review's R8, AUD-4)
    ("status_by_id_unscoped", "AUD-4", {"sections": ("bad input",), "clauses": ("AUD-4",)}),
    # outside review 45: reference mutants every section of the suite let through, each now met by
    # a bad-input case (a refusal that changes no state is on no vector's path) ...
    ("stale_incarnation_accepted", "XPR-1", {"sections": ("bad input",), "clauses": ("SHD-2",)}),
    ("approval_incarnation_ignored", "XPR-1", {"sections": ("bad input",), "clauses": ("XPR-1",)}),
    ("cancel_ignores_incarnation", "XPR-1", {"sections": ("bad input",), "clauses": ("XPR-1",)}),
    ("profile_version_ignored", "XPR-4", {"sections": ("bad input",), "clauses": ("XPR-4",)}),
    ("release_before_jobs_settle", "SHD-3", {"sections": ("bad input",), "clauses": ("SHD-3",)}),
    ("signal_non_cancellable", "JOB-2", {"sections": ("bad input",), "clauses": ("JOB-2",)}),
    ("stale_claim_token_accepted", "TSK-1", {"sections": ("bad input",), "clauses": ("TSK-1",)}),
    # ... and an entry hash that is not the protocol's (AUD-5: anyone can verify the chain)
    ("audit_hash_omits_time", "AUD-5", {"sections": ("vectors",), "configs": ("tiny",)}),
    # outside review 52 (13 plants, 2 caught): a bad-input case for every guard of an operation's
    # precondition, and a check of who each decision names
    ("late_review_accepted", "APR-4", {"sections": ("bad input",), "clauses": ("APR-4",)}),
    ("review_event_names_requester", "AUD-2", {"sections": ("vectors",), "configs": ("tiny",)}),
    ("shutdown_refused_after_record", "SHD-1", {"sections": ("bad input",), "clauses": ("SHD-1",)}),
    # outside review 63 (16 plants, 6 caught): a conflicting retry for every field a request binds,
    # and a secret in every free-text field the suite sends
    ("retry_ttl_unchecked", "STO-2", {"sections": ("bad input",), "clauses": ("STO-2",)}),
    ("shutdown_retry_reason_unchecked", "STO-2", {"sections": ("bad input",), "clauses": ("STO-2",)}),
    ("job_command_stored_raw", "AUD-3", {"sections": ("bad input",), "clauses": ("AUD-3",)}),
    # a claim by a member that is not running is refused by that guard alone in some vector (the
    # random programs before review 63 called again only approvals' consumes and cancels, and let
    # this through; since review 64 the vectors send every guard's refusal deterministically)
    ("claim_while_draining", "MEM-1", {"sections": ("vectors",), "configs": ("pair",)}),
    # a refusal's code is one of the codes of the model's failing guards (conformance/_refusals.py;
    # review 63's P15: the suite checked only that a refused call was refused, definite, unchanged)
    ("final_cancel_not_active", "APR-9", {"sections": ("random programs",), "programs": 12}),
    # an edge taken beside an open record of an earlier incarnation is a vector of its own (review
    # 63's P10: every claim was replayed in a team no member of which had restarted)
    ("claim_fenced_by_old_request", "MEM-1", {"sections": ("vectors",), "configs": ("fencing",)}),
    # every guard of a refused operation refuses alone in some vector, with its codes (review 63's P3:
    # an inspection that ignored a job asked to stop was taken where the model refuses it)
    ("inspect_ignores_stopping_job", "SHD-7", {"sections": ("vectors",), "configs": ("shutdown",)}),
    # outside review 64 (14 plants, 5 caught): each edge and refusal also on a record past its
    # deadline and on a task claimed again, and the refusals of a shutdown request, a restart, a
    # retirement
    ("late_cancel_refused", "APR-9", {"sections": ("vectors",), "configs": ("approval_drain",)}),
    ("unit_deadline_from_first_claim", "SHD-9", {"sections": ("vectors",), "configs": ("shutdown",)}),
    ("shutdown_of_lost_member", "SHD-1", {"sections": ("vectors",), "configs": ("fencing",)}),
    ("restart_spares_stopping_jobs", "XPR-1", {"sections": ("vectors",), "configs": ("shutdown",)}),
    # a crash point is crashed once per variant of its operation (an approval's and a rejection's review)
    ("reconcile_tells_approvals_only", "REC-2", {"sections": ("vectors",), "configs": ("approval_drain",)}),
    # a bad-input case in each phase of its record, and a key conflict for every keyed record kind
    ("redelivery_before_correlation", "MSG-5", {"sections": ("bad input",), "clauses": ("MSG-5",)}),
    ("plan_body_unbound", "STO-2", {"sections": ("bad input",), "clauses": ("STO-2",)}),
    # every event a step appends names the party that took it (AUD-1; review 64's P7: the model
    # abstracts events away, and the log holds what the record holds)
    ("drain_event_by_lead", "AUD-1", {"sections": ("vectors",), "configs": ("shutdown",)}),
    ("rolled_forward_by_lead", "AUD-1", {"sections": ("vectors",), "configs": ("plan",)}),
]


@pytest.mark.clause(
    "APR-5", "APR-6", "MSG-5", "REC-2", "SHD-6", "SHD-1", "PLN-4", "PLN-6", "PLN-7", "AUD-5", "SHD-7", "MSG-1",
    "INV-12", "AUD-4", "APR-4", "XPR-1", "XPR-4", "SHD-3", "JOB-2", "TSK-1", "AUD-2", "STO-2", "AUD-3", "APR-9",
    "AUD-1",
)  # fmt: skip
@pytest.mark.parametrize(("mutant", "clause", "options"), MUTANTS, ids=[m[0] for m in MUTANTS])
def test_a_reference_mutant_is_caught_through_the_driver(
    mutant: str, clause: str, options: dict[str, object], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each section of the suite catches a reference mutant (run in the driver's process through
    ``TEAMPROTO_MUTANT``): bad input, random programs, vectors (of the approval slice and, through
    the team operations, of a drain past its deadline that must time out, not complete; and, through
    the invariants checked after every step of a vector, a shutdown whose decisions miss the log)."""
    monkeypatch.setenv("TEAMPROTO_MUTANT", mutant)
    _, result = suite(REFERENCE, **options)
    assert clause in result["failed_clauses"] and result["exit"] == 1
