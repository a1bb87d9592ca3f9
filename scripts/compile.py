"""Compile the explorer's hot modules with mypyc into ``.compiled/`` (see ``spec/_compiled.py``).

Run by ``scripts/setup``; run it again after changing ``spec`` (until then, an edited source
simply runs interpreted). Needs mypy (which carries mypyc) and a C compiler with the Python
headers. Exit status: 0 built (or nothing to do), 1 the build failed (``teamproto`` still runs,
interpreted), 2 mypyc is not installed.
Usage: ``.venv/bin/python scripts/compile.py [--force]``
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from spec._compiled import BUILD, COMPILED, RUNTIME, STAMP, source_digest  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description="compile the explorer's hot modules with mypyc")
    parser.add_argument("--force", action="store_true", help="build even if the build is fresh")
    options = parser.parse_args()
    digest = source_digest()
    if not options.force and STAMP.is_file() and STAMP.read_text(encoding="utf-8").strip() == digest:
        print(f"compile: {BUILD.name}/ is up to date with the source")
        return 0
    try:
        import mypyc  # noqa: F401
    except ImportError:
        print("compile: mypyc is missing (pip install mypy); teamproto runs interpreted", file=sys.stderr)
        return 2
    staging = ROOT / ".compiled.tmp"
    shutil.rmtree(staging, ignore_errors=True)
    shutil.copytree(ROOT / "spec", staging / "spec", ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    shutil.copy(ROOT / "pyproject.toml", staging / "pyproject.toml")  # mypy's settings
    print(f"compile: mypyc on {len(COMPILED)} modules (under a minute on two processors) …", flush=True)
    started = time.perf_counter()
    build = [sys.executable, str(ROOT / "scripts" / "mypyc_build.py"), "build_ext", "--inplace", *COMPILED]
    run = subprocess.run(build, cwd=staging, capture_output=True, text=True, check=False)
    if run.returncode != 0:
        print("\n".join((run.stdout + run.stderr).splitlines()[-12:]), file=sys.stderr)  # the error is last
        print("compile: mypyc failed; teamproto runs interpreted", file=sys.stderr)
        shutil.rmtree(staging, ignore_errors=True)
        return 1
    if source_digest() != digest:
        print("compile: the source changed during the build; run it again", file=sys.stderr)
        shutil.rmtree(staging, ignore_errors=True)
        return 1
    shutil.rmtree(BUILD, ignore_errors=True)
    for module in COMPILED:
        folder = Path(module).parent
        (BUILD / folder).mkdir(parents=True, exist_ok=True)
        for built in (staging / folder).glob(f"{Path(module).stem}.*.so"):
            shutil.move(built, BUILD / folder / built.name)
    RUNTIME.mkdir(parents=True, exist_ok=True)
    for shared in staging.glob("*__mypyc.*.so"):  # the runtime library the modules share
        shutil.move(shared, RUNTIME / shared.name)
    STAMP.write_text(digest + "\n", encoding="utf-8")  # last: a build is valid only once complete
    shutil.rmtree(staging, ignore_errors=True)
    print(f"compile: built {BUILD.name}/ in {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
