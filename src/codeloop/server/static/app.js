"use strict";
// The codeloop web page: a session list and a live session view over the WebSocket
// (dom.js, loaded first, has the helpers it shares with the trajectory viewer).

const state = { token: null, sessionId: null, ws: null, lastSeq: 0, detailTimer: null,
                calls: new Map(), listTimer: null };

// --- API ----------------------------------------------------------------------------------

async function api(method, path, body) {
  const opts = { method, headers: { Authorization: "Bearer " + state.token } };
  if (body !== undefined) {
    opts.headers["Content-Type"] = "application/json";
    opts.body = JSON.stringify(body);
  }
  const res = await fetch(path, opts);
  if (res.status === 401) {
    sessionStorage.removeItem("codeloop-token");
    throw new Error("the token was refused; reload the page to enter another");
  }
  const data = await res.json().catch(() => ({}));
  if (!res.ok) throw new Error(typeof data.detail === "string" ? data.detail : JSON.stringify(data.detail));
  return data;
}

// --- session list -----------------------------------------------------------------------------

async function loadList() {
  const status = $("#status-filter").value;
  const rows = await api("GET", "/sessions" + (status ? "?status=" + status : ""));
  const body = $("#sessions tbody");
  body.replaceChildren(...rows.map((s) => el("tr", {
    class: s.id === state.sessionId ? "selected" : "", "data-id": s.id,
    onclick: () => { location.hash = "session=" + s.id; },
  }, el("td", {}, statusBadge(s.status, s.queued)), el("td", { class: "task" }, s.task),
     el("td", {}, s.steps), el("td", {}, "$" + s.cost_usd.toFixed(4)))));
}

function statusBadge(status, queued) {
  return el("span", { class: "status s-" + status }, queued ? "queued" : status.replace("_", " "));
}

// --- one session ----------------------------------------------------------------------------

function openSession(id) {
  if (state.ws) { state.ws.onclose = null; state.ws.close(); }
  state.sessionId = id;
  state.lastSeq = 0;
  state.calls = new Map();
  $("#timeline").replaceChildren();
  $("#review").hidden = true;
  $("#session-pane").hidden = !id;
  if (!id) return;
  refreshDetail();
  connect();
  loadList().catch(() => {});
}

function connect() {
  const id = state.sessionId;
  const proto = location.protocol === "https:" ? "wss" : "ws";
  const url = `${proto}://${location.host}/sessions/${id}/stream?after=${state.lastSeq}` +
              `&token=${encodeURIComponent(state.token)}`;
  const ws = new WebSocket(url);
  state.ws = ws;
  ws.onopen = () => { $("#live").textContent = "● live"; };
  ws.onmessage = (msg) => {
    const item = JSON.parse(msg.data);
    if (item.seq <= state.lastSeq) return;  // never render an event twice
    state.lastSeq = item.seq;
    render(item);
    scheduleDetail();
  };
  ws.onclose = (ev) => {
    $("#live").textContent = "reconnecting…";
    if (ev.code === 4401 || ev.code === 4404 || state.sessionId !== id) return;
    setTimeout(() => { if (state.sessionId === id) connect(); }, 1000);
  };
}

function scheduleDetail() {
  clearTimeout(state.detailTimer);
  state.detailTimer = setTimeout(refreshDetail, 150);
}

async function refreshDetail() {
  const id = state.sessionId;
  const d = await api("GET", "/sessions/" + id);
  if (id !== state.sessionId) return;
  loadList().catch(() => {});
  $("#s-task").textContent = visible(d.task);
  $("#s-id").textContent = d.id;
  $("#s-model").textContent = d.model;
  $("#s-viewer").href = "/view#session=" + encodeURIComponent(d.id);
  const badge = $("#s-status");
  badge.textContent = d.queued ? "queued" : d.status.replace("_", " ");
  badge.className = "status s-" + d.status;
  meter("steps", d.budgets.steps, d.budgets.max_steps, String(d.budgets.steps));
  meter("tokens", d.budgets.tokens, d.budgets.max_tokens, d.budgets.tokens.toLocaleString());
  meter("cost", d.budgets.cost_usd, d.budgets.max_cost_usd, "$" + d.budgets.cost_usd.toFixed(4));
  const ended = !["running", "paused", "waiting_approval"].includes(d.status);
  $("#btn-pause").disabled = !d.active;
  $("#btn-resume").disabled = d.active || d.status !== "paused";
  $("#btn-cancel").disabled = ended;
  renderUsage(d.by_model || []);
  renderRoleBudgets(d.role_budgets || []);
  renderApprovals(d.pending_approvals);
  renderPlan(d.plan);
  renderMemories(await api("GET", `/sessions/${id}/memories`).catch(() => []));
  if (!d.active && d.status !== "running") await showReview(d);
  else $("#review").hidden = true;
}

// Memories recalled into the session (task, plan step, recall tool) or stored by it.
function renderMemories(used) {
  const box = $("#memories");
  box.hidden = !used.length;
  box.querySelector("ul").replaceChildren(...used.map((u) => el("li", { class: "memory" },
    el("span", { class: "tag" }, u.how), " ", el("code", {}, u.id), " ",
    u.memory ? u.memory.text : el("em", {}, "(forgotten or expired)"),
    u.memory ? el("div", { class: "muted" }, u.memory.provenance) : null)));
}

function meter(name, used, limit, text) {
  const bar = $("#m-" + name);
  bar.max = limit || 1;
  bar.value = Math.min(used, limit || 1);
  bar.className = used >= 0.8 * limit ? "warn" : "";
  $("#t-" + name).textContent = `${text} / ${name === "cost" ? "$" + limit : limit.toLocaleString()}`;
}

function renderUsage(rows) {
  const table = $("#by-model");
  table.hidden = !rows.length;
  table.querySelector("tbody").replaceChildren(...rows.map((r) => el("tr", { class: "usage" },
    el("td", {}, el("code", {}, r.model)), el("td", {}, r.role), el("td", {}, String(r.calls)),
    el("td", {}, `${r.input_tokens.toLocaleString()} / ${r.output_tokens.toLocaleString()}`),
    el("td", {}, "$" + r.cost_usd.toFixed(4)))));
}

// Each role's (and the current step's) use of its share of the session's budgets.
function renderRoleBudgets(rows) {
  const table = $("#role-budgets");
  table.hidden = !rows.length;
  const of = (used, limit, fmt) => `${fmt(used)} / ${limit ? fmt(limit) : "∞"}`;
  const count = (n) => n.toLocaleString();
  const usd = (n) => "$" + n.toFixed(4);
  table.querySelector("tbody").replaceChildren(...rows.map((r) => el("tr",
    { class: r.spent ? "spent" : "" },
    el("td", {}, r.name), el("td", {}, of(r.turns, r.turn_limit, count)),
    el("td", {}, of(r.tokens, r.token_limit, count)), el("td", {}, of(r.cost_usd, r.cost_limit, usd)),
    el("td", {}, r.spent || ""))));
}

// A request still pending keeps its node, so a reason being typed survives each refresh.
function renderApprovals(pending) {
  const box = $("#approvals");
  const shown = new Map([...box.children].map((node) => [node.dataset.key, node]));
  box.replaceChildren(...pending.map((p) => shown.get(approvalKey(p)) || approvalNode(p)));
}

// Call ids repeat across sessions (scripted models), so the key names the session too.
const approvalKey = (p) => `${state.sessionId}/${p.call_id}`;

function approvalNode(p) {
  const reason = el("input", { placeholder: "reason (the agent sees it)", "aria-label": "reason" });
  const act = (path, body) => async () => {
    try { await api("POST", `/sessions/${state.sessionId}/approvals/${p.call_id}/${path}`, body); }
    catch (e) { alert(e.message); }
    refreshDetail();
  };
  const plan = p.kind === "plan" && p.plan;
  return el("div", { class: "approval" + (plan ? " plan" : ""), "data-call": p.call_id,
                          "data-key": approvalKey(p) },
    el("strong", {}, plan ? "Plan needs approval: " : "Approval needed: "),
    plan ? plan.summary : el("code", {}, p.summary),
    plan ? planSteps(plan) : null,
    el("div", { class: "actions" },
      el("button", { class: "primary approve", onclick: act("approve", { reason: "" }) }, "Approve"),
      el("button", { class: "remember",
                     title: plan ? "approve, and stop asking about plans in this session" : p.remember_rule,
                     onclick: act("approve?remember=true", { reason: "" }) },
         plan ? "Approve & stop asking" : "Approve & remember"),
      reason,
      el("button", { class: "danger deny", onclick: () => act("deny", { reason: reason.value })() },
         "Deny")));
}

// A plan's steps as a list: status mark, id, title, what it waits for, detail and note.
function planSteps(plan) {
  return el("ol", { class: "plan-steps" }, ...plan.steps.map((st) => el("li",
    { class: "step st-" + st.status, "data-step": st.id },
    el("span", { class: "mark" }, STEP_MARKS[st.status] || ""), " ",
    el("code", {}, st.id), " ", st.title,
    st.depends_on.length ? el("span", { class: "muted" }, " after " + st.depends_on.join(", ")) : null,
    st.detail ? el("div", { class: "muted" }, st.detail) : null,
    st.files && st.files.length ? el("div", { class: "muted" }, "files: " + st.files.join(", ")) : null,
    st.done_when ? el("div", { class: "muted" }, "done when: " + st.done_when) : null,
    st.note ? el("div", { class: "note" }, st.note) : null)));
}

const STEP_MARKS = { pending: "○", in_progress: "◐", done: "●", failed: "✗", skipped: "⊘" };

function renderPlan(plan) {
  const box = $("#plan");
  box.hidden = !plan;
  if (!plan) return;
  $("#plan-summary").textContent = visible(plan.summary) +
    (plan.revision ? ` (revision ${plan.revision})` : "");
  const bar = $("#m-plan");
  bar.max = plan.total || 1;
  bar.value = plan.done;
  $("#t-plan").textContent = `${plan.done} / ${plan.total} steps`;
  $("#plan-steps").replaceChildren(planSteps(plan));
}

async function showReview(d) {
  const diff = await api("GET", `/sessions/${d.id}/diff`);
  $("#review").hidden = false;
  $("#review-summary").textContent = visible(d.summary || d.finish_reason || d.status) +
    (diff.files.length ? ` — ${diff.files.length} file(s) changed` : " — no changes");
  $("#review-diff").replaceChildren(renderDiff(diff.diff));
  $("#btn-apply").disabled = $("#btn-discard").disabled = !diff.files.length;
}

// --- timeline ---------------------------------------------------------------------------------

function entry(kind, seq, ...children) {
  return el("li", { class: "ev " + kind, "data-seq": seq }, ...children);
}

function render(item) {
  const e = item.event;
  const tl = $("#timeline");
  let node = null;
  switch (item.type) {
    case "session_started":
      node = entry("note", item.seq, el("strong", {}, "Task: "), e.task); break;
    case "model_call_finished":
      node = entry("thought", item.seq, el("span", { class: "tag" }, "step " + e.step),
        e.text ? el("p", {}, e.text) : null,
        ...e.tool_calls.map((c) => el("div", { class: "call" }, "→ ", el("code", {}, c.name), " ",
                                      el("span", { class: "muted" }, argsText(c)))));
      break;
    case "tool_call_started":
      state.calls.set(e.call.id, e.call); break;
    case "tool_call_finished": {
      const call = state.calls.get(e.call_id);
      const out = (e.error ? "ERROR: " + e.error + "\n" : "") + (e.output || "");
      node = entry("tool " + (e.ok ? "ok" : "fail"), item.seq,
        el("details", {}, el("summary", {}, el("code", {}, e.name), " ",
                              call ? argsText(call) : "", " ", el("span", { class: "tag" }, e.ok ? "ok" : "failed")),
           el("pre", { class: "output" }, out || "(no output)")));
      break;
    }
    case "file_edited":
      node = entry("edit", item.seq, el("div", {}, "edited ", el("code", {}, e.path)), renderDiff(e.diff)); break;
    case "verification_ran":
      node = entry("verify " + (e.new_failures.length ? "fail" : "ok"), item.seq,
        el("strong", {}, `verification (${e.phase}): `), `${e.passed} passed, ${e.failed} failed`,
        e.new_failures.length ? el("div", {}, "new failures: " + e.new_failures.join(", ")) : null,
        e.summary ? el("p", {}, e.summary) : null);
      break;
    case "plan_proposed":
      node = entry("plan", item.seq, el("strong", {}, "plan proposed"),
        e.needs_approval ? " (needs approval): " : ": ", e.summary,
        planSteps({ steps: e.steps })); break;
    case "plan_revised":
      node = entry("plan", item.seq, el("strong", {}, `plan revision ${e.revision}`),
        e.needs_approval ? " (needs approval): " : ": ", e.reason,
        el("pre", { class: "output" }, e.diff.join("\n")), planSteps({ steps: e.steps })); break;
    case "step_checked":
      node = entry("verify " + (e.ok ? "ok" : "fail"), item.seq, el("strong", {}, "check "),
        el("code", {}, e.step_id), " ", e.check, e.ok ? ": passed" : ": failed",
        e.detail && !e.ok ? el("details", {}, el("summary", {}, "output"),
                               el("pre", { class: "output" }, e.detail)) : null); break;
    case "review_requested":
      node = entry("plan", item.seq, el("strong", {}, `review ${e.round} requested: `), e.summary); break;
    case "review_given":
      node = entry(e.verdict === "approve" ? "verify ok" : "warn", item.seq,
        el("strong", {}, "reviewer " + e.verdict.replace("_", " ")), e.reasons ? ": " + e.reasons : ""); break;
    case "explorer_started":
      node = entry("note", item.seq, el("code", {}, e.subagent), " explores: " + e.question); break;
    case "explorer_finished":
      node = entry(e.ok ? "note" : "warn", item.seq, el("code", {}, e.subagent),
        e.ok ? ` answered (${e.turns} turns, ${(e.input_tokens + e.output_tokens).toLocaleString()} tokens, $${e.cost_usd.toFixed(4)})`
             : " did not answer: " + e.error,
        e.summary ? el("p", {}, e.summary) : null); break;
    case "plan_updated":
      node = entry("plan", item.seq, el("strong", {}, e.by === "loop" ? "plan progress (loop): " : "plan progress: "),
        e.changes.map((c) => c.id + (c.status ? " → " + c.status.replace("_", " ") : "") +
                              (c.note ? " (" + c.note + ")" : "")).join(", ")); break;
    case "approval_requested":
      node = entry("approval", item.seq, "asks approval: ", el("code", {}, e.summary)); break;
    case "approval_given":
      node = entry("approval", item.seq, e.approved ? "approved" : "denied", " by " + e.by,
        e.reason ? ": " + e.reason : "", e.remember_rule ? ` (remembered ${e.remember_rule})` : ""); break;
    case "policy_decided":
      if (e.decision === "deny") node = entry("fail", item.seq, "policy denied: " + e.reason); break;
    case "egress_decided":
      if (!e.allowed) node = entry("warn", item.seq, "network refused: ",
        el("code", {}, `${e.method} ${e.host}:${e.port}`), " " + e.reason); break;
    case "network_host_allowed":
      node = entry("note", item.seq, "network: ", el("code", {}, e.entry),
                   " allowed for the rest of the session"); break;
    case "user_message":
      node = entry("user", item.seq, el("strong", {}, "feedback: "), e.text); break;
    case "budget_warning": case "loop_detected": case "model_call_failed":
      node = entry("warn", item.seq, item.type.replace(/_/g, " ") + ": " +
                   (e.detail || e.message || `${e.budget} ${e.used}/${e.limit}`)); break;
    case "session_finished":
      node = entry("end", item.seq, el("strong", {}, "session " + e.status), e.summary ? ": " + e.summary : "",
                   e.reason ? " — " + e.reason : ""); break;
    case "model_routed":
      node = entry("note", item.seq, "model ", el("code", {}, e.model),
                   ` for ${e.purpose} (${e.role}): ${e.reason}`); break;
    case "model_fell_back":
      node = entry("warn", item.seq, "fell back ", el("code", {}, e.from_model), " → ",
                   el("code", {}, e.to_model), ` (${e.cause}): ${e.error}`); break;
    case "settings_overridden":
      node = entry("note", item.seq, "settings changed from here on: " + JSON.stringify(e.changes)); break;
    case "memory_recalled":
      node = entry("note", item.seq, `recalled ${e.ids.length} memories (${e.trigger}): `,
                   el("code", {}, e.ids.join(" "))); break;
    case "memory_stored":
      node = entry("note", item.seq, "remembered ", el("code", {}, e.id), ` (${e.kind}, ${e.scope})`); break;
    case "worker_lost":
      node = entry("warn", item.seq, `worker lost (placement ${e.attempt}, ` +
                   `${e.gave_up ? "paused" : "placed again"}): ${e.error}`); break;
    case "session_paused": case "session_resumed": case "review_decided":
      node = entry("note", item.seq, item.type.replace(/_/g, " ") + (e.reason ? ": " + e.reason : "") +
                   (e.action ? ": " + e.action : "")); break;
    default: break;
  }
  if (node) tl.append(node);
}

// --- wiring -----------------------------------------------------------------------------------

async function act(path, body) {
  try {
    const res = await api("POST", `/sessions/${state.sessionId}/${path}`, body);
    refreshDetail();
    loadList();
    return res;
  } catch (e) { alert(e.message); return null; }
}

function route() {
  const params = new URLSearchParams(location.hash.slice(1));
  const id = params.get("session");
  if (id !== state.sessionId) openSession(id);
}

async function main() {
  state.token = readToken();
  if (!state.token) { document.body.textContent = "A token is needed to use this page."; return; }
  $("#logout").onclick = () => { sessionStorage.removeItem("codeloop-token"); location.reload(); };
  $("#status-filter").onchange = loadList;
  $("#btn-pause").onclick = () => act("pause");
  $("#btn-resume").onclick = () => act("resume");
  $("#btn-cancel").onclick = () => act("cancel");
  $("#btn-apply").onclick = async () => {
    const r = await act("apply");
    if (r) $("#review-result").textContent = `applied: ${r.applied.join(", ") || "nothing"}` +
      (r.conflicts.length ? `; conflicts: ${r.conflicts.join(", ")}` : "");
  };
  $("#btn-discard").onclick = async () => {
    if (confirm("Throw the session's changes away?") && await act("discard"))
      $("#review-result").textContent = "discarded";
  };
  $("#reject-form").onsubmit = async (ev) => {
    ev.preventDefault();
    const form = ev.target;
    if (await act("reject", { feedback: form.feedback.value })) form.reset();
  };
  $("#create-form").onsubmit = async (ev) => {
    ev.preventDefault();
    const f = ev.target;
    const body = { task: f.task.value, repo: f.repo.value, model: f.model.value || null,
                   approval_mode: f.approval_mode.value || null, budgets: {},
                   plan_approval: f.plan_approval.value ? f.plan_approval.value === "ask" : null };
    if (f.max_steps.value) body.budgets.max_steps = Number(f.max_steps.value);
    try {
      const s = await api("POST", "/sessions", body);
      $("#create-error").textContent = "";
      location.hash = "session=" + s.id;
    } catch (e) { $("#create-error").textContent = e.message; }
  };
  try {
    $("#whoami").textContent = "signed in as " + (await api("GET", "/whoami")).user;
  } catch (e) { $("#whoami").textContent = e.message; return; }
  window.addEventListener("hashchange", route);
  route();
  await loadList();
  state.listTimer = setInterval(() => loadList().catch(() => {}), 3000);
}

main();
