"""Redaction removes every secret shape of the corpus and keeps the surrounding text.

Clause: AUD-3, INV-10, APR-4.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from spec.redaction import REDACTED, redact
from spec.secret_corpus import CARRIERS, SECRETS, carrier


@pytest.mark.clause("AUD-3", "INV-10")
@pytest.mark.parametrize("name", sorted(CARRIERS))
def test_every_real_secret_shape_is_redacted(name: str) -> None:
    """Each carrier line loses its secret, and redacting again changes nothing."""
    line = carrier(name)
    assert SECRETS[name] in line
    redacted = redact(line)
    assert not [s for s in SECRETS.values() if s in redacted]
    assert not fragments(SECRETS[name], line, redacted), "a part of the secret is stored"
    assert REDACTED in redacted
    assert redact(redacted) == redacted


FRAGMENT = 5
"""A run of this many characters of a secret that survives is a leak (a password cut at its first
"@" or space left the rest: ``p[REDACTED]@ssw0rd-…``, ``"correct[REDACTED] horse …"``)."""


def fragments(secret: str, line: str, redacted: str) -> list[str]:
    """The runs of :data:`FRAGMENT` characters of ``secret`` that ``redacted`` still holds, but
    for those that the line also has outside the secret."""
    outside = line.replace(secret, "\0")
    runs = {secret[i : i + FRAGMENT] for i in range(len(secret) - FRAGMENT + 1)}
    return sorted(run for run in runs if run in redacted and run not in outside)


@pytest.mark.clause("AUD-3")
def test_context_around_a_secret_is_kept() -> None:
    assert redact("psql postgres://deploy:hunter2-long@db:5432/app") == "psql postgres://deploy:[REDACTED]@db:5432/app"
    assert redact("DB_PASSWORD=abc123 make deploy") == "DB_PASSWORD=[REDACTED] make deploy"
    assert redact("deploy the orders service to staging") == "deploy the orders service to staging"


@pytest.mark.clause("AUD-3")
@given(st.text(alphabet=st.characters(codec="ascii"), max_size=60), st.sampled_from(sorted(SECRETS)))
def test_secret_embedded_anywhere_in_a_carrier_is_redacted(prefix: str, name: str) -> None:
    """Text before a carrier line never lets its secret through."""
    redacted = redact(prefix + " " + carrier(name))
    assert SECRETS[name] not in redacted


@pytest.mark.clause("AUD-3", "XPR-3")
def test_redaction_time_grows_with_the_text_not_faster() -> None:
    """Every pattern runs in time linear in the text on adversarial input (``bench/redaction.py``:
    twenty inputs at 5,000 and 50,000 characters, each growing at most 30× for 10× of text). A
    catastrophic pattern stalls every write that stores a tool's output: an outside review found
    ``env_assignment`` cubic on hyphenated text (3.6 KB took 31 s) and ``url_password`` quadratic
    on a run of letters (100 KB took 15 s). Relative growth in one run, not a time limit: the
    subprocess's timeout only ends a hang."""
    root = Path(__file__).resolve().parents[1]
    out = subprocess.run(
        [sys.executable, str(root / "bench" / "redaction.py"), "--json", "--sizes", "5000", "50000"],
        capture_output=True, text=True, timeout=600, cwd=root,
    )  # fmt: skip
    report = json.loads(out.stdout)
    assert out.returncode == 0 and report["too_slow"] == [], report
    assert len(report["inputs"]) >= 20


@pytest.mark.clause("INV-10", "AUD-3")
def test_a_jobs_command_is_run_as_given_and_stored_redacted() -> None:
    """A job's command may carry a secret (``DB_PASSWORD=… make deploy``): the runner runs it as
    given, the job's record keeps it redacted, and no secret of any shape is stored (INV-10)."""
    import reference as r
    from spec import invariants

    class Recording(r.InProcessJobRunner):
        def __init__(self) -> None:
            super().__init__()
            self.commands: list[str] = []

        def start(self, job_id: str, command: str) -> None:
            super().start(job_id, command)
            self.commands.append(command)

    runner = Recording()
    h = r.Harness(r.MemoryStorage(), r.ManualClock(0.0), [r.RecordingTool("deploy").tool()], jobs=runner)
    h.add_member("m0", ["deploy"])
    h.add_task("t0")
    h.claim("m0", "t0")
    command = "make deploy " + " ".join(carrier(name) for name in sorted(CARRIERS))
    h.jobs.start("m0", "j1", command)
    assert runner.commands == [command]
    snap = h.snapshot()
    assert snap["job"][0]["command"] == redact(command) != command
    assert invariants.no_secret_stored(snap) == []
