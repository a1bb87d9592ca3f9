"""Fabricated secrets in the shapes real providers issue — the INV-10 test corpus (AUD-3).

None of these is a live credential; each is built to match the provider's published shape so
that a redaction rule that stops matching a real shape fails the tests.
"""

from __future__ import annotations

SECRETS: dict[str, str] = {
    "openai_key": "sk-proj-T3stK3yF0rRedact10nOnly0123456789abcdEFGH",
    "anthropic_key": "sk-ant-api03-Fak3Fak3Fak3Fak3Fak3Fak3Fak3Fak3-AAAA",
    "aws_access_key_id": "AKIAQ3EXAMPLE7TESTKY",
    "github_token": "ghp_T3stT0kenN0tRealAbCdEfGhIjKlMnOpQrSt12",
    "github_pat": "github_pat_11ABCDEFG0_T3stOnlyT3stOnlyT3stOnlyT3stOnlyT3stOnly42",
    "slack_token": "xoxb-1234567890-0987654321-T3stT0kenOnly",
    "stripe_key": "sk_live_T3stOnlyN0tAR3alKey42xyz",
    "google_api_key": "AIzaSyT3st-OnlyN0tAR3alK3yAbCdEfGhIjKLM",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ0ZXN0LW9ubHkifQ.T3stSignatureOnly_abc",
    "bearer_token": "T3stBearerT0ken.abcdef123456",
    "url_password": "hunter2-T3stOnly",
    "env_password": "Pa55w0rd-T3stOnly!",
    "private_key_body": "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCT3stOnly",
    "env_quoted_password": "correct horse T3st staple",
    "json_password": "hunter22-T3stOnly-json",
    "header_api_key": "T3stHeaderKey0123456789",
    "url_password_at": "p@ssw0rd-T3stOnly",
    "url_password_colon": "p@ss:w0rd-T3stOnly",
    "url_password_no_user": "T3stRedisPassOnly",
    "basic_auth": "ZGVwbG95OlQzc3RPbmx5UGFzcw==",
    "json_basic_auth": "YWRtaW46VDNzdE9ubHlQYXNz",
    "json_escaped_password": 'ab\\"cd-T3stOnly',
}
"""Name → the secret text itself (what must never be stored)."""

CARRIERS: dict[str, str] = {
    "openai_key": "OPENAI_API_KEY={openai_key} python run.py",
    "anthropic_key": "client = Anthropic(api_key='{anthropic_key}')",
    "aws_access_key_id": "aws configure set aws_access_key_id {aws_access_key_id}",
    "github_token": "git clone https://x:{github_token}@github.com/org/repo",
    "github_pat": "token {github_pat}",
    "slack_token": "curl -H 'X-Slack: {slack_token}' https://slack.com/api",
    "stripe_key": "stripe charges list --api-key {stripe_key}",
    "google_api_key": "https://maps.googleapis.com/?key={google_api_key}",
    "jwt": "session={jwt}",
    "bearer_token": "curl -H 'Authorization: Bearer {bearer_token}' https://api.example.com",
    "url_password": "psql postgres://deploy:{url_password}@db.internal:5432/app",
    "env_password": "DB_PASSWORD={env_password}",
    "private_key_body": "-----BEGIN PRIVATE KEY-----\n{private_key_body}\n-----END PRIVATE KEY-----",
    "env_quoted_password": 'DB_PASSWORD="{env_quoted_password}"',
    "json_password": '{{"user": "deploy", "password": "{json_password}"}}',
    "header_api_key": "curl -H 'x-api-key: {header_api_key}' https://api.example.com",
    "url_password_at": "psql postgres://admin:{url_password_at}@db.internal:5432/app",
    "url_password_colon": "redis-cli -u redis://admin:{url_password_colon}@cache.internal:6379",
    "url_password_no_user": "redis-cli -u redis://:{url_password_no_user}@cache.internal:6379/0",
    "basic_auth": "curl -H 'Authorization: Basic {basic_auth}' https://api.example.com",
    "json_basic_auth": '{{"headers": {{"Authorization": "Basic {json_basic_auth}"}}}}',
    "json_escaped_password": '{{"user": "deploy", "password": "{json_escaped_password}"}}',
}
"""Name → a realistic line that carries the secret (command, URL, header, .env line, JSON config,
key file), as the tools that print them write them: a quoted value with spaces or an escaped
quote, a JSON key, a hyphenated header name, a URL password holding "@" or ":" unencoded or with no
user, an HTTP Basic authorization in a header or in JSON (outside reviews found each of these
stored in part or whole). An unencoded "/" in a URL password is not covered: it cannot be told
from a path."""


def carrier(name: str) -> str:
    """The carrier line of ``name`` with the secret filled in."""
    return CARRIERS[name].format(**SECRETS)
