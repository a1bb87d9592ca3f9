"""Descriptions of states and events, kept beside each machine class.

python-statemachine copies ``State`` and ``Event`` objects when it builds a class, so
attributes set on them are lost; each machine module therefore keeps a ``STATES`` and an
``EVENTS`` mapping next to its class. ``tests/test_machines.py`` checks that the keys equal the
class's states and events exactly, so a note can never drift from its machine.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from ..clauses import require_clauses


@dataclass(frozen=True)
class Note:
    """One line of prose and the clause ids a state or event implements."""

    text: str
    clauses: tuple[str, ...]


def describe(**entries: tuple[str, str]) -> Mapping[str, Note]:
    """Build notes from ``name=("one line", "APR-1 APR-4")`` pairs (clause ids space-separated)."""
    built = {}
    for name, (text, clause_ids) in entries.items():
        built[name] = Note(text, require_clauses(*clause_ids.split()))
    return MappingProxyType(built)
