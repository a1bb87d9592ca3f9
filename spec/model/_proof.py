"""The flat engine is used only for the model it was proven equal to (DESIGN rule 1; outside review 61).

:mod:`spec.model._flat` restates the model's operations on plain tuples, and ``teamproto check``
explores the configurations it supports (``pair``, ``pair_crashes``, ``wide``, ``pair_plan``,
``standard``) on it. It is one source only as long as it is proven equal to the model:
``model_tests/test_flat.py`` proves it per transition on ``pair`` and ``wide`` in CI, and ``python
-m model_tests.flat_proof --write`` proves it on the whole state space of every pinned
configuration it supports, and pins the digests of both sources it proved it for in
``flat_proof.json``. A change of the model's operations that the flat form does not repeat left
``pair_crashes`` saying "all checks hold" (review 61's plant in reconciliation; only the tests'
equality noticed it): now, while the model's sources are not the ones proven, the explorer runs
the model itself (slower, but the model as written) and ``teamproto check`` says so; the
proof's test fails until the proof is run again.

The model's sources: every ``.py`` of this package but the flat form and this file, the machine
tables (``spec/_tables.py``) and the model's own search (``spec/explore.py``, whose loop the flat
search restates). The flat form's: ``_flat.py`` and ``spec/_flat_explore.py``. The proof covers
the pinned configurations the flat form supports and ``model_tests/test_flat.py``'s variants with
time (deadline regions, as ``standard`` has; a bounded clock past deadlines).
"""

from __future__ import annotations

import hashlib
import json
from functools import cache
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SPEC = HERE.parent
PIN = HERE / "flat_proof.json"
FLAT = (HERE / "_flat.py", SPEC / "_flat_explore.py")
COMMAND = "python -m model_tests.flat_proof --write"


def _digest(paths: list[Path], root: Path = SPEC) -> str:
    h = hashlib.sha256()
    for path in paths:
        h.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def model_sources() -> list[Path]:
    own = {HERE / "_flat.py", HERE / "_proof.py"}
    return [*sorted(p for p in HERE.glob("*.py") if p not in own), SPEC / "_tables.py", SPEC / "explore.py"]


@cache
def digests() -> dict[str, str]:
    """The digests of the model's sources and of the flat form's, as they are now (read once per process)."""
    return {"model": _digest(model_sources()), "flat": _digest(list(FLAT))}


def pinned() -> dict[str, Any] | None:
    try:
        data = json.loads(PIN.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


@cache
def proven() -> bool:
    """Whether the flat form was proven equal to the model as its sources now stand."""
    pin = pinned()
    return pin is not None and all(pin.get(name) == value for name, value in digests().items())


def stale() -> str:
    """Why the flat form is not used (empty when it is proven for these sources)."""
    if proven():
        return ""
    pin = pinned()
    if pin is None:
        return f"no proof of the flat engine is pinned ({PIN.name}); {COMMAND} proves it"
    changed = [name for name, value in digests().items() if pin.get(name) != value]
    return (
        f"the {' and the '.join(changed)} source{'s' if len(changed) > 1 else ''} changed since the flat engine was "
        f"proven equal to the model: its configurations run on the model itself until {COMMAND}"
    )


__all__ = ["COMMAND", "PIN", "digests", "model_sources", "pinned", "proven", "stale"]
