"""Sequence diagrams of real traces, as SVG: who acted, what was sent to whom, which record changed,
and where a crash fell. Generated from a trace in the explorer's format (``teamproto-trace/1``),
never drawn by hand.

Lifelines: the Lead, each member of the snapshot, and the harness (ticks, the monitor, the
outbox, restarts). Each step is one row: its number and action on the left; a dot on the actor's
lifeline; an arrow for each message that step put on the bus; a note for each record it changed;
a red band where the process crashed; and, for a counterexample, the broken invariant in red at
the foot.
"""

from __future__ import annotations

import textwrap
from html import escape
from typing import Any

from spec.schemas import record_id

from .traces import action_text, changes

LEAD_ACTIONS = frozenset(
    {
        "approval.review",
        "plan.decide",
        "plan.retract",
        "shutdown.request",
        "shutdown.cancel",
        "shutdown.force_terminate",
        "member.inspect",
        "member.restart",
        "member.retire",
        "profile.change",
    }
)
QUIET_FIELDS = frozenset({"status", "version", "events", "history", "message", "recorded_result"})
LEFT = 330  # width of the step column
COLUMN = 190  # distance between lifelines
TOP = 60
LINE = 15


def participants(trace: dict[str, Any]) -> list[str]:
    members = [m["member_id"] for m in trace["steps"][0]["snapshot"]["member"]]
    return ["lead", *members, "harness"]


OWNER_FIELDS = ("target_id", "requester_id", "owner_id")  # a shutdown request's member is its target
HARNESS_ACTIONS = frozenset({"tick", "monitor.pass", "restart", "outbox.send", "plan.deliver_decision"})


def actor(action: dict[str, Any] | None, sent: list[dict[str, Any]], names: list[str], owners: list[str]) -> str:
    """Who took this step: the Lead, the member named in its arguments, a message's sender, the member
    whose record the step changed (``owners``), or the harness (ticks, the monitor, the outbox, restarts)."""
    if action is None or action["action"] in HARNESS_ACTIONS:
        return "harness"
    if action["action"] in LEAD_ACTIONS:
        return "lead"
    if "member" in action["args"] and f"m{action['args']['member']}" in names:
        return f"m{action['args']['member']}"
    candidates = [m["sender"] for m in sent] + owners
    return next((str(c) for c in candidates if c in names), "harness")


def _row(trace_step: dict[str, Any], previous: dict[str, Any] | None) -> dict[str, Any]:
    step_changes = changes(previous, trace_step["snapshot"])
    sent = [c["fields"]["message"][1] for c in step_changes if c["kind"] == "message" and c["created"]]
    notes = []
    for c in step_changes:
        if c["kind"] == "message" and c["created"]:
            continue
        status = c["fields"].get("status")
        if c["kind"] == "clock":
            notes.append(f"clock {c['fields']['clock'][0]} → {c['fields']['clock'][1]}")
            continue
        if status and status[0] != status[1]:
            before = "new" if status[0] is None else status[0]
            notes.append(f"{c['kind']} {c['key']}: {before} → {status[1]}")
        if not c["created"]:
            shown = [(f, pair) for f, pair in c["fields"].items() if f not in QUIET_FIELDS][:2]
            notes.extend(f"{c['kind']} {c['key']}.{f}: {pair[0]!r} → {pair[1]!r}" for f, pair in shown)
    owners = [_owner(trace_step["snapshot"], c) for c in step_changes if c["kind"] not in ("message", "clock")]
    return {
        "action": trace_step["action"],
        "sent": sent,
        "notes": notes if previous is not None else [],
        "owners": [o for o in owners if o],
    }


def _owner(snapshot: dict[str, Any], change: dict[str, Any]) -> str | None:
    """The member a changed record belongs to (its requester, target or owner), if it names one."""
    for record in snapshot.get(change["kind"], []):
        if str(record_id(change["kind"], record)).startswith(change["key"]):
            if change["kind"] == "plan_execution":  # an execution belongs to its plan's requester
                plans = snapshot.get("plan_approval", [])
                record = next((p for p in plans if p["protocol_id"] == record["plan_id"]), record)
            return next((str(record[f]) for f in OWNER_FIELDS if record.get(f)), None)
    return None


def _text(x: float, y: float, text: str, **attrs: str) -> str:
    extra = "".join(f' {k.replace("_", "-")}="{v}"' for k, v in attrs.items())
    return f'<text x="{x:.0f}" y="{y:.0f}"{extra}>{escape(text)}</text>'


def _arrow(x1: float, x2: float, y: float, label: str) -> list[str]:
    line = f'<line x1="{x1:.0f}" y1="{y:.0f}" x2="{x2:.0f}" y2="{y:.0f}" stroke="#222" marker-end="url(#arrow)"/>'
    return [line, _text((x1 + x2) / 2, y - 3, label, text_anchor="middle", font_size="11")]


def _draw_step(number: int, step: dict[str, Any], row: dict[str, Any], xs: dict[str, float], y: float) -> list[str]:
    """The elements of one row: the action, the actor's dot, the messages sent, the records changed."""
    names = list(xs)
    who = actor(step["action"], row["sent"], names, row["owners"])
    crashed = bool(step["action"] and step["action"].get("crash_after"))
    body = []
    if crashed:
        width = LEFT + COLUMN * (len(names) + 1)
        body.append(f'<rect x="0" y="{y - 4:.0f}" width="{width}" height="{row_height(row):.0f}" fill="#fde2e2"/>')
    weight = "bold" if crashed else "normal"
    for offset, part in enumerate(textwrap.wrap(f"{number:>2}. {action_text(step['action'])}", 48)):
        body.append(_text(8 + 16 * bool(offset), y + 10 + LINE * offset, part, font_weight=weight))
    body.append(f'<circle cx="{xs[who]:.0f}" cy="{y + 6:.0f}" r="5" fill="#1f5fa8"/>')
    line_y = y + LINE * 1.4
    for message in row["sent"]:
        sender, target = xs.get(message["sender"], xs["harness"]), xs.get(message["target"], xs["harness"])
        body.extend(_arrow(sender, target, line_y, message["message_type"]))
        line_y += LINE * 1.4
    for note in row["notes"]:
        body.append(_text(xs[who] + 10, line_y + 4, note, font_size="10", fill="#555"))
        line_y += LINE
    return body


def row_height(row: dict[str, Any]) -> float:
    return LINE * max(1.6 + len(row["sent"]) * 1.4 + len(row["notes"]), 2.4)


def sequence_svg(trace: dict[str, Any]) -> str:
    """The whole trace as one SVG sequence diagram."""
    names = participants(trace)
    xs = {name: LEFT + COLUMN * (i + 0.5) for i, name in enumerate(names)}
    width = LEFT + COLUMN * (len(names) + 1)
    body: list[str] = []
    y: float = TOP
    previous = None
    for number, step in enumerate(trace["steps"]):
        row = _row(step, previous)
        previous = step["snapshot"]
        body.extend(_draw_step(number, step, row, xs, y))
        y += row_height(row) + 6
    violation = trace.get("violation")
    if violation:
        verdict = f"✗ {violation['clause']} {violation['invariant']}: {violation['message']}"
        for offset, part in enumerate(textwrap.wrap(verdict, 150)):
            body.append(_text(8, y + 12 + LINE * offset, part, fill="#b71c1c", font_weight="bold"))
        y += LINE * (len(textwrap.wrap(verdict, 150)) + 1)
    heads = [_text(xs[n], 30, n, text_anchor="middle", font_weight="bold") for n in names]
    dash = 'stroke="#bbb" stroke-dasharray="4 3"'
    lifelines = [f'<line x1="{x:.0f}" y1="40" x2="{x:.0f}" y2="{y:.0f}" {dash}/>' for x in xs.values()]
    title = trace.get("title", trace.get("name", ""))
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{y + 10:.0f}" '
        f'viewBox="0 0 {width} {y + 10:.0f}" font-family="Helvetica, Arial, sans-serif" font-size="12">\n'
        f"<title>{escape(title)}</title>\n"
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
        'orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="#222"/></marker></defs>\n'
        + "\n".join(heads + lifelines + body)
        + "\n</svg>\n"
    )
