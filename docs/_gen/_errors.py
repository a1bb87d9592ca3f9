"""The error catalogue: every ``ProtocolError`` subclass of ``spec`` and ``reference``.

For each: where it is defined, whether it is *definite* (nothing changed) or *indefinite* (it may
have happened), its docstring, and its message as a template — the class instantiated with the
names of its parameters — which is what the caller reads and says what to do next.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from typing import Any

import reference
import spec
import teamproto
from spec.errors import ProtocolError

ACTION = {
    True: "Nothing changed: act on the message (fix the input it names, or request anew), then try again.",
    False: "It may have happened: look the outcome up by its idempotency key before doing anything else.",
}

TODO = {True: "act on the message; nothing to undo", False: "look the outcome up before acting"}


def _modules() -> list[Any]:
    modules = []
    for package in (spec, reference, teamproto):
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            if info.name.endswith("__main__") or "_cli" in info.name:
                continue
            modules.append(importlib.import_module(info.name))
    return modules


def error_classes() -> list[type[ProtocolError]]:
    """Every subclass of ProtocolError defined in spec, reference or the command line (teamproto), sorted by
    module and name."""
    found: dict[str, type[ProtocolError]] = {}
    for module in _modules():
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, ProtocolError) and cls.__module__.split(".")[0] in ("spec", "reference", "teamproto"):
                found[f"{cls.__module__}.{cls.__qualname__}"] = cls
    return [found[k] for k in sorted(found)]


def template(cls: type[ProtocolError]) -> str:
    """The error's message with each argument replaced by ``<its name>``."""
    try:
        parameters = list(inspect.signature(cls.__init__).parameters.values())[1:]
        arguments: list[Any] = []
        for parameter in parameters:
            if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
                continue
            placeholder = f"<{parameter.name}>"
            hint = str(parameter.annotation)
            arguments.append(frozenset({placeholder}) if "set" in hint else placeholder)
        return str(cls(*arguments))
    except Exception:  # an error whose message cannot be built from placeholders: show its docstring only
        return ""


def _doc(cls: type) -> str:
    own = cls.__dict__.get("__doc__")
    return " ".join(inspect.cleandoc(own).split()) if own else ""


def error_catalogue() -> str:
    """The page."""
    from reference.driver import code_of

    rows = [
        "| error | code | kind | what to do | defined in | meaning | message (template) |",
        "|---|---|---|---|---|---|---|",
    ]
    for cls in error_classes():
        base = cls.__mro__[1].__name__
        message = template(cls).replace("|", "\\|")
        inherited = f"A kind of `{base}`" + (f": {_doc(cls.__mro__[1])}" if _doc(cls.__mro__[1]) else ".")
        meaning = (_doc(cls) or inherited).replace("|", "\\|")
        kind = "definite" if cls.definite else "**indefinite**"
        template_cell = message and f"`` {message} ``"
        todo = getattr(cls, "advice", None) or TODO[cls.definite]
        cells = [f"`{cls.__name__}`", f"`{code_of(cls)}`", kind, todo, f"`{cls.__module__}`", meaning, template_cell]
        rows.append("| " + " | ".join(cells) + " |")
    return (
        "# Error catalogue\n\n"
        "Every typed error of `spec` and `reference`. Each says whether it is *definite* or "
        "*indefinite* (the distinction Maelstrom's error codes make):\n\n"
        f"- **definite** — {ACTION[True]}\n- **indefinite** — {ACTION[False]}\n\n"
        "A command-line user sees the message as one line on stderr and exit status 2. A conformance "
        "driver replies the **code** (`conformance/README.md`: an `error` reply's `code`, `definite` "
        "and `message`); several errors may share one.\n\n" + "\n".join(rows) + "\n"
    )
