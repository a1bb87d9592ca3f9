"""Redaction of secrets before anything is stored (AUD-3, INV-10, APR-4).

Pure: a list of named patterns and :func:`redact`. The shapes follow what providers actually
issue; ``spec.secret_corpus`` holds fabricated examples of each shape, and INV-10 checks that none
of them appears in any stored record.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

REDACTED = "[REDACTED]"


@dataclass(frozen=True)
class SecretPattern:
    name: str
    pattern: re.Pattern[str]
    keep_group: int = 0
    """When > 0, the text of this group is kept and only the rest of the match is replaced."""


def _p(name: str, regex: str, keep_group: int = 0, flags: int = 0) -> SecretPattern:
    return SecretPattern(name, re.compile(regex, flags), keep_group)


PATTERNS: tuple[SecretPattern, ...] = (
    _p(
        "private_key",
        r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|\Z)",
        flags=re.S,
    ),
    # A scheme starts only where a run of scheme characters starts, and its run is taken whole
    # (possessive): otherwise every letter of a long word starts a scan to its end (quadratic).
    # The password may hold "@" and ":" as people type it (unencoded): it runs to the last "@"
    # that a host name follows, within 200 characters; a "/" ends it (an unencoded "/" cannot be
    # told from a path: "http://host:8080/users/bob@example.com" has no password).
    _p(
        "url_password",
        r"((?<![a-zA-Z0-9+.-])[a-zA-Z][a-zA-Z0-9+.-]*+://[^/\s:@]*:)[^\s/]{1,200}(?=@[^\s@/:]{1,253}(?:[\s/:?#]|\Z))",
        keep_group=1,
    ),
    _p("bearer_token", r"(?i)(\bbearer\s+)[A-Za-z0-9._~+/=-]{8,}", keep_group=1),
    _p("basic_auth", r"(?i)(\bauthorization[\"']?\s*[=:]\s*[\"']?basic\s+)[A-Za-z0-9+/=]{4,}", keep_group=1),
    _p("jwt", r"\beyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}"),
    _p("anthropic_key", r"\bsk-ant-[A-Za-z0-9_-]{20,}"),
    _p("openai_key", r"\bsk-(?:proj-|svcacct-)?[A-Za-z0-9_-]{20,}"),
    _p("stripe_key", r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}"),
    _p("github_token", r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})"),
    _p("slack_token", r"\bxox[abposr]-[A-Za-z0-9-]{10,}"),
    _p("google_api_key", r"\bAIza[0-9A-Za-z_-]{35}"),
    _p("aws_access_key_id", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    # A name of an environment variable, a flag, a header or a JSON or YAML key that holds a
    # secret (DB_PASSWORD=, --password=, x-api-key:, "password": ), then its value: quoted (spaces,
    # escaped quotes and all) or a run up to a space or a quote. A name starts only where a run of
    # name characters starts, and has at most 100 of them on each side of its keyword: a name matched from
    # any word boundary with unbounded runs took cubic time on hyphenated text ("a-a-a-…").
    _p(
        "env_assignment",
        r"(?i)((?<![A-Z0-9_-])[A-Z0-9_-]{0,100}"
        r"(?:SECRET|TOKEN|PASSWORD|PASSWD|PWD|API[_-]?KEY|ACCESS[_-]?KEY|PRIVATE[_-]?KEY|CREDENTIALS?)"
        r"[A-Z0-9_-]{0,100}[\"']?\s*[=:]\s*)(?![\s\"']*\[REDACTED\])"
        r"(?:\"(?:[^\"\\\n]|\\.)*\"|'(?:[^'\\\n]|\\.)*'|[\"']?[^\s\"']+[\"']?)",
        keep_group=1,
    ),
)


def redact(text: str) -> str:
    """Replace every secret-shaped part of ``text`` with ``[REDACTED]``; idempotent."""
    for secret in PATTERNS:
        if secret.keep_group:
            keep = secret.keep_group
            text = secret.pattern.sub(lambda match: match.group(keep) + REDACTED, text)  # noqa: B023
        else:
            text = secret.pattern.sub(REDACTED, text)
    return text
