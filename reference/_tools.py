"""Protected tools: per-tool argument normalisation (APR-2) and idempotent execution (APR-8)."""

from __future__ import annotations

import posixpath
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from spec.ids import arguments_digest

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
        return arguments_digest(self.name, self.normalize(arguments))


def normalize_paths(*fields: str, defaults: Arguments | None = None) -> Callable[[Arguments], Arguments]:
    """A normaliser that fills defaults and normalises the named path arguments."""

    def normalize(arguments: Arguments) -> Arguments:
        result = {**(defaults or {}), **arguments}
        for name in fields:
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
