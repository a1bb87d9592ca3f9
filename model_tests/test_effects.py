"""What the model's operations leave where no snapshot can tell (SHD-7, APR-6, REC-1).

The protocol's checks read snapshots, the contract every implementation exports. Two effects of
the model are not in that contract: the world's side of a tool call (``Execution.world_calls``, a
ghost: how many calls the tool actually received) and a force-termination's effect on the jobs
(a lapsed member's jobs may still run, so a snapshot cannot tell a job that outlived a
force-termination from one that outlived a lapse). Outside reviews changed both, and only the
pinned counts, the flat engine's differential test or the refinement against the reference
noticed. Here, on every state of four configurations: a call recorded ``succeeded`` reached the
world; and a force-termination ends every job of its member, a cancellable one asked to stop
included (JOB-1's ``cancel_requested`` is not stopped).
"""

from __future__ import annotations

import pytest

from spec.explore import explore_states
from spec.model import Model, load_config
from spec.safety import BUSY_JOB

CONFIGS = ("tiny", "shutdown", "restarts", "approval_fencing")


@pytest.mark.clause("SHD-7", "APR-6", "REC-1")
def test_a_call_recorded_as_succeeded_ran_and_a_force_termination_leaves_no_job_running() -> None:
    succeeded = terminated = 0
    for name in CONFIGS:
        model = Model(load_config(name))
        _, states = explore_states(model, dead_data=False)
        assert states is not None
        for s in states:
            for ex in s.executions:
                if ex.status == "succeeded":
                    succeeded += 1
                    assert ex.world_calls >= 1, f"{name}: a call recorded succeeded never reached the tool: {s}"
            if s.crashed:
                continue
            for action, steps in model.operations(s):
                if action.name != "shutdown.force_terminate":
                    continue
                after = s
                for _, write in steps:
                    after = write(after)
                member = s.shutdowns[action.args[0][1]].target
                busy = s.jobs[member].status in BUSY_JOB
                terminated += busy
                assert after.jobs[member].status not in BUSY_JOB, f"{name}: {action} left {after.jobs[member]}"
    assert succeeded > 0 and terminated > 0  # both effects were met, with a job running or asked to stop
