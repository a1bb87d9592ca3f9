#!/usr/bin/env node
// A deliberately NON-CONFORMING implementation of the teamproto approval protocol, for Node.js
// (no npm dependencies). It speaks the conformance driver protocol (conformance/README.md) and
// gets a few things wrong on purpose, so that the suite can be seen to catch them:
//
//   DEFECT 1 (APR-2, APR-5): an approval is not bound to its arguments digest — a consume with
//            other arguments than the approved ones runs.
//   DEFECT 2 (XPR-1, INV-11): no fencing by incarnation — a call made by an older incarnation of
//            a restarted member is accepted.
//   DEFECT 3 (MEM-1): claims while draining — a member that drains for a shutdown request may
//            still claim a task (its status and accepting_new_tasks are not checked).
//   DEFECT 4 (AUD-3): a redactor that knows some shapes of secret only (KEY=…, a few token
//            prefixes, a password in a URL): a review summary with a GitHub fine-grained token,
//            a bearer header or a private key keeps it. (Not planted at first: the suite found it
//            once every shape of the corpus was sent, outside review 52.)
//
// Everything else it implements is meant to be right: stable ids of its own shape
// ("protocol-" + 16 hex digits), write steps in the model's order with a crash after any of them,
// reconciliation on restart, typed errors, limits. State lives in <data_dir>/state.json, replaced
// atomically after every write step; the external system's calls in <data_dir>/world.jsonl.
"use strict";

const crypto = require("crypto");
const fs = require("fs");
const path = require("path");
const readline = require("readline");

const MAX_LINE = 1 << 20;
const MAX_ARGS = 1 << 16;
const INJECTED = ["actor_id", "requester_id", "tool_call_id", "incarnation", "task_id", "responder_id"];
const KINDS = ["member", "capability_profile", "task", "job", "operation_approval", "plan_approval",
  "plan_execution", "shutdown_request", "message", "outbox_entry", "tool_execution", "audit_entry"];
const OPERATIONS = ["task.claim", "task.finish", "profile.change", "approval.request", "approval.retry",
  "approval.review", "approval.cancel", "approval.consume", "monitor.pass", "tick", "restart",
  "member.restart", "message.deliver", "shutdown.request", "shutdown.cancel", "shutdown.begin_drain"];
const STEPS = ["task.claim/task", "task.claim/member", "task.finish/task", "task.finish/member",
  "profile.change/profile", "approval.request/record", "approval.request/message",
  "approval.review/record", "approval.review/message", "approval.cancel/record",
  "approval.consume/record", "approval.consume/execution", "approval.consume/call",
  "approval.consume/outcome", "monitor.pass/records", "member.restart/member"];
// (it dies after a shutdown's write steps too, but does not reconcile a shutdown cut short: so it
// does not offer them to arm_crash, and the suite reports those crash vectors UNIMPLEMENTED)
const REQUIRED = {
  init: ["data_dir", "team", "tools", "clock"], tick: ["seconds"], arm_crash: ["step"],
  "task.claim": ["member_id", "task_id"], "task.finish": ["member_id", "task_id", "outcome"],
  "profile.change": ["member_id", "tools"], "member.restart": ["member_id"],
  "approval.request": ["actor", "tool_call_id", "task_id", "tool", "arguments", "risk_summary", "ttl_seconds"],
  "approval.review": ["actor", "protocol_id", "decision"],
  "approval.cancel": ["actor", "tool_call_id", "task_id", "protocol_id"],
  "approval.consume": ["actor", "tool_call_id", "task_id", "protocol_id", "tool", "arguments"],
  "message.deliver": ["message_id", "correlation_id"],
  "shutdown.request": ["actor", "member_id", "request_key", "reason_text", "ttl_seconds"],
  "shutdown.cancel": ["actor", "protocol_id"], "shutdown.begin_drain": ["member_id", "protocol_id"],
};
REQUIRED["approval.retry"] = REQUIRED["approval.request"];
REQUIRED["protocol.status"] = ["actor"];
REQUIRED["world.calls"] = [];
const PARTIES = { operation_approval: ["requester_id", "responder_id"], shutdown_request: ["requester_id", "target_id"] };

class Refusal extends Error {
  constructor(code, message) { super(message); this.code = code; }
}

function canonical(value) {
  if (Array.isArray(value)) return "[" + value.map(canonical).join(",") + "]";
  if (value && typeof value === "object") {
    return "{" + Object.keys(value).sort().map((k) => JSON.stringify(k) + ":" + canonical(value[k])).join(",") + "}";
  }
  return JSON.stringify(value);
}
const sha = (text) => crypto.createHash("sha256").update(text, "utf8").digest("hex");
const stableId = (prefix, ...parts) => `${prefix}-${sha(parts.join(":")).slice(0, 16)}`;
const digest = (tool, args) => sha(canonical({ tool_name: tool, arguments: args }));
const redact = (text) => text.replace(/([A-Za-z_]*(KEY|TOKEN|SECRET|PASSWORD)[A-Za-z_]*=)\S+/g, "$1[REDACTED]")
  .replace(/\b(sk-|ghp_|xox[bp]-|AKIA)[A-Za-z0-9_\-]{8,}/g, "[REDACTED]")
  .replace(/(\/\/[^\s:@\/]*:)[^\s\/]+@/g, "$1[REDACTED]@"); // a password in a URL (scheme://user:password@host)

let db = null; // {kind: {key: record}}
let dir = null;
let clock = 0;
let armed = null;
let lead = "lead";
let tools = {};

function save() {
  const tmp = path.join(dir, "state.json.tmp");
  fs.writeFileSync(tmp, JSON.stringify(db));
  fs.renameSync(tmp, path.join(dir, "state.json"));
}

// A write step that may write nothing (nothing to cancel): a crash armed after it still happens.
function stepDone(step) {
  if (armed === step) process.exit(70);
}

// One write step: change one record, persist, and die right after it if a crash is armed there.
// Inside one write step of several records (the monitor's pass) the records are persisted together.
let batching = false;
function write(step, kind, key, record) {
  const before = db[kind][key];
  db[kind][key] = record;
  if (kind === "operation_approval" || kind === "shutdown_request") audit(record, before ? before.events.length : 0);
  if (batching) return;
  save();
  if (armed === step) process.exit(70);
}

// AUD-1, AUD-5: each new event of an approval or a shutdown request goes to the hash-chained team
// log, saved with it.
function audit(record, seen) {
  const log = db.audit_entry;
  for (const e of record.events.slice(seen)) {
    const keys = Object.keys(log).sort();
    const last = keys.length ? log[keys[keys.length - 1]] : null;
    const entry = { sequence: last ? last.sequence + 1 : 0, previous_hash: last ? last.hash : "0".repeat(64),
      actor: e.actor, event: `${record.kind === "shutdown_request" ? "shutdown" : "approval"}.${e.event}`, subject_id: record.protocol_id, summary: e.summary, at: e.at };
    entry.hash = sha(canonical(entry));
    log[String(entry.sequence).padStart(12, "0")] = entry;
  }
}

function worldCalled(key) {
  const file = path.join(dir, "world.jsonl");
  if (!fs.existsSync(file)) return false;
  return fs.readFileSync(file, "utf8").split("\n").some((l) => l && JSON.parse(l).key === key);
}
function worldCall(key, args) {
  fs.appendFileSync(path.join(dir, "world.jsonl"), canonical({ key, arguments: args }) + "\n");
  if (armed === "approval.consume/call") process.exit(70);
  return { ok: true };
}

function need(kind, key) {
  const record = db[kind][key];
  if (!record) throw new Refusal("unknown_id", `no ${kind} ${JSON.stringify(key)}`);
  return record;
}
const event = (actor, name, summary = "") => ({ actor, event: name, summary: redact(summary), at: clock });

function post(step, pid, type, phase, sender, target, body, ttl, replyTo) {
  const id = stableId("message", pid, phase);
  if (db.message[id]) return; // a retry posts nothing new (MSG-4)
  const message = { message_type: type, message_id: id, correlation_id: pid, sender, target,
    timestamp: clock, ttl_seconds: Math.max(ttl, 1e-6), body };
  if (replyTo) message.reply_to = stableId("message", pid, replyTo);
  write(step, "message", id, { message, status: "pending", recorded_result: null });
}

function postRequest(ap, step) {
  const body = {};
  for (const k of ["protocol_id", "requester_id", "requester_incarnation", "task_id", "tool_name",
    "arguments_digest", "profile_version", "risk_summary", "deadline"]) body[k] = ap[k];
  post(step, ap.protocol_id, "approval_request", "request", ap.requester_id, ap.responder_id, body,
    ap.deadline - ap.created_at);
}
function postDecision(ap, step) {
  const body = { protocol_id: ap.protocol_id, decision: ap.status === "rejected" ? "rejected" : "approved",
    review_summary: ap.review_summary || "" };
  post(step, ap.protocol_id, "approval_decision", "decision", ap.responder_id, ap.requester_id, body,
    ap.deadline - clock, "request");
}

// ---- set-up and recovery ---------------------------------------------------------------------------
function init(req) {
  dir = req.data_dir;
  fs.mkdirSync(dir, { recursive: true });
  clock = req.clock;
  lead = req.team.lead;
  tools = Object.fromEntries(req.tools.map((t) => [t.name, t]));
  const file = path.join(dir, "state.json");
  if (fs.existsSync(file)) {
    db = JSON.parse(fs.readFileSync(file, "utf8"));
    reconcile();
    return { restarted: true };
  }
  db = Object.fromEntries(KINDS.map((k) => [k, {}]));
  for (const m of req.team.members) {
    db.member[m.member_id] = { member_id: m.member_id, status: "running", incarnation: 1, accepting_new_tasks: true,
      shutdown_request_id: null, current_task_id: null, last_heartbeat_at: null, version: 0 };
    db.capability_profile[m.member_id] = { member_id: m.member_id, version: 1, tools: [...m.tools].sort() };
  }
  for (const t of req.team.tasks) {
    db.task[t] = { task_id: t, status: "pending", owner_id: null, owner_incarnation: null, claim_token: null,
      checkpoint: null, history: [], version: 0 };
  }
  save();
  return { restarted: false };
}

function reconcile() {
  for (const ap of Object.values(db.operation_approval)) {
    if (ap.status === "requested" && clock > ap.deadline) expire(ap, "approval.reconcile/record");
    const now = db.operation_approval[ap.protocol_id];
    if (now.status === "requested") postRequest(now, "approval.reconcile/message");
    else if (now.status === "approved" || now.status === "rejected") postDecision(now, "approval.reconcile/message");
    else if (now.status === "consumed") lookUpOutcome(now);
  }
  const claimed = Object.values(db.task).filter((t) => t.status === "claimed");
  for (const m of Object.values(db.member)) {
    const holds = claimed.filter((t) => t.owner_id === m.member_id && t.owner_incarnation === m.incarnation)
      .map((t) => t.task_id);
    let repaired;
    if (m.current_task_id !== null && !holds.includes(m.current_task_id)) repaired = null;
    else if (m.current_task_id === null && holds.length && ["running", "draining"].includes(m.status)) repaired = holds[0];
    else continue;
    write("member.reconcile/member", "member", m.member_id, { ...m, current_task_id: repaired });
  }
}

function lookUpOutcome(ap) {
  const key = ap.protocol_id;
  const ex = db.tool_execution[key];
  const base = { idempotency_key: key, requester_id: ap.requester_id, task_id: ap.task_id, tool_name: ap.tool_name,
    arguments_digest: ap.arguments_digest, profile_version: ap.profile_version };
  if (!ex) {
    write("approval.reconcile/execution", "tool_execution", key,
      { ...base, status: "failed", attempts: 0, result: { ok: false, error: "crashed before the call" } });
  } else if (ex.status === "started") {
    const called = worldCalled(key);
    write("approval.reconcile/outcome", "tool_execution", key, { ...ex, status: called ? "succeeded" : "failed",
      result: called ? { ok: true } : { ok: false, error: "the call never happened" } });
  }
}

function expire(ap, step) {
  write(step, "operation_approval", ap.protocol_id, { ...ap, status: "expired", reason: "expired",
    events: [...ap.events, event("monitor", "expired")] });
}

// ---- operations ------------------------------------------------------------------------------------
function runningMember(actor) {
  const m = need("member", actor.member_id);
  // DEFECT 2: the caller's incarnation (actor.incarnation) is never compared with the member's.
  if (m.status !== "running") throw new Refusal("member_not_running", `${m.member_id} is ${m.status}`);
  return m;
}
function ownedTask(actor, m, taskId) {
  const t = db.task[taskId];
  // DEFECT 2 again: the claim is checked against the incarnation the caller says it is.
  const incarnation = actor.incarnation === undefined ? m.incarnation : actor.incarnation;
  if (!t || t.status !== "claimed" || t.owner_id !== actor.member_id || t.owner_incarnation !== incarnation) {
    throw new Refusal("not_task_owner", `${actor.member_id} does not hold task ${taskId}`);
  }
  return t;
}
function checkArgs(args) {
  for (const f of INJECTED) if (f in args) throw new Refusal("forged_identity", `argument ${f} is injected (APR-3)`);
  if (canonical(args).length > MAX_ARGS) throw new Refusal("payload_too_large", `arguments over ${MAX_ARGS} bytes`);
}
function tool(name) {
  if (!tools[name]) throw new Refusal("unknown_tool", `no tool ${name}`);
  return tools[name];
}

function request(req) {
  checkArgs(req.arguments);
  tool(req.tool);
  const m = runningMember(req.actor);
  const profile = db.capability_profile[m.member_id];
  if (!profile.tools.includes(req.tool)) throw new Refusal("tool_not_in_profile", `${req.tool} not in profile`);
  ownedTask(req.actor, m, req.task_id);
  const pid = stableId("protocol", m.member_id, req.tool_call_id, "operation_approval");
  const doc = { protocol_id: pid, kind: "operation_approval", status: "requested", requester_id: m.member_id,
    requester_incarnation: m.incarnation, responder_id: lead, task_id: req.task_id, tool_name: req.tool,
    tool_call_id: req.tool_call_id, arguments_digest: digest(req.tool, req.arguments),
    profile_version: profile.version, risk_summary: redact(req.risk_summary), review_summary: null,
    created_at: clock, deadline: clock + req.ttl_seconds, consumed_at: null, reason: null,
    events: [event(m.member_id, "requested", req.risk_summary)], version: 0 };
  const old = db.operation_approval[pid];
  if (old) {
    for (const f of ["requester_id", "task_id", "tool_name", "arguments_digest", "profile_version"]) {
      if (old[f] !== doc[f]) throw new Refusal("protocol_conflict", `${pid} exists with another ${f}`);
    }
    if (Math.abs(old.deadline - old.created_at - req.ttl_seconds) > 1e-9) {
      throw new Refusal("protocol_conflict", `${pid} exists with another ttl_seconds`);
    }
    postRequest(old, "approval.request/message");
    return { protocol_id: pid };
  }
  write("approval.request/record", "operation_approval", pid, doc);
  postRequest(doc, "approval.request/message");
  return { protocol_id: pid };
}

function review(req) {
  if (!["approved", "rejected"].includes(req.decision)) throw new Refusal("schema_invalid", "bad decision");
  const ap = need("operation_approval", req.protocol_id);
  if (req.actor.member_id !== ap.responder_id) throw new Refusal("not_responder", `only ${ap.responder_id} reviews`);
  if (ap.status === req.decision) { postDecision(ap, "approval.review/message"); return { status: ap.status }; }
  if (ap.status !== "requested") throw new Refusal("review_conflict", `${ap.protocol_id} is ${ap.status}`);
  if (clock > ap.deadline) throw new Refusal("approval_expired", `${ap.protocol_id} expired`);
  const done = { ...ap, status: req.decision, review_summary: redact(req.summary || ""),
    reason: req.decision === "rejected" ? "rejected" : null,
    events: [...ap.events, event(req.actor.member_id, req.decision, req.summary || "")] };
  write("approval.review/record", "operation_approval", ap.protocol_id, done);
  postDecision(done, "approval.review/message");
  return { status: done.status };
}

function cancel(req) {
  const ap = need("operation_approval", req.protocol_id);
  if (ap.requester_id !== req.actor.member_id) throw new Refusal("approval_other_agent", `belongs to ${ap.requester_id}`);
  if (!["requested", "approved"].includes(ap.status)) throw new Refusal("cancel_refused", `it is ${ap.status}`);
  const requester = db.member[ap.requester_id];
  if (requester.status !== "running") throw new Refusal("member_not_running", `${ap.requester_id} is ${requester.status}`);
  const done = { ...ap, status: "cancelled", reason: "cancelled",
    events: [...ap.events, event(req.actor.member_id, "cancelled")] };
  write("approval.cancel/record", "operation_approval", ap.protocol_id, done);
  return { status: "cancelled" };
}

function consume(req) {
  checkArgs(req.arguments);
  tool(req.tool);
  const ap = need("operation_approval", req.protocol_id);
  const m = runningMember(req.actor);
  ownedTask(req.actor, m, req.task_id);
  const profile = db.capability_profile[m.member_id];
  if (!profile.tools.includes(req.tool)) throw new Refusal("tool_not_in_profile", `${req.tool} not in profile`);
  if (ap.status !== "approved") throw new Refusal("approval_not_active", `${ap.protocol_id} is ${ap.status}`);
  if (ap.requester_id !== m.member_id) throw new Refusal("approval_other_agent", `belongs to ${ap.requester_id}`);
  if (ap.task_id !== req.task_id) throw new Refusal("approval_other_task", `for task ${ap.task_id}`);
  if (ap.tool_name !== req.tool) throw new Refusal("tool_mismatch", `for tool ${ap.tool_name}`);
  // DEFECT 1: the arguments digest is never compared with the approved one.
  if (clock > ap.deadline) throw new Refusal("approval_expired", `${ap.protocol_id} expired at ${ap.deadline}`);
  if (profile.version !== ap.profile_version) throw new Refusal("profile_changed", "the profile changed");
  const key = ap.protocol_id;
  write("approval.consume/record", "operation_approval", key, { ...ap, status: "consumed", consumed_at: clock,
    events: [...ap.events, event(m.member_id, "consumed")] });
  const ex = { idempotency_key: key, status: "started", requester_id: ap.requester_id, task_id: ap.task_id,
    tool_name: ap.tool_name, arguments_digest: ap.arguments_digest, profile_version: ap.profile_version,
    attempts: 1, result: null };
  write("approval.consume/execution", "tool_execution", key, ex);
  const result = worldCall(key, req.arguments);
  write("approval.consume/outcome", "tool_execution", key, { ...ex, status: "succeeded", result });
  return { idempotency_key: key, result };
}

function monitorPass() {
  // one write step of the model (REC-5: made one atomic write): its writes are persisted at once, at the end (a SIGKILL during
  // the pass leaves the state as it was before it, REC-2), and die with it only then (stepDone)
  const PASS = "monitor.pass/part";
  const expired = [];
  batching = true;
  for (const ap of Object.values(db.operation_approval)) {
    if (["requested", "approved"].includes(ap.status) && clock > ap.deadline) {
      expire(ap, PASS);
      expired.push(ap.protocol_id);
    }
  }
  for (const sd of Object.values(db.shutdown_request)) { // SHD-6
    if (clock <= sd.deadline || !["requested", "draining"].includes(sd.status)) continue;
    const target = sd.status === "requested" ? "expired" : "timed_out";
    write(PASS, "shutdown_request", sd.protocol_id, { ...sd, status: target, reason: target,
      events: [...sd.events, event("monitor", target)] });
    expired.push(sd.protocol_id);
  }
  for (const rec of Object.values(db.message)) { // a request nobody handled in time
    const m = rec.message;
    const request = ["shutdown_request", "approval_request"].includes(m.message_type); // MSG-1
    if (rec.status === "pending" && request && m.body.deadline < clock) {
      write(PASS, "message", m.message_id, { ...rec, status: "expired" });
    }
  }
  batching = false;
  save();
  stepDone("monitor.pass/records");
  return { expired };
}

// ---- graceful shutdown (SHD-1, SHD-2, XPR-2) ----------------------------------------------------
function leadOnly(actor, what) {
  if (actor.member_id !== lead) throw new Refusal("not_lead", `only ${lead} may ${what}`);
}
function shutdownRequest(req) {
  leadOnly(req.actor, "request a shutdown");
  const target = need("member", req.member_id);
  const pid = stableId("protocol", lead, req.request_key, "shutdown_request");
  let sd = db.shutdown_request[pid];
  if (!sd) {
    if (target.status !== "running") throw new Refusal("shutdown_refused", `${target.member_id} is ${target.status}`);
    sd = { protocol_id: pid, kind: "shutdown_request", status: "requested", requester_id: lead,
      target_id: target.member_id, target_incarnation: target.incarnation, responder_id: target.member_id,
      reason_text: redact(req.reason_text), created_at: clock, deadline: clock + req.ttl_seconds, released_task_id: null,
      waited_job_ids: [], reason: null, events: [event(lead, "requested", req.reason_text)], version: 0 };
    write("shutdown.request/record", "shutdown_request", pid, sd);
  } else if (sd.target_id !== target.member_id) {
    throw new Refusal("shutdown_refused", `${pid} targets ${sd.target_id}; use a new request_key`);
  } else if (sd.reason_text !== redact(req.reason_text) || Math.abs(sd.deadline - sd.created_at - req.ttl_seconds) > 1e-9) {
    throw new Refusal("protocol_conflict", `${pid} exists with another reason or timeout; use a new request_key`);
  }
  if (sd.status === "requested") {
    const body = { protocol_id: pid, target_incarnation: sd.target_incarnation, reason_text: sd.reason_text,
      deadline: sd.deadline };
    post("shutdown.request/message", pid, "shutdown_request", "request", lead, sd.target_id, body,
      sd.deadline - sd.created_at);
  }
  return { protocol_id: pid };
}
function shutdownCancel(req) {
  leadOnly(req.actor, "cancel a shutdown");
  const sd = need("shutdown_request", req.protocol_id);
  if (sd.status !== "requested") throw new Refusal("shutdown_refused", `${sd.protocol_id} is ${sd.status}`);
  write("shutdown.cancel/record", "shutdown_request", sd.protocol_id, { ...sd, status: "cancelled",
    reason: "cancelled", events: [...sd.events, event(lead, "cancelled")] });
  return { status: "cancelled" };
}
function drainRefusal(sd, m) {
  if (sd.target_incarnation !== m.incarnation) return `stale: made for incarnation ${sd.target_incarnation}`;
  if (sd.status === "requested") {
    if (clock > sd.deadline) return "past its deadline";
    return m.status === "running" ? null : `member is ${m.status}`;
  }
  if (sd.status === "draining" && [null, sd.protocol_id].includes(m.shutdown_request_id)) return null;
  return `request is ${sd.status}`;
}
function beginDrain(req) {
  const sd = need("shutdown_request", req.protocol_id);
  const rec = need("message", stableId("message", sd.protocol_id, "request"));
  if (rec.message.target !== req.member_id) throw new Refusal("shutdown_refused", "not a request to this member");
  if (rec.recorded_result !== null) return { recorded_result: rec.recorded_result };
  if (rec.status !== "pending") throw new Refusal("message_not_pending", `the request is ${rec.status}`);
  const m = need("member", req.member_id);
  const refusal = drainRefusal(sd, m);
  if (refusal === null) {
    if (sd.status === "requested") {
      write("shutdown.begin_drain/record", "shutdown_request", sd.protocol_id, { ...sd, status: "draining",
        events: [...sd.events, event(m.member_id, "draining")] });
    }
    if (m.status === "running") {
      write("shutdown.begin_drain/member", "member", m.member_id, { ...m, status: "draining",
        accepting_new_tasks: false, shutdown_request_id: sd.protocol_id });
    }
    for (const ap of Object.values(db.operation_approval)) { // XPR-2: its open requests end
      if (ap.status === "requested" && ap.requester_id === m.member_id && ap.requester_incarnation === m.incarnation) {
        write("shutdown.begin_drain/cancel_requests", "operation_approval", ap.protocol_id, { ...ap,
          status: "cancelled", reason: "member_draining", events: [...ap.events, event(m.member_id, "cancelled")] });
      }
    }
    stepDone("shutdown.begin_drain/cancel_requests");
  }
  const result = refusal === null ? { outcome: "draining" } : { outcome: "refused", reason: refusal };
  const recorded = { ...result, delivered_at: clock };
  write("shutdown.begin_drain/message", "message", rec.message.message_id, { ...rec, status: "delivered",
    recorded_result: recorded });
  return { recorded_result: recorded };
}

function claim(req) {
  const m = need("member", req.member_id);
  const t = need("task", req.task_id);
  if (t.status !== "pending") throw new Refusal("task_taken", `${t.task_id} is ${t.status}`);
  if (m.current_task_id) throw new Refusal("claim_refused", `${m.member_id} holds ${m.current_task_id}`);
  // DEFECT 3: a draining member may claim (neither accepting_new_tasks nor its shutdown is looked at).
  if (!["running", "draining"].includes(m.status)) throw new Refusal("member_not_running", `${m.member_id} is ${m.status}`);
  const claims = t.history.filter((e) => e.event === "claimed").length;
  const token = stableId("claim", t.task_id, claims + 1);
  write("task.claim/task", "task", t.task_id, { ...t, status: "claimed", owner_id: m.member_id,
    owner_incarnation: m.incarnation, claim_token: token, history: [...t.history, event(m.member_id, "claimed")] });
  write("task.claim/member", "member", m.member_id, { ...db.member[m.member_id], current_task_id: t.task_id });
  return { claim_token: token };
}

function finish(req) {
  const t = need("task", req.task_id);
  if (t.owner_id !== req.member_id || t.status !== "claimed") throw new Refusal("not_task_owner", "not the holder");
  if (req.claim_token !== undefined && req.claim_token !== t.claim_token) { // TSK-1
    throw new Refusal("not_claim_holder", "the claim token is not the current one");
  }
  write("task.finish/task", "task", t.task_id, { ...t, status: req.outcome,
    history: [...t.history, event(req.member_id, req.outcome)] });
  write("task.finish/member", "member", req.member_id, { ...db.member[req.member_id], current_task_id: null });
  return {};
}

function deliver(req) {
  const rec = need("message", req.message_id);
  if (rec.message.correlation_id !== req.correlation_id) throw new Refusal("unknown_id", "another correlation");
  if (rec.recorded_result !== null) return { recorded_result: rec.recorded_result };
  if (rec.status !== "pending") throw new Refusal("message_not_pending", `message ${req.message_id} is ${rec.status}`);
  const result = { delivered_at: clock };
  write("message.deliver/message", "message", req.message_id, { ...rec, status: "delivered", recorded_result: result });
  return { recorded_result: result };
}

const HANDLERS = {
  init,
  capabilities: () => ({ name: "sample (deliberately non-conforming)", operations: OPERATIONS, write_steps: STEPS,
    reads: ["protocol.status", "world.calls"], limits: { max_line_bytes: MAX_LINE, max_arguments_bytes: MAX_ARGS } }),
  "world.calls": () => { // the external system's calls, by idempotency key (the suite checks INV-1, APR-8)
    const file = path.join(dir, "world.jsonl");
    if (!fs.existsSync(file)) return { calls: [] };
    return { calls: fs.readFileSync(file, "utf8").split("\n").filter((l) => l).map((l) => JSON.parse(l).key) };
  },
  "protocol.status": (req) => { // AUD-4: only the records the caller takes part in
    const who = req.actor.member_id;
    const records = [];
    for (const [kind, parties] of Object.entries(PARTIES)) {
      for (const key of Object.keys(db[kind]).sort()) {
        const r = db[kind][key];
        if (parties.some((p) => r[p] === who) && (req.protocol_id === undefined || req.protocol_id === r.protocol_id)) {
          records.push({ protocol_id: r.protocol_id, kind: r.kind, status: r.status, deadline: r.deadline });
        }
      }
    }
    return { records };
  },
  snapshot: () => {
    const snap = { clock };
    for (const k of KINDS) snap[k] = Object.keys(db[k]).sort().map((key) => db[k][key]);
    return { snapshot: snap };
  },
  restart: () => { reconcile(); return {}; },
  arm_crash: (req) => {
    if (!STEPS.includes(req.step)) throw new Refusal("unknown_id", `no write step ${req.step}`);
    armed = req.step;
    return {};
  },
  tick: (req) => { clock += req.seconds; return { clock }; },
  "monitor.pass": monitorPass,
  "task.claim": claim,
  "task.finish": finish,
  "profile.change": (req) => {
    const p = need("capability_profile", req.member_id);
    write("profile.change/profile", "capability_profile", req.member_id,
      { member_id: req.member_id, version: p.version + 1, tools: [...req.tools].sort() });
    return { version: p.version + 1 };
  },
  "member.restart": (req) => {
    const m = need("member", req.member_id);
    write("member.restart/member", "member", m.member_id, { ...m, incarnation: m.incarnation + 1, status: "running",
      accepting_new_tasks: true, current_task_id: null, shutdown_request_id: null });
    return { incarnation: m.incarnation + 1 };
  },
  "approval.request": request,
  "approval.retry": request,
  "approval.review": review,
  "approval.cancel": cancel,
  "approval.consume": consume,
  "message.deliver": deliver,
  "shutdown.request": shutdownRequest,
  "shutdown.cancel": shutdownCancel,
  "shutdown.begin_drain": beginDrain,
};

function handle(line) {
  const found = /"msg_id"\s*:\s*(\d+)/.exec(line.slice(0, 4096));
  const msgId = found ? Number(found[1]) : null;
  try {
    if (Buffer.byteLength(line, "utf8") > MAX_LINE) throw new Refusal("payload_too_large", `over ${MAX_LINE} bytes`);
    let req;
    try { req = JSON.parse(line); } catch (e) { throw new Refusal("schema_invalid", `not JSON: ${e.message}`); }
    if (!req || typeof req !== "object" || !Number.isInteger(req.msg_id) || typeof req.type !== "string") {
      throw new Refusal("schema_invalid", "a request has an integer msg_id and a type");
    }
    const handler = HANDLERS[req.type];
    if (!handler) throw new Refusal("unimplemented", `${req.type} is not implemented`);
    for (const f of REQUIRED[req.type] || []) if (!(f in req)) throw new Refusal("schema_invalid", `$.${f} is required`);
    if (req.type !== "init" && req.type !== "capabilities" && db === null) throw new Refusal("schema_invalid", "init first");
    const result = handler(req);
    if (!["arm_crash", "capabilities", "snapshot"].includes(req.type)) armed = null;
    return { in_reply_to: req.msg_id, type: "ok", result };
  } catch (error) {
    armed = null;
    if (!(error instanceof Refusal)) throw error;
    return { in_reply_to: msgId, type: "error", error: { code: error.code, definite: true, message: error.message } };
  }
}

const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
lines.on("line", (line) => {
  if (line.trim()) process.stdout.write(JSON.stringify(handle(line)) + "\n");
});
