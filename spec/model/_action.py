"""A labelled move of the model: a plain, interpreted record (see ``spec/_compiled.py``: records
that are pickled between processes or compared by value stay out of the compiled modules)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, order=True)
class Action:
    """One labelled move of the model. ``args`` are JSON-able (indices, booleans, strings)."""

    name: str
    args: tuple[tuple[str, Any], ...] = ()
    crash_after: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"action": self.name, "args": dict(self.args), "crash_after": self.crash_after or None}

    def __str__(self) -> str:
        text = f"{self.name}({', '.join(f'{k}={v!r}' for k, v in self.args)})"
        return f"{text} ⚡ crash after {self.crash_after}" if self.crash_after else text
