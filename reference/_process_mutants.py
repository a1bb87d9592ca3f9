"""Named mutants of the real-process runtime (DESIGN rule 7): safe points, signals, the ladder.

They are switched on like every reference mutant (``TEAMPROTO_MUTANT=<name>``; they are part of
:data:`reference._mutants.MUTANTS`). The Hypothesis model tests run in one process and never
start a member process, so each of these is caught by the example tests named in
:data:`CAUGHT_BY`, which ``teamproto mutants`` runs for it instead.
"""

from __future__ import annotations

PROCESS_MUTANTS: dict[str, str] = {
    "safe_point_ignores_draining": "MEM-3: a safe point lets a draining member go on with its step",
    "unit_deadline_ignored": "SHD-9: a step goes on past its unit's hard deadline",
    "signal_exits_at_once": "SHD-8, MEM-2: on SIGTERM the member exits at once, not at a safe point: without "
    "stopping, saving or notifying",
    "ladder_skips_sigterm": "SHD-7: the ladder kills the member without SIGTERM, wait and re-check",
    "member_signal_reaches_jobs": "JOB-2: a job inherits its member's identity, so a signal for the member reaches it",
    "signal_exit_cancels_any_job": "JOB-2: a member shutting down on a signal cancels its non-cancellable jobs too",
    "signal_exit_keeps_requests": "XPR-2: a member shutting down on a signal leaves its own approval requests open",
    "processes_found_by_id_alone": "SHD-7: the Lead finds member and job processes by their ids, whatever their team",
    "close_leaves_zombies": "MEM-4, SHD-7: the job runner's close kills its jobs without waiting for them: "
    "it returns before they are gone, and leaves them unreaped",
    "inspection_kills_before_checking": "SHD-7, XPR-3: the Lead's inspection kills a member's processes and "
    "jobs before it checks that the member is unhealthy (a healthy member is killed, then refused)",
    "inspection_sweeps_busy_jobs_only": "SHD-7: the inspection kills the processes of the member's busy jobs "
    "only, so a process left by a job already recorded killed (one that left its group) outlives it",
    "ladder_leaves_job_processes": "SHD-7: the ladder's last rung records the jobs killed and returns while "
    "their processes (one that left its group) still live",
    "call_id_ignores_claim": "TSK-3: a member derives a call's id without the task's claim, so a re-claimed "
    "task gets the earlier claim's job",
}

CAUGHT_BY: dict[str, list[str]] = {
    "inspection_sweeps_busy_jobs_only": [
        "tests/test_member_waits.py::test_an_inspection_kills_what_a_job_recorded_killed_left_behind"
    ],
    "ladder_leaves_job_processes": [
        "tests/test_member_waits.py::test_the_ladders_last_rung_returns_once_its_jobs_processes_are_gone"
    ],
    "inspection_kills_before_checking": [
        "tests/test_member_waits.py::test_an_inspection_of_a_member_that_is_not_unhealthy_kills_nothing"
    ],
    "close_leaves_zombies": ["tests/test_processes.py::test_close_kills_every_job_and_unknown_jobs_are_refused"],
    "safe_point_ignores_draining": [
        "tests/test_runtime.py::test_draining_raises_drain_requested_at_the_next_safe_point_not_inside_a_tool"
    ],
    "unit_deadline_ignored": ["tests/test_runtime.py::test_the_unit_deadline_stops_the_step"],
    "signal_exits_at_once": [
        "tests/test_member_processes.py::test_a_signal_makes_the_member_shut_itself_down_in_order"
    ],
    "ladder_skips_sigterm": [
        "tests/test_member_processes.py::test_the_ladder_stops_at_the_recheck_when_the_drain_completes"
    ],
    "member_signal_reaches_jobs": [
        "tests/test_member_processes.py::test_the_ladder_stops_at_the_recheck_when_the_drain_completes"
    ],
    "signal_exit_cancels_any_job": [
        "tests/test_signal_exit.py::test_a_non_cancellable_job_is_waited_for_never_signalled"
    ],
    "signal_exit_keeps_requests": ["tests/test_signal_exit.py::test_the_signal_exit_cancels_its_own_approval_requests"],
    "processes_found_by_id_alone": [
        "tests/test_member_processes.py::test_inspecting_a_lost_member_never_touches_another_teams_processes",
        "tests/test_processes.py::test_another_process_can_kill_a_job_it_did_not_start",
    ],
    "call_id_ignores_claim": [
        "tests/test_call_ids.py::test_two_calls_share_an_id_exactly_when_they_are_one_call_of_one_claim",
        "tests/test_call_ids.py::test_a_task_claimed_again_at_the_same_step_makes_a_new_call",
    ],
    # not process mutants: the model tests never receive a foreign message (reference.Harness.receive)
    # and never let a member ask for a shutdown; the conformance suite's bad input does
}
"""Mutant → the tests that must fail with it (run by ``teamproto mutants`` instead of the model tests)."""
