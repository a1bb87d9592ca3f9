"""The suite: vectors, bad input and random programs against one driver command."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from spec import invariants

from ._badinput import CASES, run_bad
from ._cases import Case, stop_idle
from ._client import Crashed, Implementation, Undecided
from ._random import DEVIATIONS, run_deviation, run_program
from ._replay import WORLD_CLAUSES, run_vector, vector_clauses
from ._report import summary
from ._status import run_status
from ._translate import clauses_of
from ._vectors import VECTORS, load


@dataclass
class Options:
    driver: str
    data_dir: Path | None = None
    clauses: tuple[str, ...] = ()
    seed: int = 0
    programs: int = 12
    depth: int = 25
    vectors: Path = VECTORS
    sections: tuple[str, ...] = ("vectors", "bad input", "random programs")
    configs: tuple[str, ...] = ()  # only the vectors of these configurations (default: all)


Job = tuple[list[str], Callable[[], Case]]


def capabilities(command: str) -> dict[str, Any]:
    """Ask the driver what it implements (before any ``init``). A driver that dies first is
    reported with the last line it wrote on stderr (an import error, a missing interpreter)."""
    with tempfile.TemporaryDirectory(prefix="teamproto-capabilities-") as folder:
        impl = Implementation(command, {}, Path(folder) / "driver.stderr")
        try:
            impl.start_process()
            reply = impl.call({"type": "capabilities"})
        except Crashed as error:  # its message ends with the driver's last words
            raise Undecided(f"the driver {command!r} died before answering capabilities ({error})") from None
        except OSError as error:
            raise Undecided(f"the driver {command!r} could not be started ({error})") from None
        finally:
            impl.stop()
    if reply["type"] != "ok" or not isinstance(reply.get("result", {}).get("operations"), list):
        raise Undecided(f"capabilities must list operations; the driver answered {reply}")
    result = dict(reply["result"])
    result.setdefault("write_steps", [])
    return result


def jobs(options: Options, caps: dict[str, Any], root: Path) -> list[Job]:
    out: list[Job] = []
    seen: set[str] = set()
    for document in load(options.vectors) if "vectors" in options.sections else []:
        if options.configs and document["config"] not in options.configs:
            continue
        for vector in document["vectors"]:
            key = json.dumps([document["init"]["team"], vector["steps"]], sort_keys=True)
            if key in seen:
                continue  # the same steps in another configuration: replayed once
            seen.add(key)
            out.append((vector_clauses(vector), partial(run_vector, options.driver, document, vector, caps, root)))
    for bad in CASES if "bad input" in options.sections else ():
        out.append((list(bad.clauses), partial(run_bad, options.driver, bad, caps, root)))
    for kind in DEVIATIONS if "bad input" in options.sections else ():
        out.append((["PLN-4", "PLN-11"], partial(run_deviation, options.driver, caps, root, kind)))
    if "bad input" in options.sections:
        out.append((["AUD-4"], partial(run_status, options.driver, caps, root)))
    random_clauses = sorted({c for op in caps["operations"] for c in clauses_of(op)} | {"REC-2"})
    for number in range(options.programs if "random programs" in options.sections else 0):
        program = partial(run_program, options.driver, caps, root, options.seed, number, options.depth)
        out.append((random_clauses, program))
    if options.clauses:

        def asked(clauses: list[str]) -> bool:
            return any(c == f or c.startswith(f + "-") for c in clauses for f in options.clauses)

        named = {clause for clauses, _ in out for clause in clauses}
        unnamed = [clause for clause in EVERY_STEP if clause not in named]  # checked only after every step
        stepwise = {number for number, (_, run) in enumerate(out) if run.func in (run_vector, run_program)}  # type: ignore[attr-defined]
        out = [job for n, job in enumerate(out) if asked(job[0]) or (n in stepwise and asked(unnamed))]
    return out


EVERY_STEP = sorted(
    {inv.clause for inv in (*invariants.STATE_INVARIANTS, *invariants.STEP_INVARIANTS)} | set(WORLD_CLAUSES) | {"AUD-1"}
)
"""The clauses every vector and random program checks after each of its steps, whatever its
operations (the invariants on the implementation's snapshot, the external system's calls): a
``--clauses`` filter naming one that no case names (AUD-5, INV-10, …) selects every vector and
program."""


def run_suite(
    options: Options, progress: Callable[[int, int, Case], None] | None = None
) -> tuple[list[Case], dict[str, Any]]:
    """Run every case; return them and the summary (``exit``: 0 conforming, 1 not, 2 undecided)."""
    root = options.data_dir or Path(tempfile.mkdtemp(prefix="teamproto-conformance-"))
    root.mkdir(parents=True, exist_ok=True)
    cases: list[Case] = []
    undecided: str | None = None
    try:
        caps = capabilities(options.driver)
        todo = jobs(options, caps, root)
        if not todo:
            asked = f" the clauses asked ({', '.join(options.clauses)})" if options.clauses else ""
            raise Undecided(f"no case of the suite checks{asked} with this driver's capabilities")
        for number, (_, job) in enumerate(todo, start=1):
            case = job()
            cases.append(case)
            if progress is not None:
                progress(number, len(todo), case)
    except Undecided as error:
        undecided = str(error)
    finally:
        stop_idle()
        if options.data_dir is None:
            shutil.rmtree(root, ignore_errors=True)
    return cases, summary(cases, undecided)


__all__ = ["Options", "capabilities", "run_suite"]
