"""`teamproto` at its edges, tried as a new user would (issue 18 item 7): bad input is refused before
anything runs, as one line on stderr with exit 2 and — with ``--json`` — a JSON document on stdout;
a counterexample is never lost; a mutant run says whether the mutant was caught; help, version and
piped output read cleanly.

Clause: INV-1 (the mutant runs), DESIGN "The command line", "typed errors".
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

from reference._mutants import MUTANTS as REFERENCE_MUTANTS
from spec.model import MUTANTS, config_names
from teamproto import _check_cli
from teamproto._cli import main

ROOT = Path(__file__).resolve().parents[1]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


class Started(BaseException):
    """Raised where nothing may run: a BaseException, which the command line's last-resort handler
    (every ``Exception`` becomes one line and exit 2) does not turn into a passing refusal."""


def never_search(*_: Any, **__: Any) -> Any:
    raise Started("the search started although the command line was bad")


BAD = [
    ["check", "--max-states", "-1"],
    ["check", "--max-states", "0"],
    ["check", "--max-seconds", "-5"],
    ["check", "--max-seconds", "0"],
    ["check", "--jobs", "0"],
    ["check", "--walks", "0", "--simulate"],
    ["check", "--crash-rate", "2", "--simulate"],
    # each bound from both sides (a range checked on one side alone passes the other's value)
    ["check", "--crash-rate", "-0.5", "--simulate"],
    ["check", "--crash-rate", "nan", "--simulate"],
    ["check", "--max-seconds", "nan"],
    ["check", "--walks", "-1", "--simulate"],
    ["check", "--walk-depth", "0", "--simulate"],
    ["check", "--jobs", "-1"],
    ["check", "--checkpoint-seconds", "0", "--config", "pair"],
    ["mutants", "--jobs", "-1"],
    # a flag only as written: main() reads --json from the words before parsing
    ["check", "--config", "tiny", "--max-st", "5"],
    ["diagrams", "--check", "--jso"],
    ["check", "--config", "no-such-config"],
    ["check", "--mutant", "no_such_mutant"],
    ["check", "--mutant", "skip_digest_check"],  # a reference mutant, not a model one
    ["check", "--max-states", "many"],
    ["check", "--no-such-flag"],
    ["check", "--trace-out", "/no/such/folder/trace.json", "--config", "tiny"],
    ["check", "--trace-out", ".", "--config", "tiny"],
    ["check", "--checkpoint", "/no/such/folder/run.ckpt", "--config", "pair"],
    ["check", "--checkpoint", "run.ckpt"],  # without PYTHONHASHSEED and without one --config
    ["mutants", "--only", "no_such_mutant"],
    ["diagrams", "--dir", "README.md"],
    ["diagrams", "--dir", "README.md/diagrams"],
    # a value with a line break in it still makes one line: the message is collapsed, not trimmed
    ["diagrams", "--dir", "README.md/line\nbreak"],
    ["check", "--trace-out", "/no/such\nfolder/trace.json", "--config", "tiny"],
    ["no-such-command"],
]


@pytest.mark.parametrize("argv", BAD, ids=lambda argv: " ".join(argv))
@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_bad_input_is_one_line_on_stderr_with_exit_2_before_anything_runs(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, argv: list[str], as_json: bool
) -> None:
    """Every bad value is refused before the search: exit 2, one line on stderr, no traceback;
    stdout is empty, or with --json one JSON document saying what was wrong."""
    monkeypatch.setattr(_check_cli, "run_jobs", never_search)
    monkeypatch.delenv("PYTHONHASHSEED", raising=False)
    status, out, err = run(capsys, *argv, *(["--json"] if as_json else []))
    assert status == 2
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("teamproto: error (definite): "), err
    assert "Traceback" not in err
    if as_json:
        document = json.loads(out)
        assert document["ok"] is False and document["error"]["message"] in lines[0]
    else:
        assert out == ""


CONFORMANCE_BAD = [
    ["conformance"],  # no driver, no log, nothing to do
    ["conformance", "--driver", "x", "--programs", "-1"],
    ["conformance", "--driver", "x", "--depth", "0"],
    ["conformance", "--driver", "x", "--clauses", "APR,NOPE"],
    ["conformance", "--driver", "x", "--report", "README.md"],
    ["conformance", "--driver", "x", "--report", "README.md/reports"],
    ["conformance", "--driver", "x", "--data-dir", "README.md/data"],
    ["conformance", "--export-log", "no/such/store"],
]


@pytest.mark.parametrize("argv", CONFORMANCE_BAD, ids=lambda argv: " ".join(argv))
@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_conformance_refuses_bad_input_before_the_suite_runs(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, argv: list[str], as_json: bool
) -> None:
    """`teamproto conformance` as `check`: a count below its floor, an unknown clause family, a
    report or data folder that cannot be made (found before the suite runs, not after: its results
    would be lost), a missing store — one line on stderr, exit 2, JSON under --json, and the suite
    never starts."""
    import conformance._run

    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(conformance._run, "run_suite", never_search)
    status, out, err = run(capsys, *argv, *(["--json"] if as_json else []))
    assert status == 2
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("teamproto: error (definite): "), err
    assert argv[-1].split(",")[-1] in lines[0] or len(argv) == 1, "the error names the value it refuses"
    if as_json:
        document = json.loads(out)
        assert document["ok"] is False and document["error"]["message"] in lines[0]
    else:
        assert out == ""


def test_conformance_runs_with_the_values_it_refuses_next_to(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The floors are floors: no random program, depth 1, a family and a clause id, and report and
    data folders that do not exist yet (they are made) reach the suite with those values."""
    import conformance._run
    from conformance._report import summary

    seen: list[Any] = []

    def record(options: Any, progress: Any = None) -> Any:
        seen.append(options)
        return [], summary([], None)

    monkeypatch.setattr(conformance._run, "run_suite", record)
    monkeypatch.setattr("conformance._report.print_table", lambda *_: None)
    report, data = tmp_path / "new" / "report", tmp_path / "data"
    argv = ["conformance", "--driver", "x", "--programs", "0", "--depth", "1", "--clauses", "APR, SHD-3"]
    status, _, err = run(capsys, *argv, "--report", str(report), "--data-dir", str(data))
    assert status == summary([], None)["exit"], err  # what the suite said: here, no case ran
    (options,) = seen
    assert (options.programs, options.depth, options.clauses) == (0, 1, ("APR", "SHD-3"))
    assert report.is_dir() and data.is_dir() and (report / "report.json").is_file()


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_a_log_that_cannot_be_read_is_one_line_on_stderr(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, as_json: bool
) -> None:
    """`conformance --log` of a missing or non-JSON file is undecided: exit 2, one line on stderr
    naming the file; stdout holds nothing, or the verdict as JSON."""
    for log in (tmp_path / "missing.jsonl", ROOT / "README.md"):
        status, out, err = run(capsys, "conformance", "--log", str(log), *(["--json"] if as_json else []))
        assert status == 2
        assert err.count("\n") == 1 and err.startswith(f"teamproto: error (definite): --log {log}: cannot validate")
        if as_json:
            assert json.loads(out)["undecided"] is True
        else:
            assert out == ""


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_a_driver_that_cannot_be_judged_is_one_line_on_stderr(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, as_json: bool
) -> None:
    """`conformance --driver` naming no program, or one that dies at once: exit 2, one line on
    stderr naming the driver and why; stdout keeps the (empty) report, or the summary as JSON."""
    for driver, why in ((str(tmp_path / "nothing"), "could not be started"), ("true", "died before answering")):
        status, out, err = run(capsys, "conformance", "--driver", driver, *(["--json"] if as_json else []))
        assert status == 2, (driver, out, err)
        assert err.count("\n") == 1 and err.startswith(
            f"teamproto: error (definite): --driver {driver}: could not decide"
        )
        assert why in err
        if as_json:
            assert json.loads(out)["undecided"]
        else:
            assert "undecided" in out


@pytest.mark.parametrize("kind", ["empty", "text", "other_sqlite"])
def test_export_log_refuses_a_file_that_is_no_store_and_leaves_it_as_it_was(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, kind: str
) -> None:
    """`conformance --export-log` reads: a file that is not a reference store is refused, exit 2, one
    line on stderr — and not made into a store by the export (an empty file once was)."""
    import sqlite3

    path = tmp_path / "team.db"
    if kind == "empty":
        path.write_bytes(b"")
    elif kind == "text":
        path.write_text("not a database\n")
    else:
        with sqlite3.connect(path) as db:
            db.execute("CREATE TABLE other (a)")
        db.close()
    before = path.read_bytes()
    status, out, err = run(capsys, "conformance", "--export-log", str(path))
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith(f"teamproto: error (definite): --export-log {path}: ")
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["team.db"]  # no -wal, no -shm left either


def test_a_reference_mutant_named_to_check_says_where_it_belongs(capsys: pytest.CaptureFixture[str]) -> None:
    """Model and reference mutants are two sets: the error names the command that takes the name."""
    status, _, err = run(capsys, "check", "--mutant", "skip_digest_check")
    assert status == 2 and "is a reference mutant: run `teamproto mutants --only skip_digest_check`" in err


def test_a_name_in_both_mutant_sets_breaks_the_same_clause() -> None:
    """A name means one thing: a model mutant and a reference mutant of one name remove the check
    of the same clause (the reference's description starts with it)."""
    shared = set(MUTANTS) & set(REFERENCE_MUTANTS)
    assert shared  # the rule has cases to hold on
    for name in shared:
        assert REFERENCE_MUTANTS[name].startswith(MUTANTS[name].breaks + ":"), name


@pytest.mark.clause("INV-1")
def test_a_caught_mutant_says_so_and_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    """A caught mutant is the expected outcome: "model mutant … caught by", exit 0 — not "check failed"."""
    status, out, _ = run(capsys, "check", "--config", "tiny", "--mutant", "consume_without_digest_check")
    assert status == 0
    last = out.strip().splitlines()[-1]
    assert last.startswith("model mutant consume_without_digest_check caught by INV-1 "), last
    assert "check failed" not in out and "all checks hold" not in out


def test_an_uncaught_mutant_says_so_and_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    """tiny has one member, so another member's consume cannot happen: the mutant is not caught there."""
    status, out, _ = run(capsys, "check", "--config", "tiny", "--mutant", "consume_by_other_member")
    assert status == 1
    assert out.strip().splitlines()[-1] == "model mutant consume_by_other_member NOT caught: every check held"
    assert "all checks hold" not in out


@pytest.mark.parametrize("mutant", ["consume_without_digest_check", "claim_ignores_shutdown_request"])
def test_a_mutant_without_config_runs_its_own_configuration(capsys: pytest.CaptureFixture[str], mutant: str) -> None:
    """`--mutant NAME` alone explores the mutant's own configuration, not every configuration."""
    status, out, _ = run(capsys, "check", "--mutant", mutant, "--json")
    document = json.loads(out)
    assert status == 0 and [r["config"] for r in document["runs"]] == [MUTANTS[mutant].config]
    assert document["mutant_caught_by"][0].startswith(MUTANTS[mutant].caught_by + " ")


def test_an_unwritable_trace_out_after_the_search_keeps_the_counterexample(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """If --trace-out cannot be written after all (its folder went away), the counterexample is
    still in the report, and the error is one line on stderr with exit 2."""
    monkeypatch.setattr(_check_cli, "_check_writable", lambda *_: None)  # as if the folder vanished later
    target = tmp_path / "gone" / "trace.json"
    argv = ["check", "--config", "tiny", "--mutant", "consume_without_digest_check", "--trace-out", str(target)]
    status, out, err = run(capsys, *argv, "--json")
    document = json.loads(out)
    assert status == 2 and document["ok"] is False and "trace_out_error" in document
    assert document["runs"][0]["violations"][0]["violation"]["clause"] == "INV-1"
    assert len(err.splitlines()) == 1 and "--trace-out" in err
    status, out, err = run(capsys, *argv)
    assert status == 2 and "INV-1" in out and len(err.splitlines()) == 1


def test_a_truncated_checkpoint_is_a_typed_error(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A checkpoint cut short (a full disk, a copy interrupted) is refused with one line, exit 2,
    and left as it is — whether the cut is in its header or in the saved search."""
    monkeypatch.setenv("PYTHONHASHSEED", "0")
    saved = tmp_path / "pair.ckpt"
    status, _, _ = run(capsys, "check", "--config", "pair", "--max-states", "300", "--checkpoint", str(saved))
    assert status == 1 and saved.stat().st_size > 1000  # stopped by the bound, saved
    whole = saved.read_bytes()
    for size in (20, len(whole) // 2):
        cut = tmp_path / f"cut{size}.ckpt"
        cut.write_bytes(whole[:size])
        status, out, err = run(capsys, "check", "--config", "pair", "--checkpoint", str(cut), "--json")
        assert status == 2 and "Traceback" not in err and len(err.splitlines()) == 1
        assert json.loads(out)["error"]["type"] == "BadCheckpoint" and "truncated" in err
        assert cut.read_bytes() == whole[:size]


def test_help_is_plain_text_and_names_configurations_and_mutants(capsys: pytest.CaptureFixture[str]) -> None:
    """--help shows no docstring markup, and lists what --config and --mutant accept."""
    texts = {}
    for argv in ([], ["check"], ["mutants"], ["diagrams"]):
        with pytest.raises(SystemExit) as exit_:
            main([*argv, "--help"])
        assert exit_.value.code == 0
        texts[" ".join(argv)] = capsys.readouterr().out
    for text in texts.values():
        assert "``" not in text and ":func:" not in text and ":mod:" not in text
    assert all(name in texts["check"] for name in config_names())
    assert all(name in texts["check"] for name in MUTANTS)
    assert all(name in texts["mutants"] for name in REFERENCE_MUTANTS)


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.strip() == f"teamproto {metadata.version('teamproto')}"


def test_piped_output_does_not_wrap_lines() -> None:
    """Piped into a file or another program, each report line stays whole (rich would wrap at 80
    columns and split numbers mid-line)."""
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    result = subprocess.run(
        [sys.executable, "-m", "teamproto", "check", "--config", "tiny"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert any(
        re.fullmatch(r"tiny: [\d,]+ states, [\d,]+ transitions, depth \d+, [\d.]+ s, [\d,]+ states/s", x) for x in lines
    )
    footer = r"edge coverage: \d+/\d+; .* \(largest process\); spec .+ \(source \w+\)"
    assert any(re.fullmatch(footer, x) for x in lines), lines


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_a_reader_that_closes_the_pipe_gets_no_traceback(as_json: bool) -> None:
    """``teamproto check … | head -1``: the reader leaves before the report is written. One line on
    stderr says the output was cut short, exit 141 as for SIGPIPE; no traceback, in text as in JSON
    (an outside review found a traceback with --json, and rich's silent exit 1 without it)."""
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first write
    try:
        result = subprocess.run(
            [sys.executable, "-m", "teamproto", "check", "--simulate", "--config", "tiny", "--walks", "3"]
            + (["--json"] if as_json else []),
            cwd=ROOT,
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            timeout=300,
        )
    finally:
        os.close(write)
    assert result.returncode == 141, result.stderr
    assert result.stderr.splitlines() == ["teamproto: stdout was closed by its reader; output cut short"]


def test_a_failed_apt_get_does_not_stop_setup(tmp_path: Path) -> None:
    """Graphviz is optional: apt-get failing (another apt-get holds its lock) is reported and
    setup goes on (exit 0), with the hint how to install it by hand."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "apt-get").write_text(
        "#!/bin/sh\necho 'E: Could not get lock /var/lib/dpkg/lock-frontend' >&2\nexit 100\n", encoding="utf-8"
    )
    (bin_dir / "id").write_text("#!/bin/sh\necho 0\n", encoding="utf-8")
    for tool in bin_dir.iterdir():
        tool.chmod(0o755)
    result = subprocess.run(
        ["/bin/bash", str(ROOT / "scripts" / "install_graphviz")],
        env={"PATH": str(bin_dir)},  # no `dot` on this PATH
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert "apt-get could not install Graphviz" in result.stderr
    assert "Graphviz 'dot' is missing" in result.stderr
    assert "bash scripts/install_graphviz" in (ROOT / "scripts" / "setup").read_text(encoding="utf-8")


def test_a_failing_graphviz_is_one_line_not_a_traceback(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """`teamproto diagrams` when `dot` is there but fails: exit 2, one line naming the tool."""
    from teamproto import _diagrams

    def broken_dot(command: list[str], **_: Any) -> Any:
        raise subprocess.CalledProcessError(1, command, stderr="Error: syntax error in line 1\n")

    monkeypatch.setattr(_diagrams.shutil, "which", lambda _name: "/usr/bin/dot")
    monkeypatch.setattr(_diagrams.subprocess, "run", broken_dot)
    status, out, err = run(capsys, "diagrams", "--dir", str(tmp_path))
    assert (
        status == 2
        and out == ""
        and err.splitlines() == ["teamproto: error (definite): /usr/bin/dot failed: Error: syntax error in line 1"]
    )


def test_a_mutant_run_that_times_out_survives_without_a_traceback(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`teamproto mutants`: model tests that hang are stopped; the mutant counts as not caught (exit 1)."""
    from teamproto import _mutants_cli

    def hang(command: list[str], **_: Any) -> Any:
        raise subprocess.TimeoutExpired(command, _mutants_cli.TIMEOUT_SECONDS)

    monkeypatch.setattr(_mutants_cli.subprocess, "run", hang)
    status, out, _ = run(capsys, "mutants", "--only", "consume_twice", "--json")
    document = json.loads(out)
    assert status == 1 and document["survived"] == ["consume_twice"]
    assert document["mutants"][0]["by"].startswith("timeout")


def test_an_interrupted_run_still_prints_json(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C during a search: exit 130, one line on stderr, and with --json a JSON document."""

    def interrupted(*_: Any, **__: Any) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(_check_cli, "run_jobs", interrupted)
    status, out, err = run(capsys, "check", "--config", "tiny", "--json")
    assert status == 130 and json.loads(out)["error"]["type"] == "KeyboardInterrupt"
    assert err.splitlines() == ["teamproto: interrupted"]


def test_mutants_refuses_zero_jobs(capsys: pytest.CaptureFixture[str]) -> None:
    """`teamproto mutants --jobs 0` is bad input: one line on stderr, exit 2, nothing run."""
    status, out, err = run(capsys, "mutants", "--jobs", "0")
    assert status == 2 and out == "" and "--jobs" in err and len(err.splitlines()) == 1


def test_mutants_on_two_jobs_report_in_the_order_asked(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Mutants tested at once still come back in the order named, each with its own verdict."""
    import threading
    import time

    from teamproto import _mutants_cli

    both_running = threading.Barrier(2, timeout=10)  # fails unless the two really run at once

    def fake(name: str, root: Path, shrink: bool = True) -> dict[str, Any]:
        both_running.wait()
        time.sleep(0.05 if name == "skip_digest_check" else 0.0)  # the first named ends last
        return {
            "mutant": name,
            "breaks": "",
            "caught": name == "skip_digest_check",
            "by": "x",
            "test": "",
            "examples_until_caught": None,
            "shrunk_program_steps": None,
            "seconds": 0.0,
        }

    monkeypatch.setattr(_mutants_cli, "run_mutant", fake)
    status, out, _ = run(capsys, "mutants", "--only", "skip_digest_check", "consume_twice", "--jobs", "2", "--json")
    document = json.loads(out)
    assert [row["mutant"] for row in document["mutants"]] == ["skip_digest_check", "consume_twice"]
    assert status == 1 and document["survived"] == ["consume_twice"]


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_a_search_stopped_at_its_bound_is_not_a_pass(capsys: pytest.CaptureFixture[str], as_json: bool) -> None:
    """A search cut off by --max-states proves nothing about the states it did not reach: exit 1,
    "check failed", and the run reported incomplete, though no check broke (an outside review let
    an incomplete run pass, and only an unrelated test's set-up noticed)."""
    status, out, err = run(capsys, "check", "--config", "tiny", "--max-states", "20", *(["--json"] if as_json else []))
    assert status == 1 and "Traceback" not in err
    if as_json:
        document = json.loads(out)
        assert document["ok"] is False and [(r["complete"], r["violations"]) for r in document["runs"]] == [(False, [])]
    else:
        assert out.rstrip().endswith("check failed"), out[-300:]


@pytest.mark.clause("MSG-2")
@pytest.mark.parametrize("as_json", [False, True])
def test_an_unexpected_exception_is_one_line_naming_where_it_was_raised(
    as_json: bool, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bug (teamproto's, or a changed model's own assertion, as an outside review's model plant
    tripped) is one line on stderr naming the exception and where it was raised, exit 2, JSON
    with ``--json``; ``TEAMPROTO_TRACEBACK=1`` lets the traceback through."""

    def broken_model(*_: Any, **__: Any) -> Any:
        raise AssertionError("tool_execution: planted")

    monkeypatch.setattr(_check_cli, "run_jobs", broken_model)
    status, out, err = run(capsys, "check", "--config", "tiny", *(["--json"] if as_json else []))
    assert status == 2 and len(err.splitlines()) == 1 and "Traceback" not in err
    assert err.startswith("teamproto: error (indefinite): internal error AssertionError at test_cli_edges.py:")
    assert "tool_execution: planted" in err and "TEAMPROTO_TRACEBACK=1" in err
    assert (json.loads(out)["error"]["type"] == "InternalError") if as_json else out == ""
    monkeypatch.setenv("TEAMPROTO_TRACEBACK", "1")
    with pytest.raises(AssertionError, match="planted"):
        main(["check", "--config", "tiny"])


def test_a_check_names_the_spec_it_checked(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """An editable install imports the tree it was installed from, whatever folder the command runs
    in (outside review 59 checked another clone's spec unawares): the run names the spec's folder and
    a digest of its source, in its footer and its JSON."""
    status, out, _ = run(capsys, "check", "--config", "tiny", "--json")
    _, digest = _check_cli.source()
    assert status == 0 and json.loads(out)["spec"] == {"path": str(ROOT / "spec"), "digest": digest}
    status, out, _ = run(capsys, "check", "--config", "tiny")
    assert f"spec {ROOT / 'spec'} (source {digest})" in " ".join(out.split())
    copy = tmp_path / "spec"
    shutil.copytree(ROOT / "spec", copy, ignore=shutil.ignore_patterns("__pycache__"))
    assert _check_cli.source(copy) == (str(copy), digest)  # the same source, elsewhere
    (copy / "model" / "_ops.py").write_text((copy / "model" / "_ops.py").read_text() + "\n# another tree\n")
    assert _check_cli.source(copy)[1] != digest
