"""``standard`` explored to completion, recorded for the source it was explored on (issue 18 item 5).

``teamproto check --config standard`` explores both parts of ``standard`` to the end: some seven to
ten minutes on two processors, a third of CI's half hour. Its verdict is a function of its inputs
alone — the explorer, the model, the checks and the configurations (every tracked file under
``spec/`` and ``teamproto/``), ``pyproject.toml``, the Python version (major.minor) and the installed versions
of the dependencies the model is built from — so a run that held is recorded with the digest of those
inputs (:data:`RECORD`), and CI explores ``standard`` again only when the record is not of the
source it checks out (as ``scripts/pin_manifest.py`` pins counts, and as CI refuses a stale
generated file, except that here CI does the work instead of failing).

Run from the repository's root:

- ``python scripts/standard_record.py --run``: explore ``standard`` to completion (``teamproto
  check --config standard``, its progress and its report printed as it goes); if every check holds,
  write the record. Commit it with the change of ``spec/`` it verifies.
- ``python scripts/standard_record.py --fresh``: exit 0 and say so if the record is of this source;
  else exit 1, saying what differs (no record, a corrupt one, another digest).

Errors (not a repository, an unreadable record) are one line on stderr, exit 2.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import json
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RECORD = Path(".ci/standard.json")
"""The record, relative to the repository's root (outside the inputs it digests)."""
INPUTS = ("spec", "teamproto", "pyproject.toml")
"""The tracked paths whose contents the verdict depends on."""
DEPENDENCIES = ("python-statemachine", "jsonschema")
"""The installed packages the model and its checks are built from (their versions are inputs too)."""


class RecordError(Exception):
    """What stops the script: said on one line, exit 2."""


def tracked(root: Path) -> list[str]:
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z", "--", *INPUTS], cwd=root, capture_output=True, check=True, text=True
        ).stdout
    except (OSError, subprocess.CalledProcessError) as error:
        raise RecordError(f"cannot list the tracked files of {root} ({error}); run it in the repository") from None
    return sorted(name for name in listed.split("\0") if name)


def versions() -> dict[str, str]:
    found = {"python": ".".join(platform.python_version_tuple()[:2])}  # 3.11: a patch release changes no verdict
    for name in DEPENDENCIES:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            found[name] = "absent"
    return found


def digest(root: Path, installed: dict[str, str] | None = None) -> str:
    """SHA-256 of every input: each tracked file's path and contents (as in the working tree, so an
    uncommitted edit counts), and the versions."""
    h = hashlib.sha256()
    for name in tracked(root):
        path = root / name
        h.update(name.encode() + b"\0")
        h.update(path.read_bytes() if path.is_file() else b"<deleted>")
        h.update(b"\0")
    h.update(json.dumps(installed if installed is not None else versions(), sort_keys=True).encode())
    return h.hexdigest()


def read_record(root: Path) -> dict[str, Any] | None:
    path = root / RECORD
    if not path.exists():
        return None
    try:
        record = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise RecordError(f"{RECORD} is not readable JSON ({error}); run --run to write it again") from None
    if not isinstance(record, dict) or not isinstance(record.get("digest"), str):
        raise RecordError(f"{RECORD} names no digest; run --run to write it again")
    return record


def fresh(root: Path) -> tuple[bool, str]:
    """Whether the record is of this source, and a sentence saying so."""
    try:
        record = read_record(root)
    except RecordError as error:
        return False, str(error)
    if record is None:
        return False, f"no record ({RECORD}): standard was never recorded explored"
    now = digest(root)
    if record["digest"] != now:
        return False, (
            f"the record is of another source (digest {record['digest'][:12]}, this one {now[:12]}): "
            "spec/, teamproto/, pyproject.toml or a dependency changed since standard was explored"
        )
    parts = ", ".join(
        f"{p['config']} {p['states']:,} states{', liveness checked' if p.get('liveness_checked') else ''}"
        for p in record.get("parts", [])
    )
    return True, f"standard held on this very source ({parts}; explored {record.get('explored_at', '?')})"


def run(root: Path) -> int:
    before = digest(root)
    started = time.monotonic()
    command = [sys.executable, "-m", "teamproto", "check", "--config", "standard", "--json"]
    done = subprocess.run(command, cwd=root, stdout=subprocess.PIPE, text=True)  # progress on stderr
    try:
        report = json.loads(done.stdout)
    except json.JSONDecodeError:
        print(done.stdout, end="")
        raise RecordError("teamproto check printed no JSON report; nothing recorded") from None
    if done.returncode != 0 or not report.get("ok"):
        print(json.dumps(report, indent=2)[:4000])
        print(f"standard: a check failed or the search did not complete (exit {done.returncode}); nothing recorded")
        return 1
    if digest(root) != before:
        raise RecordError("the source changed while standard was explored; nothing recorded, run it again")
    record = {
        "digest": before,
        "versions": versions(),
        "explored_at": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "seconds": round(time.monotonic() - started, 1),
        "compiled": report.get("compiled"),
        "parts": [
            {
                "config": r["config"],
                "states": r["states"],
                "transitions": r["transitions"],
                "complete": r["complete"],
                "liveness_checked": r["liveness_checked"],
            }
            for r in report["runs"]
        ],
    }
    (root / RECORD).write_text(json.dumps(record, indent=2) + "\n")
    print(f"standard: every check holds; recorded in {RECORD} ({record['seconds']} s)")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--run", action="store_true", help="explore standard and record it if every check holds")
    which.add_argument("--fresh", action="store_true", help="exit 0 if the record is of this source, else 1")
    args = parser.parse_args(argv)
    try:
        if args.run:
            return run(ROOT)
        ok, said = fresh(ROOT)
    except RecordError as error:
        print(f"standard_record: {error}", file=sys.stderr)
        return 2
    print(said)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
