"""Redaction removes every secret shape of the corpus and keeps the surrounding text.

Clause: AUD-3, INV-10, APR-4.
"""

from __future__ import annotations

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
