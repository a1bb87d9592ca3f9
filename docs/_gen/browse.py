"""Read the built site as a reader would: headless Chromium (Debian's ``chromium`` and
``chromium-driver``) driven by Selenium opens chapters and the trace viewer, steps the viewer
through traces, and saves screenshots for review.

``python -m docs._gen.browse [--site docs/_build/html] [--out docs/_build/screenshots]`` (after
``scripts/docs``). ``tests/test_docs_browser.py`` uses the same functions and skips, naming the
reason, where Chromium or its driver is missing.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SITE = ROOT / "docs" / "_build" / "html"
SHOTS = ROOT / "docs" / "_build" / "screenshots"
PAGES = ("index.html", "course/03-operation-approval.html", "reference/machines/operation_approval.html")
TRACES = ("approval_happy", "consume_without_digest_check", "recovery_repeats_call", "shutdown_happy")


def missing() -> str | None:
    """Why the browser cannot run here, or None."""
    if shutil.which("chromium") is None:
        return "Debian's chromium is not installed (apt-get install chromium chromium-driver)"
    if shutil.which("chromedriver") is None:
        return "chromedriver is not installed (apt-get install chromium-driver)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[docs]')"
    return None


def browser(width: int = 1400, height: int = 1000) -> Any:
    """A headless Chromium session."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(shutil.which("chromium"))
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(argument)
    options.add_argument(f"--window-size={width},{height}")
    return webdriver.Chrome(options=options, service=Service(str(shutil.which("chromedriver"))))


def viewer_state(driver: Any, machine: str) -> dict[str, Any]:
    """What the viewer shows now: the step, the last step, the action, a machine's highlighted states."""
    body = driver.find_element("tag name", "body")
    panel = driver.find_element("css selector", f'.machine[data-machine="{machine}"]')
    highlighted = [e.get_attribute("id") for e in panel.find_elements("css selector", ".tp-current")]
    taken = [e.get_attribute("id") for e in driver.find_elements("css selector", ".tp-taken")]
    return {
        "step": int(body.get_attribute("data-step")),
        "last": int(body.get_attribute("data-last")),
        "counter": driver.find_element("id", "counter").text,
        "action": driver.find_element("id", "action").text,
        "highlighted": highlighted,
        "taken": taken,
    }


def step_through(driver: Any, site: Path, trace: str, shots: Path | None = None) -> list[dict[str, Any]]:
    """Open the viewer on ``trace``, press ▶ until the last step (a screenshot at each), then ◀ once."""
    driver.get((site.resolve() / "viewer.html").as_uri() + f"#trace={trace}&step=0")
    seen = [viewer_state(driver, "operation_approval")]
    while seen[-1]["step"] < seen[-1]["last"]:
        if shots is not None:
            driver.save_screenshot(str(shots / f"viewer-{trace}-{seen[-1]['step']:02}.png"))
        driver.find_element("id", "next").click()
        seen.append(viewer_state(driver, "operation_approval"))
    if shots is not None:
        driver.save_screenshot(str(shots / f"viewer-{trace}-{seen[-1]['step']:02}.png"))
    driver.find_element("id", "prev").click()
    seen.append(viewer_state(driver, "operation_approval"))
    return seen


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--site", type=Path, default=SITE)
    parser.add_argument("--out", type=Path, default=SHOTS)
    args = parser.parse_args(argv)
    reason = missing()
    if reason:
        print(f"browse: {reason}", file=sys.stderr)
        return 2
    if not (args.site / "viewer.html").exists():
        print(f"browse: no site in {args.site}; run scripts/docs first", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    driver = browser()
    try:
        for page in PAGES:
            driver.get((args.site.resolve() / page).as_uri())
            driver.save_screenshot(str(args.out / ("page-" + page.replace("/", "-").replace(".html", ".png"))))
        for trace in TRACES:
            seen = step_through(driver, args.site, trace, args.out)
            print(f"{trace}: {len(seen) - 1} clicks, ended at {seen[-2]['counter']}: {seen[-2]['action']}")
    finally:
        driver.quit()
    print(f"screenshots in {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
