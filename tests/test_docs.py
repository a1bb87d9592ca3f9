"""The documentation is checked as code: the course's examples run, the reference pages are fresh,
the strict Sphinx build passes and fails on a broken link, every picture a page shows exists and is
SVG, and the trace viewer, driven by headless Chromium, reaches the last step of a trace and shows
its state.

Clause: DESIGN "one source" (pages, diagrams and traces generated from the spec), DESIGN rule 7.
"""

from __future__ import annotations

import doctest
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from docs._gen import browse
from docs._gen.pages import expected_pages, stale_pages, write_pages
from docs._gen.sequence import sequence_svg
from docs._gen.traces import counterexample, happy_path, steps
from docs._gen.viewer import viewer_data

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
CHAPTERS = sorted((DOCS / "course").glob("[0-9][0-9]-*.md"))
SVG = "{http://www.w3.org/2000/svg}svg"


def test_the_course_has_nine_numbered_chapters_in_its_toctree() -> None:
    index = (DOCS / "course" / "index.md").read_text(encoding="utf-8")
    assert [p.stem for p in CHAPTERS] == re.findall(r"^(\d\d-[\w-]+)$", index, re.M)
    assert len(CHAPTERS) == 9


@pytest.mark.parametrize("chapter", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_chapter_examples_run(chapter: Path) -> None:
    """Every `>>>` example of the chapter runs and prints what the page says (no example rots)."""
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    result = doctest.testfile(str(chapter), module_relative=False, optionflags=flags, verbose=False)
    assert result.attempted > 0, f"{chapter.name} runs no code"
    assert result.failed == 0, f"{result.failed} example(s) of {chapter.name} failed (see the output above)"


@pytest.mark.parametrize("chapter", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_each_chapter_shows_a_diagram_and_a_failure(chapter: Path) -> None:
    text = chapter.read_text(encoding="utf-8")
    assert "](../../diagrams/" in text, "no generated machine diagram"
    assert "counterexample(" in text or "explore(" in text, "no mutant's counterexample is run"
    assert "](../_generated/sequences/" in text, "no counterexample rendered as a sequence diagram"


def test_reference_pages_are_fresh() -> None:
    """CI fails when the spec changed and `scripts/docs` was not run."""
    assert stale_pages(DOCS) == []


def test_check_names_an_edited_a_missing_and_a_left_over_page(tmp_path: Path) -> None:
    write_pages(tmp_path)
    assert stale_pages(tmp_path) == []
    machine = tmp_path / "reference" / "machines" / "operation_approval.md"
    machine.write_text(machine.read_text(encoding="utf-8").replace("consumed", "used"), encoding="utf-8")
    (tmp_path / "reference" / "errors.md").unlink()
    (tmp_path / "reference" / "records" / "old.md").write_text("# gone\n", encoding="utf-8")
    stale = {p.relative_to(tmp_path).as_posix() for p in stale_pages(tmp_path)}
    assert stale == {"reference/machines/operation_approval.md", "reference/errors.md", "reference/records/old.md"}
    changed = {p.relative_to(tmp_path).as_posix() for p in write_pages(tmp_path)}  # the repair
    assert changed == stale and stale_pages(tmp_path) == []
    assert not (tmp_path / "reference" / "records" / "old.md").exists()  # a left-over page is removed


def test_every_machine_message_record_and_configuration_has_a_page() -> None:
    import spec
    from spec.model import manifest

    pages = {p.as_posix() for p in expected_pages()}
    for folder, names in (
        ("machines", spec.MACHINES),
        ("messages", spec.MESSAGE_TYPES),
        ("records", spec.RECORD_SCHEMAS),
        ("configs", manifest()),
    ):
        assert {f"reference/{folder}/{n}.md" for n in names} <= pages


def test_clause_index_and_error_catalogue_name_every_clause_and_error() -> None:
    import spec
    from docs._gen._errors import error_classes

    pages = expected_pages()
    index = pages[Path("reference/clauses.md")]
    assert all(f"**{clause_id}** — " in index for clause_id in spec.CLAUSES)
    assert "`consume_without_digest_check` (model)" in index and "`skip_digest_check` (reference)" in index
    catalogue = pages[Path("reference/errors.md")]
    names = {cls.__name__ for cls in error_classes()}
    assert {"ArgumentsChanged", "IllegalTransition", "SchemaError", "StorageUnavailable"} <= names
    assert all(f"| `{name}` |" in catalogue for name in names)
    assert "| `StorageUnavailable` | `refused` | **indefinite** | look the outcome up before acting |" in catalogue
    # the code a conformance driver replies, and a definite error that still changed something says so
    assert "| `ArgumentsChanged` | `arguments_changed` | definite | act on the message; nothing to undo |" in catalogue
    assert "| `PlanDeviation` | `plan_deviation` | definite | nothing to retry: the step did not run" in catalogue


def test_sequence_diagram_shows_sends_changes_and_the_crash() -> None:
    trace = counterexample("recovery_repeats_call")
    svg = sequence_svg(trace)
    root = ET.fromstring(svg)
    assert root.tag == SVG
    sent = sum(1 for s in steps(trace) for c in s["changes"] if c["kind"] == "message" and c["created"])
    assert svg.count('marker-end="url(#arrow)"') == sent > 0
    assert svg.count('fill="#fde2e2"') == 1, "one crash, one red band"
    assert "tool_execution 98c55d49.attempts: 1 → 2" in svg
    assert "✗ INV-1 approval_consumed_at_most_once" in svg


def test_viewer_steps_record_states_and_edges_taken() -> None:
    data = viewer_data({"approval_happy": happy_path("approval_happy")})["traces"]["approval_happy"]
    last = data["steps"][-1]
    assert last["current"]["operation_approval"] == ["consumed"]
    assert ["operation_approval", "approved", "consumed"] in last["taken"]
    assert data["steps"][0]["taken"] == [] or all(t[1] is None for t in data["steps"][0]["taken"])


# ---- the built site ----------------------------------------------------------------------------


def _sphinx(source: Path, out: Path, builder: str = "html") -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", builder, str(source), str(out)]
    return subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=source.parent)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("sphinx", reason="Sphinx is not installed (pip install -e '.[docs]')")
    pytest.importorskip("myst_parser", reason="myst-parser is not installed (pip install -e '.[docs]')")
    out = tmp_path_factory.mktemp("site")
    result = _sphinx(DOCS, out)
    assert result.returncode == 0, f"sphinx-build -W failed:\n{result.stdout}\n{result.stderr}"
    return out


def test_every_picture_a_page_shows_exists_and_is_svg(site: Path) -> None:
    pages = sorted(site.rglob("*.html"))
    shown = 0
    for page in pages:
        for source in re.findall(r'<img[^>]+src="([^"]+)"', page.read_text(encoding="utf-8")):
            picture = (page.parent / source).resolve()
            assert picture.exists(), f"{page.relative_to(site)} shows a missing {source}"
            if picture.suffix == ".svg":
                assert ET.parse(picture).getroot().tag == SVG, f"{source} is not SVG"
                shown += 1
    assert shown >= 30


def test_viewer_is_offline_and_every_embedded_trace_exists(site: Path) -> None:
    viewer = (site / "viewer.html").read_text(encoding="utf-8")
    assert "<script src" not in viewer and "<link" not in viewer and "http://" not in viewer.split("<svg")[0]
    for page in (site / "course").glob("*.html"):
        for name in re.findall(r"viewer\.html#trace=(\w+)", page.read_text(encoding="utf-8")):
            assert f'<option value="{name}">' in viewer, f"{page.name} embeds an unknown trace {name}"


def test_strict_build_fails_on_a_broken_link(tmp_path: Path) -> None:
    """-W is real: a page linking to a page that does not exist stops the build."""
    pytest.importorskip("sphinx", reason="Sphinx is not installed (pip install -e '.[docs]')")
    shutil.copytree(DOCS, tmp_path / "docs", ignore=shutil.ignore_patterns("_build", "_generated"))
    shutil.copytree(ROOT / "diagrams", tmp_path / "diagrams")
    (tmp_path / "docs" / "course" / "01-why-protocols.md").open("a", encoding="utf-8").write(
        "\nSee {doc}`no-such-chapter`.\n"
    )
    result = _sphinx(tmp_path / "docs", tmp_path / "out", builder="dummy")  # resolves every link, writes nothing
    assert result.returncode != 0
    assert "no-such-chapter" in result.stdout + result.stderr


# ---- as a reader sees it: headless Chromium ---------------------------------------------------


def _browser() -> Any:
    reason = browse.missing()
    if reason:
        if os.environ.get("TEAMPROTO_REQUIRE_BROWSER") == "1":
            pytest.fail(f"TEAMPROTO_REQUIRE_BROWSER=1 but {reason}")
        pytest.skip(reason)
    return browse.browser()


def test_viewer_in_chromium_reaches_the_last_step_and_shows_its_state(site: Path, tmp_path: Path) -> None:
    shots = Path(os.environ.get("TEAMPROTO_SCREENSHOTS", tmp_path))
    shots.mkdir(parents=True, exist_ok=True)
    driver = _browser()
    try:
        seen = browse.step_through(driver, site, "approval_happy", shots)
        last, back = seen[-2], seen[-1]
        assert (last["step"], last["last"], last["counter"]) == (4, 4, "step 4 / 4")
        assert last["action"].startswith("approval.consume(changed_arguments=False")
        assert last["highlighted"] == ["state:consumed"]
        assert "edge:approved:consume:consumed" in last["taken"]
        assert (back["step"], back["highlighted"]) == (3, ["state:approved"])
        crash = browse.step_through(driver, site, "recovery_repeats_call", shots)
        assert crash[-2]["action"] == "restart()" and crash[-2]["counter"] == "step 5 / 5"
        assert "edge:started:succeed:succeeded" in crash[-2]["taken"] or crash[-2]["taken"]
        driver.get((site / "course" / "03-operation-approval.html").as_uri())
        driver.save_screenshot(str(shots / "page-course-03.png"))
        driver.switch_to.frame(driver.find_element("css selector", "iframe.tp-viewer"))
        assert driver.find_element("id", "counter").text == "step 0 / 4"
    finally:
        driver.quit()
    assert len(list(shots.glob("viewer-approval_happy-*.png"))) == 5


def test_a_trace_from_the_command_line_renders_as_a_sequence_diagram_and_a_viewer(tmp_path: Path) -> None:
    """What `teamproto check --trace-out` writes is drawn, not redrawn by hand."""
    trace = tmp_path / "digest.json"
    check = [sys.executable, "-m", "teamproto._cli", "check", "--config", "tiny"]
    check += ["--mutant", "consume_without_digest_check", "--trace-out", str(trace)]
    subprocess.run(check, capture_output=True, text=True, timeout=300, cwd=ROOT, check=True)
    result = subprocess.run(
        [sys.executable, "-m", "docs._gen.render", str(trace), "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr
    svg = ET.parse(tmp_path / "out" / "digest.svg").getroot()
    assert svg.tag == SVG and "INV-1" in (svg.findtext(f"{SVG[:-3]}title") or "")
    assert '<option value="digest">' in (tmp_path / "out" / "viewer.html").read_text(encoding="utf-8")
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "other"}', encoding="utf-8")
    refused = subprocess.run(
        [sys.executable, "-m", "docs._gen.render", str(bad), "--out", str(tmp_path / "x")],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert refused.returncode == 2 and "not a teamproto-trace/1 file" in refused.stderr
    assert "Traceback" not in refused.stderr


def test_each_pitfall_of_the_source_article_is_a_runnable_example() -> None:
    """The ten pitfalls ("常见坑") of the first source article each head a section with examples."""
    found = {}
    for chapter in CHAPTERS:
        text = chapter.read_text(encoding="utf-8")
        for number, section in re.findall(r"^## Pitfall (\d+):.*?\n(.*?)(?=^## |\Z)", text, re.M | re.S):
            found[int(number)] = (chapter.name, ">>> " in section)
    assert sorted(found) == list(range(1, 11))
    assert all(runs for _, runs in found.values()), found


@pytest.mark.clause("REC-2")
def test_the_readmes_state_counts_of_a_configuration_are_its_pinned_counts() -> None:
    """A line of the README that begins with a pinned configuration's name (its row in the table of
    configurations, or a sentence about it) and gives its states gives the manifest's count (an
    outside review read 3,931 states for ``restarts``, pinned at 2,383, and 11,058 for
    ``pair_lapses``, pinned at 7,148: numbers left behind by a change of the model)."""
    import json

    manifest = json.loads((ROOT / "spec/model/configs/manifest.json").read_text(encoding="utf-8"))
    pinned = {
        name: entry["states"] for name, entry in manifest.items() if isinstance(entry, dict) and entry.get("states")
    }
    row = re.compile(r"^\| `([a-z_]+)` \|(.*)")  # a row of the table of configurations
    sentence = re.compile(r"^`([a-z_]+)` \(([^)]*)\)")  # "`name` (what it has; N states, …)"
    count = re.compile(r"(\d{1,3}(?:,\d{3})*) states")
    found = 0
    for number, line in enumerate((ROOT / "README.md").read_text(encoding="utf-8").splitlines(), 1):
        name = row.match(line) or sentence.match(line)
        states = count.search(name.group(2)) if name else None
        if name and states and name.group(1) in pinned:
            found += 1
            assert int(states.group(1).replace(",", "")) == pinned[name.group(1)], (
                f"README.md:{number}: {name.group(1)} has {states.group(1)} states there, "
                f"{pinned[name.group(1)]:,} in spec/model/configs/manifest.json"
            )
    assert found >= 4  # restarts, pair_crashes, pair_plan, pair_lapses
