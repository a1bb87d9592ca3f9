"""Redaction's time on adversarial text grows with the text, not faster (AUD-3, INV-10), in one run.

Each input repeats a unit chosen to make a backtracking pattern rescan (hyphenated runs, scheme
prefixes, quotes, "@" and ":" runs, every pattern's own prefix, a .NET hex dump): ``redact`` on
the short and the long text (``--sizes``, default 10,000 and 100,000 characters), the best of
three runs each, side by side. Prints each input's times and their growth against the size's
(target: the same, within 3× of it; a quadratic pattern grows 10× more per 10× of text, a cubic one
100×). An outside review found ``env_assignment`` cubic on ``"a-" * n`` (3.6 KB took 31 s) and
``url_password`` quadratic on ``"a" * n`` (100 KB took 15 s). ``--json`` for machines; exit 1 when an
input misses the target. Run: ``python bench/redaction.py [--json] [--sizes SHORT LONG]``.
"""

from __future__ import annotations

import json
import sys
import time

from spec.redaction import redact

UNITS = {
    "hyphenated name": "password-",
    "hex dump": "4A-",
    "hyphens": "a-",
    "letters": "a",
    "hex": "0123456789abcdef",
    "schemes": "a://b:",
    "scheme prefixes": "http://",
    "at signs": "a:b@",
    "user and at": "x://u:p@",
    "open quotes": 'password="a',
    "escapes": 'password="\\',
    "quotes": '"',
    "assignments": "password = ",
    "jwt": "eyJa.",
    "openai prefix": "sk-",
    "github prefix": "ghp_",
    "key blocks": "-----BEGIN ",
    "bearer": "Bearer ",
    "basic": "authorization: basic ",
    "env names": "TOKEN_",
}
GROWTH_LIMIT = 3.0
"""How much faster than the text a time may grow (noise and caches; a quadratic pattern is 10×)."""


def best_seconds(text: str, runs: int = 3) -> float:
    best = float("inf")
    for _ in range(runs):
        started = time.perf_counter()
        redact(text)
        best = min(best, time.perf_counter() - started)
    return best


def measure(short: int, long: int) -> dict[str, dict[str, float]]:
    out = {}
    for name, unit in UNITS.items():
        times = [best_seconds(unit * (size // len(unit))) for size in (short, long)]
        out[name] = {
            "ms_short": round(times[0] * 1000, 2),
            "ms_long": round(times[1] * 1000, 2),
            "growth": round(times[1] / max(times[0], 1e-9), 1),
        }
    return out


def main(argv: list[str]) -> int:
    as_json = "--json" in argv
    sizes = [int(a) for a in argv[argv.index("--sizes") + 1 :][:2]] if "--sizes" in argv else [10_000, 100_000]
    short, long = sizes
    table = measure(short, long)
    limit = GROWTH_LIMIT * long / short
    slow = sorted(name for name, row in table.items() if row["growth"] > limit)
    if as_json:
        print(json.dumps({"sizes": sizes, "limit": limit, "inputs": table, "too_slow": slow}, indent=2))
    else:
        print(f"redact on adversarial text: {short:,} against {long:,} characters (size ×{long / short:g})")
        for name, row in table.items():
            print(f"  {name:16} {row['ms_short']:9.2f} ms {row['ms_long']:9.2f} ms   ×{row['growth']}")
        print(f"growth limit ×{limit:g}: " + ("every input within it" if not slow else f"too slow: {', '.join(slow)}"))
    return 1 if slow else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
