"""The conformance suite (ROADMAP 4): any implementation, in any language, checked clause by
clause through a driver that speaks JSON lines (``conformance/README.md``), and its recorded logs
validated against the model. ``teamproto conformance`` is the command line.

Names are loaded on first use, so that a driver importing the protocol module (the reference's
``python -m reference.driver``) does not load the explorer and the runner at every start."""

from __future__ import annotations

import importlib
from typing import Any

_WHERE = {
    "abstract": "_abstract",
    "canonical_ids": "_abstract",
    "project": "_abstract",
    "FAILED": "_cases",
    "OK": "_cases",
    "UNIMPLEMENTED": "_cases",
    "Case": "_cases",
    "export_reference_log": "_log",
    "validate": "_log",
    "validate_file": "_log",
    "DriverError": "_protocol",
    "parse_request": "_protocol",
    "reply_problem": "_protocol",
    "Options": "_run",
    "capabilities": "_run",
    "run_suite": "_run",
    "ERROR_CODES": "_schema_src",
    "reply_schema": "_schema_src",
    "request_schema": "_schema_src",
    "VECTORS": "_vectors",
    "stale": "_vectors",
    "write_all": "_vectors",
}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'conformance' has no attribute {name!r}")
    return getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)


__all__ = sorted(_WHERE)
