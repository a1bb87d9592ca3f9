"""The ``teamproto`` command line (DESIGN "The command line").

Every command has ``--json`` for machines; exit status 0 means everything held, 1 means a check
failed (stale diagram, violated invariant, surviving mutant), 2 means bad usage or a missing tool.
Bad input is refused before anything runs: one line on stderr (``teamproto: error …``), exit 2,
and with ``--json`` a JSON document ``{"ok": false, "error": …}`` on stdout — stdout never gets
plain text under ``--json`` and no traceback reaches the user.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import traceback
from collections.abc import Callable, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any, NoReturn, TextIO

from rich.console import Console

from spec.errors import ProtocolError

Command = Callable[[argparse.Namespace, Console], int]
_COMMANDS: dict[str, Command] = {}

DESCRIPTION = (
    "A formally checked specification of how an LLM agent team approves risky actions and stops its "
    "members safely. Exit status: 0 everything held, 1 a check failed, 2 bad input or a missing tool."
)
PIPE_WIDTH = 1000
"""The console's width when the output is not a terminal: long lines are never wrapped mid-number."""


class UsageError(ProtocolError):
    """A command line that cannot run as given (a bad value, a missing file or folder). Definite:
    nothing ran and nothing was written."""


class _Parser(argparse.ArgumentParser):
    """argparse that raises :class:`UsageError` instead of printing usage and exiting, and that
    takes a flag only as written: an abbreviation (``--js`` for ``--json``) is refused, since
    :func:`main` must know before parsing whether to answer in JSON, and reads the flag as written."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["allow_abbrev"] = False
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see `{self.prog} --help`)")


def make_folder(flag: str, folder: Path) -> None:
    """Make the folder a flag names (and its parents) before anything runs, or refuse the flag."""
    if folder.exists() and not folder.is_dir():
        raise UsageError(f"{flag} {folder}: not a folder; name a folder (it is made if missing)")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise UsageError(
            f"{flag} {folder}: cannot make the folder ({error.strerror}); name a folder you can write"
        ) from None


def emit_json(document: Any) -> None:
    json.dump(document, sys.stdout, indent=2, sort_keys=True)
    sys.stdout.write("\n")


_emit_json = emit_json  # the name other modules' subcommands may use


def make_console(stderr: bool, stream: TextIO | None = None) -> Console:
    """A rich console on stdout (or stderr): at the terminal's width, or — piped — wide enough
    that no line wraps (rich would wrap at 80 columns, splitting numbers mid-line)."""
    target = stream or (sys.stderr if stderr else sys.stdout)
    terminal = hasattr(target, "isatty") and target.isatty()
    return _Console(stderr=stderr, width=None if terminal else PIPE_WIDTH, soft_wrap=not terminal)


class _Console(Console):
    """rich's console, whose closed pipe is :func:`main`'s to report as every other's (rich's own
    exits 1 silently, as a failed check would)."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError(32, "Broken pipe")


def _diagrams(args: argparse.Namespace, console: Console) -> int:
    from ._diagrams import stale_diagrams, write_diagrams

    directory = Path(args.dir)
    if directory.exists() and not directory.is_dir():
        raise UsageError(f"--dir {directory}: not a folder; name the folder the diagrams go in")
    if args.check:
        if not directory.is_dir():
            raise UsageError(f"--dir {directory}: no such folder; run `teamproto diagrams` first")
        stale = stale_diagrams(directory)
        if args.json:
            emit_json({"stale": [str(p) for p in stale], "ok": not stale})
        for path in stale if not args.json else ():
            console.print(f"[red]stale[/red] {path} — run `teamproto diagrams` and commit the result", highlight=False)
        if not stale and not args.json:
            console.print(f"diagrams in {directory} are up to date", highlight=False)
        return 1 if stale else 0
    make_folder("--dir", directory)
    changed = write_diagrams(directory)
    if args.json:
        emit_json({"written": [str(p) for p in changed], "ok": True})
    else:
        for path in changed:
            console.print(f"wrote {path}", highlight=False)
        console.print(f"{len(changed)} file(s) changed in {directory}", highlight=False)
    return 0


def version() -> str:
    try:
        return metadata.version("teamproto")
    except metadata.PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown (not installed)"


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="teamproto", description=DESCRIPTION)
    parser.add_argument("--version", action="version", version=f"teamproto {version()}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    diagrams = commands.add_parser(
        "diagrams",
        help="generate diagrams/<machine>.dot and .svg from the spec",
        description="Write diagrams/<machine>.dot and .svg from the machines (SVG needs Graphviz `dot`).",
    )
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


def _message(error: BaseException) -> str:
    return " ".join(str(error).split()) or type(error).__name__


def error_line(error: BaseException) -> None:
    """The error as one line on stderr."""
    kind = "definite" if getattr(error, "definite", True) else "indefinite"
    sys.stderr.write(f"teamproto: error ({kind}): {_message(error)}\n")


def fail(error: BaseException, as_json: bool) -> int:
    """Report an error the user can act on: one line on stderr, JSON on stdout with ``--json``; 2."""
    if as_json:
        definite = getattr(error, "definite", True)
        emit_json(
            {"ok": False, "error": {"type": type(error).__name__, "message": _message(error), "definite": definite}}
        )
    error_line(error)
    return 2


class InternalError(ProtocolError):
    """An exception no command expects — a bug in teamproto, or in a model a designer is changing
    (say, an assertion of its own the new behaviour trips): where it was raised and what it says, in
    one line; ``TEAMPROTO_TRACEBACK=1`` lets the traceback through."""

    definite = False  # a command cut short may have written part of its output

    def __init__(self, error: Exception) -> None:
        frames = traceback.extract_tb(error.__traceback__)
        where = f" at {Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else ""
        super().__init__(
            f"internal error {type(error).__name__}{where}: {_message(error)} "
            "(a bug of teamproto's or of a changed model; TEAMPROTO_TRACEBACK=1 shows the traceback)"
        )


def _reader_left() -> int:
    """stdout's reader closed the pipe: what is still buffered for it goes nowhere (so the exit's
    flush raises nothing more), one line says so on stderr; exit 141 as a shell reports SIGPIPE."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    with contextlib.suppress(OSError):
        sys.stderr.write("teamproto: stdout was closed by its reader; output cut short\n")
    return 141


def main(argv: Sequence[str] | None = None) -> int:
    from . import _commands  # noqa: F401  (registers the other subcommands)

    arguments = list(sys.argv[1:] if argv is None else argv)
    as_json = "--json" in arguments
    try:
        args = build_parser().parse_args(arguments)
        console = make_console(stderr=bool(getattr(args, "json", False)))
        return _COMMANDS[args.command](args, console)
    except ProtocolError as error:
        return fail(error, as_json)
    except BrokenPipeError:  # the reader of stdout left (`| head`): nothing more to it, no traceback
        return _reader_left()
    except OSError as error:  # a file or folder the user named: what failed and on which path
        return fail(UsageError(f"{error.strerror or error}: {error.filename or ''}".rstrip(": ")), as_json)
    except subprocess.CalledProcessError as error:  # a tool we ran (Graphviz dot) refused its input
        detail = (error.stderr or "").strip().splitlines()[-1:] or [f"exit status {error.returncode}"]
        return fail(UsageError(f"{error.cmd[0] if error.cmd else 'a tool'} failed: {detail[0]}"), as_json)
    except Exception as error:  # a bug: of teamproto's, or of a model being changed (an assertion)
        if os.environ.get("TEAMPROTO_TRACEBACK"):
            raise
        return fail(InternalError(error), as_json)
    except KeyboardInterrupt:  # Ctrl-C: nothing more is reported; with --json, still JSON
        if as_json:
            emit_json(
                {"ok": False, "error": {"type": "KeyboardInterrupt", "message": "interrupted", "definite": False}}
            )
        sys.stderr.write("teamproto: interrupted\n")
        return 130


if __name__ == "__main__":
    # Run through the imported module, so that subcommands registered on it are seen.
    from teamproto import _cli

    raise SystemExit(_cli.main())
