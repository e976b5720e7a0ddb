// codeward control console: live view of one session over the Hook API.
// Authentication is the HttpOnly cookie set when the console URL was opened; nothing here
// handles the token. Everything from the server is inserted as text, never as HTML.
"use strict";

const view = {
  calls: new Map(),   // id -> call record
  asks: new Map(),    // request_id -> ask
  entries: [],
  servers: [],
  seq: 0,
};
const EVENT_TYPES = ["snapshot", "tool_call", "ask_received", "ask_resolved", "ask_expired", "ask_cancelled",
  "session_entry", "session_updated", "project_updated", "servers", "model_request", "model_response", "cli_call",
  "gui_tab"];
const MAX_ROWS = 300;

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null) continue;
    if (key === "class") node.className = value;
    else if (key.startsWith("data-")) node.setAttribute(key, value);
    else if (key === "title") node.title = value;
    else node[key] = value;
  }
  for (const child of children) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function clock(epoch) {
  if (!epoch) return "";
  return new Date(epoch * 1000).toLocaleTimeString([], {hour12: false});
}

function ms(value) {
  if (value === null || value === undefined) return "…";
  return value < 1000 ? `${value.toFixed(1)} ms` : `${(value / 1000).toFixed(2)} s`;
}

function bytes(value) {
  const units = ["B", "KiB", "MiB", "GiB"];
  let i = 0;
  while (value >= 1024 && i < units.length - 1) { value /= 1024; i++; }
  return `${value.toFixed(i ? 1 : 0)} ${units[i]}`;
}

function short(value, limit) {
  const text = typeof value === "string" ? value : JSON.stringify(value);
  return text.length > limit ? text.slice(0, limit) + "…" : text;
}

// -- calls ----------------------------------------------------------------------------------

function upsertCall(call) {
  const known = view.calls.get(call.id);
  view.calls.set(call.id, Object.assign(known || {}, call));
  while (view.calls.size > MAX_ROWS) view.calls.delete(view.calls.keys().next().value);
  renderCalls();
}

function renderCalls() {
  const body = document.querySelector("#calls tbody");
  const rows = [...view.calls.values()].reverse().map((call) => {
    const args = JSON.stringify(call.arguments || {}, null, 1);
    return el("tr", {"data-call-id": call.id, "data-status": call.status, "data-tool": call.name},
      el("td", {class: "dim"}, clock(call.started)),
      el("td", {class: "tool"}, call.name),
      el("td", {class: "dim"}, call.source || ""),
      el("td", {}, el("span", {class: `badge ${call.status}`, "data-testid": "call-status"}, call.status.replace("_", " "))),
      el("td", {class: "num", title: "time the tool ran; time spent waiting for approval is shown apart"},
        ms(call.duration_ms),
        call.approval_wait_ms ? el("div", {class: "dim", "data-testid": "approval-wait"},
                                   `+ ${ms(call.approval_wait_ms)} awaiting approval`) : null),
      el("td", {}, el("details", {}, el("summary", {}, short(call.arguments || {}, 60)), el("pre", {}, args))),
      el("td", {class: "preview"}, el("pre", {}, short(call.preview || "", 400))),
    );
  });
  body.replaceChildren(...rows);
  document.getElementById("call-count").textContent = String(view.calls.size);
}

// -- approvals ------------------------------------------------------------------------------

async function answer(requestId, approved, card) {
  for (const button of card.querySelectorAll("button")) button.disabled = true;
  const note = card.querySelector(".note");
  note.textContent = approved ? "approving…" : "denying…";
  try {
    const response = await fetch("/api/ask/respond", {
      method: "POST",
      headers: {"Content-Type": "application/json"},
      body: JSON.stringify({request_id: requestId, response: {approved}}),
    });
    if (!response.ok) {
      const body = await response.json().catch(() => ({}));
      note.textContent = body.message || `HTTP ${response.status}`;
    }
  } catch (error) {
    note.textContent = `could not reach the server: ${error}`;
    for (const button of card.querySelectorAll("button")) button.disabled = false;
  }
}

function previewBlock(preview) {
  // A diff with its lines coloured (+ added, - removed, @@ hunks), or the command a call would run.
  const lines = String(preview.text || "").split("\n").map((line) => {
    const kind = preview.kind !== "diff" ? "" :
      line.startsWith("+++") || line.startsWith("---") ? "file" :
      line.startsWith("@@") ? "hunk" : line.startsWith("+") ? "add" : line.startsWith("-") ? "del" : "";
    return el("span", {class: kind ? `line ${kind}` : "line"}, line + "\n");
  });
  return el("div", {class: "preview"},
    el("div", {class: "dim"}, preview.kind === "diff" ? "the change it would make" : "what it would run"),
    el("pre", {class: `preview ${preview.kind}`, "data-testid": "preview"}, ...lines));
}

function renderAsks() {
  const box = document.getElementById("approvals");
  const cards = [...view.asks.values()].map((ask) => {
    const data = ask.data || {};
    const title = data.tool || data.type || "question";
    const card = el("article", {class: "ask", "data-request-id": ask.request_id, "data-tool": data.tool || ""},
      el("h3", {}, title, data.server && data.server !== data.tool ? el("span", {class: "dim"}, ` via ${data.server}`) : null),
      data.description ? el("p", {class: "dim"}, data.description) : null,
      data.preview ? previewBlock(data.preview) : null,
      el("pre", {class: data.preview ? "args dim" : "args"}, JSON.stringify(data.arguments || data.args || data, null, 2)),
    );
    const approve = el("button", {class: "approve", type: "button", "data-testid": "approve"}, "Approve");
    const deny = el("button", {class: "deny", type: "button", "data-testid": "deny"}, "Deny");
    approve.addEventListener("click", () => answer(ask.request_id, true, card));
    deny.addEventListener("click", () => answer(ask.request_id, false, card));
    card.append(el("div", {class: "buttons"}, approve, deny, el("span", {class: "note dim"})));
    return card;
  });
  if (cards.length) box.replaceChildren(...cards);
  else box.replaceChildren(el("p", {class: "empty"}, "Nothing is waiting for you."));
  document.getElementById("approval-count").textContent = String(view.asks.size);
  document.title = view.asks.size ? `(${view.asks.size}) codeward control` : "codeward control";
}

// -- approvals waiting on other replicas (a deployment sharing state) --------------------------

async function answerElsewhere(approvalId, approved, card) {
  for (const button of card.querySelectorAll("button")) button.disabled = true;
  const note = card.querySelector(".note");
  note.textContent = approved ? "approving…" : "denying…";
  try {
    const response = await fetch(`/api/replicas/approvals/${encodeURIComponent(approvalId)}`, {
      method: "POST",
      headers: {"Content-Type": "application/json"},
      body: JSON.stringify({approved}),
    });
    const body = await response.json().catch(() => ({}));
    note.textContent = response.ok ? (approved ? "approved" : "denied") : (body.message || `HTTP ${response.status}`);
    refreshReplicas();
  } catch (error) {
    note.textContent = `could not reach the server: ${error}`;
    for (const button of card.querySelectorAll("button")) button.disabled = false;
  }
}

async function refreshReplicas() {
  const section = document.getElementById("replica-approvals-section");
  try {
    const response = await fetch("/api/replicas/approvals");
    const body = await response.json().catch(() => ({}));
    if (!response.ok) {
      section.hidden = false;
      document.getElementById("replica-approvals-note").textContent = body.message || `HTTP ${response.status}`;
      return;
    }
    if (!body.replica) { section.hidden = true; return; }
    section.hidden = false;
    document.getElementById("replica-approvals-note").textContent = `this replica: ${body.replica}`;
    const elsewhere = body.approvals.filter((a) => a.replica !== body.replica);
    const box = document.getElementById("replica-approvals");
    const cards = elsewhere.map((approval) => {
      const card = el("article", {class: "ask", "data-approval-id": approval.id, "data-tool": approval.tool || "",
                                  "data-replica": approval.replica || ""},
        el("h3", {}, approval.tool || "call", el("span", {class: "dim"},
          ` via ${approval.server || "?"} · waiting on replica ${approval.replica}` +
          (approval.user ? ` · called by ${approval.user}` : ""))),
        approval.description ? el("p", {class: "dim"}, approval.description) : null,
        el("pre", {class: "args"}, JSON.stringify(approval.arguments || {}, null, 2)));
      const approve = el("button", {class: "approve", type: "button", "data-testid": "approve"}, "Approve");
      const deny = el("button", {class: "deny", type: "button", "data-testid": "deny"}, "Deny");
      approve.addEventListener("click", () => answerElsewhere(approval.id, true, card));
      deny.addEventListener("click", () => answerElsewhere(approval.id, false, card));
      card.append(el("div", {class: "buttons"}, approve, deny, el("span", {class: "note dim"})));
      return card;
    });
    if (cards.length) box.replaceChildren(...cards);
    else box.replaceChildren(el("p", {class: "empty"}, "Nothing is waiting on another replica."));
    document.getElementById("replica-approval-count").textContent = String(elsewhere.length);
  } catch (error) { /* the connection indicator already says so */ }
}

// -- conversation ---------------------------------------------------------------------------

function entryNode(entry) {
  const role = entry.role || "?";
  const item = el("li", {class: `turn ${role}`}, el("span", {class: "role"}, role));
  if (entry.content) item.append(el("pre", {}, short(entry.content, 4000)));
  for (const call of entry.tool_calls || []) {
    item.append(el("div", {class: "call-ref"}, `→ ${call.name}(${short(call.arguments || "", 200)})`));
  }
  return item;
}

function renderConversation() {
  const list = document.getElementById("conversation");
  list.replaceChildren(...view.entries.slice(-200).map(entryNode));
  list.scrollTop = list.scrollHeight;
}

// -- servers and figures ---------------------------------------------------------------------

function renderServers() {
  const body = document.querySelector("#servers tbody");
  body.replaceChildren(...view.servers.map((s) => el("tr", {"data-alias": s.alias},
    el("td", {class: "tool"}, s.alias),
    el("td", {}, el("span", {class: `badge ${s.state}`, title: s.error || ""}, s.state)),
    el("td", {class: "num"}, s.tools),
    el("td", {class: "num"}, s.latency_ms === null ? "–" : ms(s.latency_ms)),
    el("td", {class: "dim"}, s.target),
  )));
  document.getElementById("no-servers").hidden = view.servers.length > 0;
}

async function refreshPerformance() {
  try {
    const response = await fetch("/api/performance");
    if (!response.ok) return;
    const perf = (await response.json()).performance;
    const figures = [
      ["tool calls", `${perf.tool_calls.total} (${perf.tool_calls.errors} failed)`],
      ["model requests", `${perf.model_requests.total} (${perf.model_requests.errors} failed)`],
      ["memory (RSS)", bytes(perf.memory.rss_bytes)],
      ["CPU time", `${perf.cpu_seconds.toFixed(2)} s`],
      ["threads", perf.threads],
      ["uptime", `${Math.round(perf.uptime_s)} s`],
    ];
    const model = perf.model_requests.by_name[0];
    if (model) figures.splice(2, 0, ["model latency p50 / p90", `${ms(model.p50_ms)} / ${ms(model.p90_ms)}`]);
    document.getElementById("figures").replaceChildren(...figures.flatMap(([k, v]) => [el("dt", {}, k), el("dd", {}, v)]));
    document.querySelector("#latency tbody").replaceChildren(...perf.tool_calls.by_name.map((t) => el("tr", {},
      el("td", {class: "tool"}, t.name), el("td", {class: "num"}, t.calls), el("td", {class: "num"}, t.errors),
      el("td", {class: "num"}, t.p50_ms.toFixed(1)), el("td", {class: "num"}, t.p90_ms.toFixed(1)),
      el("td", {class: "num"}, t.p99_ms.toFixed(1)))));
    renderDeployment(perf.deployment);
  } catch (error) { /* the connection indicator already says so */ }
}

// The whole deployment's call figures (every replica added up), when this process is one replica of several.
function renderDeployment(deployment) {
  const box = document.getElementById("deployment");
  if (!deployment) { box.hidden = true; return; }
  box.hidden = false;
  const replicas = Object.keys(deployment.replicas || {}).length;
  const calls = deployment.tool_calls;
  document.getElementById("deployment-note").textContent = deployment.warning ||
    `${replicas} replica${replicas === 1 ? "" : "s"}: ${calls.total} calls (${calls.errors} failed)`;
  document.querySelector("#deployment-latency tbody").replaceChildren(...calls.by_name.map((t) => el("tr", {"data-tool": t.name},
    el("td", {class: "tool"}, t.name), el("td", {class: "num"}, t.calls), el("td", {class: "num"}, t.errors),
    el("td", {class: "num"}, t.p50_ms.toFixed(1)), el("td", {class: "num"}, t.p90_ms.toFixed(1)),
    el("td", {class: "num"}, t.p99_ms.toFixed(1)))));
}

// -- the event stream -------------------------------------------------------------------------

function apply(event) {
  if (event.seq) view.seq = Math.max(view.seq, event.seq);
  switch (event.type) {
    case "snapshot":
      view.calls = new Map(event.calls.map((c) => [c.id, c]));
      view.asks = new Map(event.asks.map((a) => [a.request_id, a]));
      view.entries = (event.session && event.session.entries) || [];
      view.servers = event.servers || [];
      showIdentity(event.project || {}, event.session || {}, event.label);
      renderCalls(); renderAsks(); renderConversation(); renderServers();
      break;
    case "tool_call": upsertCall(event.call); break;
    case "ask_received": view.asks.set(event.request_id, {request_id: event.request_id, data: event.data}); renderAsks(); break;
    case "ask_resolved": case "ask_expired": case "ask_cancelled":
      view.asks.delete(event.request_id); renderAsks(); break;
    case "session_entry": view.entries.push(event.entry); renderConversation(); break;
    case "session_updated": view.entries = event.session.entries || []; renderConversation(); break;
    case "project_updated": showIdentity(event.project, {}, null); break;
    case "servers": view.servers = event.servers; renderServers(); break;
    case "model_response": refreshPerformance(); break;
    case "gui_tab": showTab(event.tab, event.focus); break;
  }
}

// A script's select_tab: the section comes into view, marked active; a focused ask is outlined.
function showTab(tab, focus) {
  const ids = {approvals: "approvals-section", calls: "calls-section", conversation: "conversation-section",
    performance: "performance-section", servers: "servers-section"};
  for (const [name, id] of Object.entries(ids)) {
    const node = document.getElementById(id);
    if (node) node.classList.toggle("active-tab", name === tab);
  }
  const target = document.getElementById(ids[tab]);
  if (target) target.scrollIntoView({block: "nearest"});
  document.body.dataset.tab = tab;
  for (const card of document.querySelectorAll("[data-request-id]")) {
    card.classList.toggle("focused", card.dataset.requestId === focus);
  }
}

function showIdentity(project, session, label) {
  const parts = [label || project.label, project.model && `model ${project.model}`, session.id && `session ${session.id}`,
    project.roots && project.roots.length ? `root ${project.roots[0]}` : null].filter(Boolean);
  if (parts.length) document.getElementById("identity").textContent = parts.join(" · ");
}

function setConnection(stateName, text) {
  const node = document.getElementById("connection");
  node.dataset.state = stateName;
  node.textContent = text;
}

function connect() {
  const source = new EventSource("/api/events/stream");
  source.onopen = () => setConnection("live", "live");
  source.onerror = () => setConnection(source.readyState === EventSource.CLOSED ? "closed" : "connecting",
    source.readyState === EventSource.CLOSED ? "disconnected — reload with the URL printed in the terminal" : "reconnecting…");
  for (const type of EVENT_TYPES) {
    source.addEventListener(type, (message) => apply(JSON.parse(message.data)));
  }
}

connect();
refreshPerformance();
setInterval(refreshPerformance, 2000);
refreshReplicas();
setInterval(refreshReplicas, 1000);
