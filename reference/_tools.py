"""Protected tools: per-tool argument normalisation (APR-2) and idempotent execution (APR-8)."""

from __future__ import annotations

import posixpath
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from spec.ids import arguments_digest
from spec.redaction import redact

from ._mutants import broken, mutated_arguments

Arguments = dict[str, Any]


@dataclass
class Tool:
    """A tool the harness can run. ``normalize`` is part of the spec for that tool (APR-2):
    it runs before hashing, so equivalent arguments get the same digest."""

    name: str
    run: Callable[[str, Arguments], dict[str, Any]]
    normalize: Callable[[Arguments], Arguments] = lambda arguments: arguments
    protected: bool = True
    lookup: Callable[[str], dict[str, Any] | None] | None = None
    """Outcome of the call made under an idempotency key, or None if no such call happened."""

    def digest(self, arguments: Arguments) -> str:
        if not isinstance(arguments, dict):
            from ._team_errors import BadArguments

            raise BadArguments(f"the arguments of {self.name}", "a JSON object (a dict)", arguments)
        normalized = self.normalize(arguments)
        if broken("numbers_conflated") or broken("list_order_ignored"):
            normalized = mutated_arguments(normalized)
        return arguments_digest(self.name, normalized)


def redact_json(value: Any) -> Any:
    """:func:`spec.redaction.redact` applied to every string of a JSON value, keys included
    (AUD-3): what a tool returns or fails with is stored redacted, whatever its shape."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {redact(str(key)): redact_json(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [redact_json(item) for item in value]
    return value


def normalize_paths(*fields: str, defaults: Arguments | None = None) -> Callable[[Arguments], Arguments]:
    """A normaliser that fills defaults and normalises the named path arguments."""

    def normalize(arguments: Arguments) -> Arguments:
        result = {**arguments, **(defaults or {})} if broken("defaults_override") else {**(defaults or {}), **arguments}
        names = [k for k, v in result.items() if isinstance(v, str)] if broken("every_string_a_path") else fields
        for name in names:
            if isinstance(result.get(name), str):
                result[name] = posixpath.normpath(result[name])
        return result

    return normalize


@dataclass
class RecordingTool:
    """An external system that remembers every call by idempotency key (the tests' "world")."""

    name: str = "deploy"
    calls: list[tuple[str, Arguments]] = field(default_factory=list)
    fail: bool = False

    def run(self, key: str, arguments: Arguments) -> dict[str, Any]:
        self.calls.append((key, arguments))
        if self.fail:
            raise RuntimeError(f"{self.name} failed")
        return {"ok": True, "calls": len(self.calls)}

    def lookup(self, key: str) -> dict[str, Any] | None:
        return next(({"ok": not self.fail} for k, _ in self.calls if k == key), None)

    def tool(self, normalize: Callable[[Arguments], Arguments] | None = None) -> Tool:
        return Tool(self.name, self.run, normalize or normalize_paths("path"), lookup=self.lookup)


@dataclass
class IdempotentTool:
    """An external system that deduplicates by idempotency key as real ones do (an HTTP API's
    ``Idempotency-Key``, a conditional put): the first call under a key has an effect and its
    outcome is kept; a repeated key returns that outcome and has no second effect. So a wrong key
    shows: a key shared by two calls loses the second effect, a key that changes repeats it.
    ``output`` is text the system puts into its results and its errors (a test puts a secret
    there, as a real tool echoes a connection string or a token)."""

    name: str = "deploy"
    output: str = ""
    fail: bool = False
    calls: list[tuple[str, Arguments]] = field(default_factory=list)
    """Every call as it arrived, repeats included."""
    effects: list[tuple[str, Arguments]] = field(default_factory=list)
    """Every call that had an effect: one per key."""
    outcomes: dict[str, dict[str, Any]] = field(default_factory=dict)

    def run(self, key: str, arguments: Arguments) -> dict[str, Any]:
        self.calls.append((key, arguments))
        if key not in self.outcomes:
            self.effects.append((key, arguments))
            self.outcomes[key] = {"ok": not self.fail, "effect": len(self.effects), "output": self.output}
        outcome = dict(self.outcomes[key])
        if not outcome["ok"]:
            raise RuntimeError(f"{self.name} failed under key {key}: {self.output}")
        return outcome

    def lookup(self, key: str) -> dict[str, Any] | None:
        outcome = self.outcomes.get(key)
        return None if outcome is None else dict(outcome)

    def effect_keys(self) -> list[str]:
        return [key for key, _ in self.effects]

    def tool(self, normalize: Callable[[Arguments], Arguments] | None = None) -> Tool:
        return Tool(self.name, self.run, normalize or normalize_paths("path"), lookup=self.lookup)
