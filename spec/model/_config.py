"""Named model configurations (like TLA+ model configs), read from package data.

Each file in ``spec/model/configs/`` is one small JSON object; ``manifest.json`` pins the expected
distinct-state count of each, so a change of the model that changes the state space shows up in
review (tests fail until the manifest is updated in the same commit).
"""

from __future__ import annotations

import json
from dataclasses import MISSING, dataclass, fields
from importlib import resources
from typing import Any

from ..errors import ProtocolError


@dataclass(frozen=True)
class Config:
    name: str
    description: str
    members: int
    tasks: int
    approvals: int
    plans: int
    shutdowns: int
    max_ticks: int | None  # None: unbounded time, keyed by deadline regions (spec/model/_time.py)
    ttl_ticks: int
    unit_ticks: int
    plan_steps: int
    crashes: bool
    jobs: bool
    lapses: bool
    max_incarnation: int
    profile_changes: int
    max_retractions: int
    symmetry: bool
    liveness: bool
    require_coverage: bool
    split: bool = False  # explored as its two protocols apart (spec/split.py): approvals, plans
    crash_between: bool = False  # the harness may also crash between two operations (spec/split.py)
    part: str = ""  # a part of a split configuration (spec/split.py): "approvals" or "plans"; set by parts()

    @property
    def regions(self) -> bool:
        """Time runs unbounded and the explorer keys it by deadline regions (``"max_ticks": null``)."""
        return self.max_ticks is None

    @property
    def units(self) -> bool:
        """A claimed task's unit deadline (SHD-9) can pass: ``unit_ticks`` within a bounded clock."""
        return self.max_ticks is not None and self.unit_ticks <= self.max_ticks


class UnknownConfig(ProtocolError):
    def __init__(self, name: str, known: list[str]) -> None:
        self.name = name
        super().__init__(f"unknown model configuration {name!r}; known: {', '.join(known)}")


class BadConfig(ProtocolError):
    def __init__(self, name: str, reason: str) -> None:
        super().__init__(f"model configuration {name!r}: {reason}")


ENGINES = ("flat", "model")
"""The accepted values of ``TEAMPROTO_ENGINE``: ``flat`` (plain tuples wherever
:func:`spec.model._flat.supports` the run), ``model`` (the model's own states, always); unset,
``flat`` where it is proven equal to the model as it stands (:mod:`spec.model._proof`), else
``model``."""


class BadEngine(ProtocolError):
    """``TEAMPROTO_ENGINE`` names no engine: refused before any search starts."""

    def __init__(self, value: str) -> None:
        self.value = value
        super().__init__(
            f"TEAMPROTO_ENGINE={value!r} names no engine; use one of {', '.join(ENGINES)}, or unset it (flat)"
        )


def engine_choice(value: str | None) -> str:
    """The engine ``TEAMPROTO_ENGINE``'s ``value`` selects (unset or empty: ``flat``)."""
    if not value:
        return "flat"
    if value not in ENGINES:
        raise BadEngine(value)
    return value


def _folder() -> Any:
    return resources.files("spec.model") / "configs"


def config_names() -> list[str]:
    return sorted(p.name[:-5] for p in _folder().iterdir() if p.name.endswith(".json") and p.name != "manifest.json")


def parse_config(name: str, document: dict[str, Any]) -> Config:
    expected = {f.name for f in fields(Config)} - {"name"}
    optional = {f.name for f in fields(Config) if f.default is not MISSING}  # false unless given
    missing, unknown = expected - optional - set(document), set(document) - expected
    if missing or unknown:
        raise BadConfig(name, f"missing {sorted(missing)}, unknown {sorted(unknown)}")
    config = Config(name=name, **document)
    if config.max_ticks is not None and (not isinstance(config.max_ticks, int) or config.max_ticks < 0):
        raise BadConfig(name, f"max_ticks must be a whole number, or null for unbounded time, not {config.max_ticks!r}")
    for flag in ("split", "crash_between"):
        if not isinstance(getattr(config, flag), bool):
            raise BadConfig(name, f"{flag} must be true or false, not {getattr(config, flag)!r}")
    if config.split and not (config.approvals and config.plans):
        raise BadConfig(name, "a split configuration needs approvals and plans: it explores each apart")
    if config.part:
        raise BadConfig(name, "part is set by a split configuration for its parts (spec/split.py), not in a file")
    return config


def load_config(name: str) -> Config:
    """The configuration ``name``; ``<split>/approvals`` or ``<split>/plans`` is a part of a split
    configuration (:func:`spec.split.parts`)."""
    from ..split import PARTS, parts  # here: spec.split needs this module

    base, _, part = name.partition("/")
    path = _folder() / f"{base}.json"
    if not path.is_file() or (part and part not in PARTS):
        raise UnknownConfig(name, _known())
    config = parse_config(base, json.loads(path.read_text(encoding="utf-8")))
    if not part:
        return config
    if not config.split:
        raise UnknownConfig(name, _known())
    return parts(config)[PARTS.index(part)]


def _known() -> list[str]:
    """Every configuration's name, and the parts of each split one."""
    from ..split import PARTS

    names = config_names()
    split = [n for n in names if json.loads((_folder() / f"{n}.json").read_text(encoding="utf-8")).get("split")]
    return names + [f"{n}/{part}" for n in split for part in PARTS]


def pins(name: str) -> dict[str, Any]:
    """The manifest's figures for configuration ``name`` (empty if none); for a part of a split
    configuration, ``<split>/<part>``, those pinned under the split one's ``parts``."""
    base, _, part = name.partition("/")
    entry = manifest().get(base, {})
    return dict(entry.get("parts", {}).get(part, {})) if part else entry


def manifest() -> dict[str, dict[str, Any]]:
    """Configuration name → pinned figures (``states``, ``transitions``). A configuration never
    explored to completion has ``null`` figures and says why under ``pending``."""
    data: dict[str, dict[str, Any]] = json.loads((_folder() / "manifest.json").read_text(encoding="utf-8"))
    return data
