"""Pin configurations in ``spec/model/configs/manifest.json``: their counts and their behaviour.

Explores each named configuration (default: every one the manifest pins) and writes its states,
transitions, deadlocks and reachable behaviour (``spec.drift.pin``: every operation, crash point
and machine edge it reaches). ``teamproto check`` compares a search with this pin and explains a
drift by the behaviour gained or lost. Run it after reviewing a drift that is meant, and commit
the manifest with the change. A configuration with ``pending`` is left as it is.
A split configuration is pinned part by part under its ``parts``; name one part (``standard/plans``) to
pin that part alone.
Usage: ``.venv/bin/python scripts/pin_manifest.py [NAME ...]``
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from spec import drift  # noqa: E402
from spec.explore import explore  # noqa: E402
from spec.model import Model, config_names, load_config  # noqa: E402
from spec.model._config import Config  # noqa: E402
from spec.split import parts  # noqa: E402

MANIFEST = ROOT / "spec" / "model" / "configs" / "manifest.json"


def main(names: list[str]) -> int:
    if any(name.startswith("-") for name in names):
        print(__doc__.strip().splitlines()[-1].replace("``", ""), file=sys.stderr)
        return 0 if set(names) <= {"-h", "--help"} else 2
    unknown = sorted({n.partition("/")[0] for n in names} - set(config_names()))
    if unknown:
        print(f"pin_manifest: unknown configuration {', '.join(unknown)}; known: {', '.join(config_names())}",
              file=sys.stderr)  # fmt: skip
        return 2
    manifest = json.loads(MANIFEST.read_text(encoding="utf-8"))
    for name in names or [n for n, pinned in manifest.items() if pinned.get("states") is not None]:
        config = load_config(name)  # a part's name (standard/plans) pins that part alone
        if config.split or "/" in name:  # pinned part by part, under the split configuration's "parts" (spec/split.py)
            whole = load_config(name.partition("/")[0])
            for part in [config] if "/" in name else parts(config):
                into = manifest[whole.name].setdefault("parts", {})
                if not _pin(manifest, part, into, part.name.partition("/")[2]):
                    return 1
            continue
        if manifest.get(name, {}).get("pending"):
            print(f"{name}: pending, left as it is", file=sys.stderr)
            continue
        if not _pin(manifest, config, manifest, name):
            return 1
    return 0


def _pin(manifest: dict[str, Any], config: Config, into: dict[str, Any], key: str) -> bool:
    """Explore ``config`` and pin it as ``into[key]`` (a part, millions of states: with fingerprints)."""
    started = time.perf_counter()
    report = explore(Model(config), fingerprints="/" in config.name)
    if not report.complete or report.violations:
        print(f"{config.name}: not pinned: {sorted(report.violations) or 'incomplete'}", file=sys.stderr)
        return False
    into[key] = drift.pin(report)
    print(f"{config.name}: {report.states:,} states, {time.perf_counter() - started:.1f} s", file=sys.stderr)
    MANIFEST.write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return True


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
