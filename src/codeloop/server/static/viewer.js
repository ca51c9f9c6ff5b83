"use strict";
// The trajectory viewer: one exported or recorded session, step by step. The trajectory
// comes from a file the user picks or drops (read here with the File API, never by the
// server), from the server's store by session id, or embedded in the page by `codeloop view`.
// Every string in it is untrusted: it only ever becomes text through el() (dom.js).

const money = (x) => "$" + Number(x || 0).toFixed(6);
const count = (x) => Number(x || 0).toLocaleString("en-US");
const TOTALS = [["steps", "steps"], ["input_tokens", "tokens in"], ["output_tokens", "tokens out"],
                ["cache_read_tokens", "tokens cached"], ["cost_usd", "cost (USD)"]];
const USAGE_EVENTS = new Set(["model_call_finished", "auxiliary_model_call"]);

function checkDoc(doc) {
  if (!doc || typeof doc !== "object" || !Array.isArray(doc.events) ||
      !String(doc.format || "").startsWith("codeloop-trajectory/"))
    throw new Error("not a codeloop trajectory (write one with `codeloop export ID -o FILE`)");
  return doc;
}

// --- figures ---------------------------------------------------------------------------------

function usageOf(e) {
  const u = e.usage || {};
  return { input: Number(u.input_tokens || 0), output: Number(u.output_tokens || 0),
           cached: Number(u.cache_read_tokens || 0), cost: Number(e.cost_usd || 0) };
}

function addUsage(into, e) {
  const u = usageOf(e);
  into.input += u.input; into.output += u.output; into.cached += u.cached; into.cost += u.cost;
}

const zero = () => ({ calls: 0, input: 0, output: 0, cached: 0, cost: 0 });

// The totals as the events give them, counted the way the session's fold counts them: a step
// per finished model call, tokens and cost of every model call (auxiliary ones too).
function totalsOf(events) {
  const t = zero();
  let steps = 0;
  const byModel = new Map();
  for (const e of events) {
    if (!USAGE_EVENTS.has(e.type)) continue;
    if (e.type === "model_call_finished") steps += 1;
    addUsage(t, e);
    const key = `${e.model}\u0000${e.role || "-"}`;
    if (!byModel.has(key)) byModel.set(key, { model: String(e.model), role: String(e.role || "-"), ...zero() });
    const row = byModel.get(key);
    row.calls += 1;
    addUsage(row, e);
  }
  return { steps, input_tokens: t.input, output_tokens: t.output, cache_read_tokens: t.cached,
           cost_usd: t.cost, byModel: [...byModel.values()].sort((a, b) => b.cost - a.cost) };
}

// Events grouped by the model call they belong to; what comes before the first is "start".
// A routing decision is logged before the call it picks the model for, so it joins that step.
function stepsOf(events) {
  const groups = [{ step: null, events: [], usage: zero(), model: "" }];
  let routed = [];
  for (const e of events) {
    if (e.type === "model_routed") { routed.push(e); continue; }
    const starts = (e.type === "model_call_started" || e.type === "model_call_finished") &&
                   groups[groups.length - 1].step !== e.step;
    if (starts) groups.push({ step: e.step, events: [], usage: zero(), model: "" });
    const g = groups[groups.length - 1];
    g.events.push(...routed, e);
    routed = [];
    if (USAGE_EVENTS.has(e.type)) { addUsage(g.usage, e); g.usage.calls += 1; }
    if (e.type === "model_call_finished") g.model = String(e.model);
  }
  groups[groups.length - 1].events.push(...routed);
  return groups.filter((g) => g.events.length);
}

// --- rendering -------------------------------------------------------------------------------

function item(kind, e, ...children) {
  return el("li", { class: "ev " + kind, "data-seq": String(e.seq), "data-type": String(e.type) },
            ...children);
}

function jsonBlock(value) {
  return el("pre", { class: "output" }, JSON.stringify(value, null, 2));
}

function rest(e) {
  const { seq: _seq, type: _type, ts: _ts, ...fields } = e;
  return fields;
}

function generic(e, label) {
  return item("other", e, el("details", {},
    el("summary", {}, el("code", {}, label || String(e.type))), jsonBlock(rest(e))));
}

// A context build: its short figures on one line, everything else behind a toggle.
function contextNode(e) {
  const fields = rest(e);
  const brief = Object.entries(fields)
    .filter(([, v]) => typeof v === "number" || (typeof v === "string" && v.length <= 60))
    .map(([k, v]) => `${k} ${v}`).join(" · ");
  return item("context", e, el("details", {},
    el("summary", {}, el("strong", {}, "context built"), brief ? " " : null,
       brief ? el("span", { class: "muted" }, brief) : null),
    jsonBlock(fields)));
}

function callNode(c) {
  const args = c.arguments != null ? JSON.stringify(c.arguments, null, 2) : String(c.raw_arguments || "");
  return el("details", { class: "call" },
    el("summary", {}, "→ ", el("code", {}, String(c.name)), " ", el("span", { class: "muted" }, argsText(c))),
    el("pre", { class: "args" }, args));
}

function eventNode(e, calls) {
  switch (e.type) {
    case "session_started":
      return item("note", e, el("strong", {}, "task: "), String(e.task));
    case "model_call_started":
      return null;
    case "model_call_finished": {
      const u = usageOf(e);
      return item("thought", e,
        el("div", { class: "tag" }, el("code", {}, String(e.model)), e.role ? ` (${e.role})` : "",
           ` · ${count(u.input)} in / ${count(u.output)} out · ${money(u.cost)} · ` +
           `${Math.round(Number(e.latency_ms || 0))} ms`),
        e.text ? el("p", {}, String(e.text)) : null,
        ...(e.tool_calls || []).map(callNode));
    }
    case "auxiliary_model_call": {
      const u = usageOf(e);
      return item("note", e, `model call for ${e.purpose}: `, el("code", {}, String(e.model)),
        ` · ${count(u.input)} in / ${count(u.output)} out · ${money(u.cost)}`);
    }
    case "tool_call_started":
      calls.set(e.call.id, e.call); return null;
    case "tool_call_finished": {
      const call = calls.get(e.call_id);
      const out = (e.error ? "ERROR: " + e.error + "\n" : "") + (e.output || "");
      return item("tool " + (e.ok ? "ok" : "fail"), e, el("details", {},
        el("summary", {}, el("code", {}, String(e.name)), " ", call ? argsText(call) : "", " ",
           el("span", { class: "tag" }, `${e.ok ? "ok" : "failed"} · ${Math.round(Number(e.duration_ms || 0))} ms`)),
        el("pre", { class: "output" }, out || "(no output)")));
    }
    case "policy_decided": {
      const decision = ["allow", "ask", "deny"].includes(e.decision) ? e.decision : "other";
      const call = calls.get(e.call_id);
      return item("policy " + decision, e, `policy ${e.decision}`, call ? " " : "",
        call ? el("code", {}, String(call.name)) : null, e.rule ? ` by rule ${e.rule}` : "",
        e.reason ? `: ${e.reason}` : "");
    }
    case "approval_requested":
      return item("approval", e, "asks approval: ", el("code", {}, String(e.summary)));
    case "approval_given":
      return item("approval", e, e.approved ? "approved" : "denied", ` by ${e.by}`,
        e.reason ? `: ${e.reason}` : "", e.remember_rule ? ` (remembered ${e.remember_rule})` : "");
    case "file_edited":
      return item("edit", e, el("div", {}, "edited ", el("code", {}, String(e.path))),
                  renderDiff(String(e.diff || "")));
    case "verification_ran":
      return item("verify " + ((e.new_failures || []).length ? "fail" : "ok"), e,
        el("strong", {}, `verification (${e.phase}): `), `${e.passed} passed, ${e.failed} failed`,
        (e.commands || []).length ? el("div", { class: "muted" }, e.commands.join(" ; ")) : null,
        (e.new_failures || []).length ? el("div", {}, "new failures: " + e.new_failures.join(", ")) : null,
        e.summary ? el("p", {}, String(e.summary)) : null);
    case "context_built":
      return contextNode(e);
    case "model_routed":
      return item("note", e, "model ", el("code", {}, String(e.model)), ` for ${e.purpose} (${e.role}): ${e.reason}`);
    case "session_finished":
      return item("end", e, el("strong", {}, `session ${e.status}`), e.summary ? `: ${e.summary}` : "",
                  e.reason ? ` — ${e.reason}` : "");
    case "user_message":
      return item("user", e, el("strong", {}, "feedback: "), String(e.text));
    case "budget_warning": case "loop_detected": case "model_call_failed":
      return item("warn", e, String(e.type).replace(/_/g, " ") + ": " +
                  (e.detail || e.message || `${e.budget} ${e.used}/${e.limit}`));
    default:
      return generic(e);
  }
}

// The messages a step sent, built only when someone opens them (they repeat the history).
function requestNode(request) {
  const box = el("details", { class: "request" },
    el("summary", {}, `request: ${(request.messages || []).length} messages`));
  box.addEventListener("toggle", () => {
    if (!box.open || box.dataset.filled) return;
    box.dataset.filled = "1";
    for (const m of request.messages || [])
      box.append(el("div", { class: "msg" }, el("span", { class: "tag" }, String(m.role)),
                    el("pre", { class: "output" }, String(m.content || "") +
                       (m.tool_calls ? "\n" + JSON.stringify(m.tool_calls, null, 2) : ""))));
  });
  return box;
}

// Seconds from the session's first event to the step's first, as a timeline reads.
function elapsed(group, t0) {
  const ts = Number(group.events[0].ts);
  return Number.isFinite(ts) && Number.isFinite(t0) ? ` · +${Math.max(ts - t0, 0).toFixed(1)} s` : "";
}

function stepNode(group, requests, calls, t0) {
  const u = group.usage;
  const head = group.step == null
    ? el("div", { class: "step-head" }, el("strong", {}, "start"))
    : el("div", { class: "step-head" }, el("strong", {}, `step ${group.step}`), " ",
         group.model ? el("code", {}, group.model) : null,
         el("span", { class: "step-tokens" }, ` ${count(u.input)} in / ${count(u.output)} out`),
         " · ", el("span", { class: "step-cost" }, money(u.cost)),
         el("span", { class: "muted" }, elapsed(group, t0)));
  const list = el("ol", { class: "events" });
  for (const e of group.events) {
    let node;
    try { node = eventNode(e, calls); } catch (_err) { node = generic(e, `${e.type} (unreadable)`); }
    if (node) list.append(node);
  }
  const request = group.step == null ? null : requests.get(group.step);
  return el("section", { class: "step", "data-step": group.step == null ? "start" : String(group.step) },
            head, request ? requestNode(request) : null, list);
}

function totalsTable(doc, totals) {
  const summary = doc.summary || {};
  const rows = TOTALS.map(([key, label]) => {
    const mine = totals[key];
    const theirs = Number(summary[key] || 0);
    const same = key === "cost_usd" ? Math.abs(mine - theirs) < 5e-7 : mine === theirs;
    const show = key === "cost_usd" ? money : count;
    return el("tr", { class: same ? "" : "mismatch", "data-key": key },
      el("th", {}, label), el("td", { class: "computed" }, show(mine)),
      el("td", { class: "recorded" }, show(theirs)), el("td", {}, same ? "✓" : "≠ differs"));
  });
  return el("table", { class: "figures" },
    el("thead", {}, el("tr", {}, el("th", {}), el("th", {}, "from the steps"),
                       el("th", {}, "the trajectory's summary"), el("th", {}))),
    el("tbody", {}, ...rows));
}

function byModelTable(rows) {
  return el("table", { class: "figures" },
    el("caption", {}, "by model and role"),
    el("thead", {}, el("tr", {}, ...["model", "role", "calls", "tokens in / out", "cached", "cost"]
      .map((h) => el("th", {}, h)))),
    el("tbody", {}, ...rows.map((r) => el("tr", { class: "usage" },
      el("td", {}, el("code", {}, r.model)), el("td", {}, r.role), el("td", {}, String(r.calls)),
      el("td", {}, `${count(r.input)} / ${count(r.output)}`), el("td", {}, count(r.cached)),
      el("td", {}, money(r.cost))))));
}

function show(doc) {
  const session = doc.session || {};
  const summary = doc.summary || {};
  $("#v-task").textContent = visible(String(summary.task || "(no task)"));
  $("#v-meta").textContent = visible([session.id, session.model, session.status || summary.status,
                                      session.repo].filter(Boolean).join(" · "));
  $("#v-result").textContent = visible(String(summary.summary || ""));
  const totals = totalsOf(doc.events);
  $("#v-totals").replaceChildren(totalsTable(doc, totals));
  $("#v-by-model").replaceChildren(byModelTable(totals.byModel));
  const requests = new Map((doc.requests || []).map((r) => [r.step, r]));
  const calls = new Map();
  const t0 = doc.events.length ? Number(doc.events[0].ts) : NaN;
  $("#v-timeline").replaceChildren(...stepsOf(doc.events).map((g) => stepNode(g, requests, calls, t0)));
  $("#v-diff-source").textContent = doc.diff_source === "log" ? "(the edits from the log)" : "";
  $("#v-diff").replaceChildren(doc.diff ? renderDiff(String(doc.diff)) : el("p", { class: "muted" }, "no changes"));
  $("#v-doc").hidden = false;
  $("#v-error").textContent = "";
}

// --- loading ---------------------------------------------------------------------------------

function fail(message) {
  $("#v-doc").hidden = true;
  $("#v-error").textContent = visible(String(message));
}

async function openFile(file) {
  try { show(checkDoc(JSON.parse(await file.text()))); }
  catch (e) { fail(`${file.name}: ${e.message}`); }
}

async function openRecorded(id) {
  const token = readToken();
  if (!token) { fail("a token is needed to open a recorded session"); return; }
  try {
    const res = await fetch(`/sessions/${encodeURIComponent(id)}/trajectory`,
                            { headers: { Authorization: "Bearer " + token } });
    const data = await res.json().catch(() => ({}));
    if (res.status === 401) sessionStorage.removeItem("codeloop-token");
    if (!res.ok) throw new Error(typeof data.detail === "string" ? data.detail : `HTTP ${res.status}`);
    show(checkDoc(data));
  } catch (e) { fail(`session ${id}: ${e.message}`); }
}

function route() {
  const id = new URLSearchParams(location.hash.slice(1)).get("session");
  if (id) openRecorded(id);
}

function main() {
  const embedded = document.getElementById("trajectory");
  if (embedded) {  // a page `codeloop view` wrote: no server behind it
    $("#v-open").hidden = true;
    $("#v-home").removeAttribute("href");
    try { show(checkDoc(JSON.parse(embedded.textContent))); } catch (e) { fail(e.message); }
    return;
  }
  $("#v-file").addEventListener("change", (ev) => { if (ev.target.files[0]) openFile(ev.target.files[0]); });
  document.addEventListener("dragover", (ev) => { ev.preventDefault(); $("#v-open").classList.add("over"); });
  document.addEventListener("dragleave", () => $("#v-open").classList.remove("over"));
  document.addEventListener("drop", (ev) => {
    ev.preventDefault();
    $("#v-open").classList.remove("over");
    const file = ev.dataTransfer && ev.dataTransfer.files[0];
    if (file) openFile(file);
  });
  $("#v-session-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    location.hash = "session=" + encodeURIComponent(ev.target.session.value.trim());
  });
  window.addEventListener("hashchange", route);
  route();
}

main();
