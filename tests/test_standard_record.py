"""The record of ``standard`` explored to completion (``scripts/standard_record.py``): CI explores
``standard`` again unless the committed record is of the very source it checks out, so the digest
must change with every input of the verdict and with nothing else, and a missing, corrupt or stale
record must never pass for a fresh one."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("standard_record", ROOT / "scripts" / "standard_record.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["standard_record"] = module
    spec.loader.exec_module(module)
    return module


record = _script()
VERSIONS = {"python": "3.11", "python-statemachine": "3.2.0", "jsonschema": "4.23.0"}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    for name, text in {
        "spec/model.py": "MODEL = 1\n",
        "teamproto/cli.py": "CLI = 1\n",
        "pyproject.toml": "[project]\n",
        "README.md": "words\n",
        "reference/impl.py": "IMPL = 1\n",
    }.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    (tmp_path / ".ci").mkdir()
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run(["git", "add", "-A"], cwd=tmp_path, check=True)
    return tmp_path


def _recorded(repo: Path) -> None:
    doc = {"digest": record.digest(repo), "parts": [{"config": "standard/approvals", "states": 3}]}
    (repo / record.RECORD).write_text(json.dumps(doc))


@pytest.mark.parametrize("changed", ["spec/model.py", "teamproto/cli.py", "pyproject.toml"])
def test_every_input_of_the_verdict_changes_the_digest(repo: Path, changed: str) -> None:
    before = record.digest(repo, VERSIONS)
    (repo / changed).write_text((repo / changed).read_text() + "# an edit, not yet committed\n")
    assert record.digest(repo, VERSIONS) != before


def test_a_new_or_deleted_input_and_a_dependencys_version_change_the_digest(repo: Path) -> None:
    before = record.digest(repo, VERSIONS)
    assert record.digest(repo, {**VERSIONS, "python-statemachine": "3.3.0"}) != before
    (repo / "spec/model.py").unlink()
    assert record.digest(repo, VERSIONS) != before
    (repo / "spec/model.py").write_text("MODEL = 1\n")
    assert record.digest(repo, VERSIONS) == before
    (repo / "spec/new.py").write_text("NEW = 1\n")
    subprocess.run(["git", "add", "spec/new.py"], cwd=repo, check=True)
    assert record.digest(repo, VERSIONS) != before


def test_what_the_verdict_does_not_depend_on_leaves_the_digest(repo: Path) -> None:
    before = record.digest(repo, VERSIONS)
    (repo / "README.md").write_text("other words\n")
    (repo / "reference/impl.py").write_text("IMPL = 2\n")
    (repo / "spec/untracked_scratch.py").write_text("anything\n")  # not tracked: not the source
    _recorded(repo)  # the record itself is no input
    assert record.digest(repo, VERSIONS) == before


def test_only_a_record_of_this_source_is_fresh(repo: Path) -> None:
    ok, said = record.fresh(repo)
    assert not ok and "no record" in said
    (repo / record.RECORD).write_text("{not json")
    ok, said = record.fresh(repo)
    assert not ok and "not readable JSON" in said and "--run" in said
    (repo / record.RECORD).write_text(json.dumps({"parts": []}))
    ok, said = record.fresh(repo)
    assert not ok and "names no digest" in said
    _recorded(repo)
    ok, said = record.fresh(repo)
    assert ok and "standard/approvals 3 states" in said
    (repo / "spec/model.py").write_text("MODEL = 2\n")
    ok, said = record.fresh(repo)
    assert not ok and "another source" in said


def test_outside_a_repository_it_says_so_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(record.RecordError, match="run it in the repository"):
        record.digest(tmp_path / "nowhere", VERSIONS)
    with pytest.raises(SystemExit) as exited:
        record.main([])  # --run or --fresh, one of them
    assert exited.value.code == 2
    assert "one of the arguments --run --fresh is required" in capsys.readouterr().err
