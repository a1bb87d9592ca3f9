"""``scripts/model_guards.py``: every guard of the model dropped in turn (DESIGN rule 7).

The tool itself is not run here (about two hours); what is tested is that it weakens what it says
and judges what it finds: each guard's weakened source is still a model (it parses, and differs
from the source only at the guard), none is under a named mutant's switch, and on ``fencing`` the
healthy model is judged ``nothing`` while the model without the shutdown release's ``released``
guard (SHD-3: a request names a task its member let go) is judged a ``violation``, and on ``tiny``
a model whose members never hold their task (``Model.holds`` refusing every claim) requests no
approval: it breaks no check, but leaves untaken the edges the healthy model takes (``uncovered``).
"""

from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("model_guards", ROOT / "scripts" / "model_guards.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["model_guards"] = module  # dataclasses resolve their module by name
    spec.loader.exec_module(module)
    return module


def test_every_guard_is_weakened_where_it_stands_and_none_is_a_named_mutant() -> None:
    tool = _tool()
    every = tool.guards()
    assert len(every) > 150 and len({g.id for g in every}) == len(every)
    for guard in every:
        text = (ROOT / guard.file).read_text(encoding="utf-8")
        weakened = tool.weaken(text, guard)
        ast.parse(weakened)
        assert weakened != text and f"({guard.weakened})" in weakened
        assert "broken(" not in guard.source


@pytest.mark.clause("SHD-3")
def test_the_judge_tells_a_dropped_guard_from_the_healthy_model(tmp_path: Path) -> None:
    tool = _tool()
    tree = tool._copy(ROOT, tmp_path)
    assert tool.judge(tree, (("fencing",),), 60.0)["verdict"] == "nothing"
    guard = next(g for g in tool.guards() if g.source == "member.released")
    path = tree / guard.file
    path.write_text(tool.weaken(path.read_text(encoding="utf-8"), guard), encoding="utf-8")
    judged = tool.judge(tree, (("fencing",),), 60.0)
    assert judged["verdict"] == "violation" and "fencing: released_task_left_its_member" in judged["found"]


@pytest.mark.clause("APR-1")
def test_a_guard_weakened_into_disabling_behaviour_is_judged_by_the_edges_it_loses(tmp_path: Path) -> None:
    tool = _tool()
    tree = tool._copy(ROOT, tmp_path)
    healthy = tool.judge(tree, (("tiny",),), 60.0)
    assert healthy["verdict"] == "nothing" and not healthy["coverage"].lost(healthy["coverage"])
    assert tool.judge(tree, (("tiny",),), 60.0, healthy["coverage"])["verdict"] == "nothing"
    guard = next(g for g in tool.guards() if g.source == 'task.status == "claimed"' and g.file.endswith("_model.py"))
    assert guard.weakened == "False"
    path = tree / guard.file
    path.write_text(tool.weaken(path.read_text(encoding="utf-8"), guard), encoding="utf-8")
    judged = tool.judge(tree, (("tiny",),), 60.0, healthy["coverage"])
    assert judged["verdict"] == "uncovered"
    assert "edge operation_approval requested approved" in judged["found"], judged["found"]


def test_the_command_reports_each_verdict_in_json() -> None:
    """The command end to end, on one configuration: the healthy model first, then each guard named
    (a violation ends that guard's search early: its result carries no coverage of its own)."""
    import json
    import subprocess

    tool = _tool()
    released = next(g for g in tool.guards() if g.source == "member.released")
    claimed = next(g for g in tool.guards() if g.source == 'task.status == "claimed"' and g.file.endswith("_model.py"))
    done = subprocess.run(
        [sys.executable, "scripts/model_guards.py", "--only", released.id, claimed.id, "--config", "fencing", "--json"],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    verdicts = {r["guard"]: r["verdict"] for r in report["results"]}
    assert verdicts == {released.id: "violation", claimed.id: "uncovered"}, verdicts
    assert report["counts"] == {"violation": 1, "uncovered": 1} and report["score"] == 1.0
