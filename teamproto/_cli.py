"""The ``teamproto`` command line (DESIGN "The command line").

Every command has ``--json`` for machines; exit status 0 means everything held, 1 means a check
failed (stale diagram, violated invariant, surviving mutant), 2 means bad usage or a missing tool.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console

from spec.errors import ProtocolError

Command = Callable[[argparse.Namespace, Console], int]
_COMMANDS: dict[str, Command] = {}


def _emit_json(document: Any) -> None:
    json.dump(document, sys.stdout, indent=2, sort_keys=True)
    sys.stdout.write("\n")


def _diagrams(args: argparse.Namespace, console: Console) -> int:
    from ._diagrams import stale_diagrams, write_diagrams

    directory = Path(args.dir)
    if args.check:
        stale = stale_diagrams(directory)
        if args.json:
            _emit_json({"stale": [str(p) for p in stale], "ok": not stale})
        for path in stale if not args.json else ():
            console.print(f"[red]stale[/red] {path} — run `teamproto diagrams` and commit the result")
        if not stale and not args.json:
            console.print(f"diagrams in {directory} are up to date")
        return 1 if stale else 0
    changed = write_diagrams(directory)
    if args.json:
        _emit_json({"written": [str(p) for p in changed]})
    else:
        for path in changed:
            console.print(f"wrote {path}")
        console.print(f"{len(changed)} file(s) changed in {directory}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="teamproto", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)

    diagrams = commands.add_parser("diagrams", help="generate diagrams/<machine>.dot and .svg from the spec")
    diagrams.add_argument("--check", action="store_true", help="fail (exit 1) if a committed diagram is stale")
    diagrams.add_argument("--dir", default="diagrams", help="output folder (default: diagrams)")
    diagrams.add_argument("--json", action="store_true", help="machine-readable output")
    _COMMANDS["diagrams"] = _diagrams

    for name, register in _EXTRA_COMMANDS.items():
        _COMMANDS[name] = register(commands)
    return parser


_EXTRA_COMMANDS: dict[str, Callable[[Any], Command]] = {}


def extra_command(name: str) -> Callable[[Callable[[Any], Command]], Callable[[Any], Command]]:
    """Register a subcommand defined in another module: ``register(subparsers) -> handler``."""

    def decorate(register: Callable[[Any], Command]) -> Callable[[Any], Command]:
        _EXTRA_COMMANDS[name] = register
        return register

    return decorate


def main(argv: Sequence[str] | None = None) -> int:
    from . import _commands  # noqa: F401  (registers the other subcommands)

    args = build_parser().parse_args(argv)
    console = Console(stderr=bool(getattr(args, "json", False)))
    try:
        return _COMMANDS[args.command](args, console)
    except ProtocolError as error:
        console.print(f"[red]error[/red] ({error.kind}): {error}")
        return 2


if __name__ == "__main__":
    # Run through the imported module, so that subcommands registered on it are seen.
    from teamproto import _cli

    raise SystemExit(_cli.main())
