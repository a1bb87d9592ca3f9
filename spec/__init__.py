"""teamproto's executable specification: machines, guards, schemas, clauses, model, invariants.

Pure: no I/O, no clock, no randomness (STYLE rule 1). Everything here is derived from the
machine classes in :mod:`spec.machines` and the schema builders in :mod:`spec.schemas`.
"""

from __future__ import annotations

from . import _compiled

_compiled.extend(__path__, "spec")  # the compiled explorer, if a fresh build exists

from ._tables import (
    Edge,
    IllegalTransition,
    MachineTable,
    UnknownMachine,
    UnknownStatus,
    edges,
    ensure_transition,
    final_states,
    initial_state,
    machine_table,
    open_states,
    target_of,
    transition_table,
    validate_status,
)
from .clauses import CLAUSES, UnknownClause, require_clauses
from .errors import ProtocolError
from .machines import EVENT_NOTES, MACHINES, STATE_NOTES
from .schemas import (
    MESSAGE_SCHEMAS,
    MESSAGE_TYPES,
    REASON_CODES,
    RECORD_SCHEMAS,
    SNAPSHOT_SCHEMA,
    SchemaError,
    validate_message,
    validate_record,
    validate_snapshot,
    with_defaults,
)

__all__ = [
    "CLAUSES",
    "EVENT_NOTES",
    "MACHINES",
    "MESSAGE_SCHEMAS",
    "MESSAGE_TYPES",
    "REASON_CODES",
    "RECORD_SCHEMAS",
    "SNAPSHOT_SCHEMA",
    "STATE_NOTES",
    "Edge",
    "IllegalTransition",
    "MachineTable",
    "ProtocolError",
    "SchemaError",
    "UnknownClause",
    "UnknownMachine",
    "UnknownStatus",
    "edges",
    "ensure_transition",
    "final_states",
    "initial_state",
    "machine_table",
    "open_states",
    "require_clauses",
    "target_of",
    "transition_table",
    "validate_message",
    "validate_record",
    "validate_snapshot",
    "validate_status",
    "with_defaults",
]
