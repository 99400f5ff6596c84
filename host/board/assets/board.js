// avenor board: the page. Plain JavaScript, no dependencies, no build step.
// It reads the board's API (/api/…) with the token from the URL it was
// opened with, and shows every runtime behind the control sockets.
"use strict";

const TOKEN_KEY = "avenor-board-token";
const POLL_MS = 2000;          // socket and runtime list
const USAGE_MS = 10000;        // tokens and cost
const MAX_BLOCKS = 2000;       // transcript blocks kept in the DOM

const state = {
  token: "",
  config: { mutations_allowed: false, auth_required: true, stall_after_ms: 300000 },
  rows: new Map(),      // key -> {socket, type, rt}
  seen: new Map(),      // key -> {seq, at}: when latest_seq last moved
  usage: new Map(),     // key -> usage entry
  order: [],            // keys in display order
  selected: "",         // key of the highlighted row
  view: null,           // the open runtime view
};

const $ = (id) => document.getElementById(id);
const keyOf = (socket, id) => socket + "\u0000" + id;

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

// ---- API ----

function takeToken() {
  const u = new URL(location.href);
  const t = u.searchParams.get("token");
  if (t) {
    sessionStorage.setItem(TOKEN_KEY, t);
    // The token leaves the address bar (and the history) at once.
    u.searchParams.delete("token");
    history.replaceState(null, "", u.pathname + u.search + u.hash);
  }
  state.token = sessionStorage.getItem(TOKEN_KEY) || "";
}

async function api(path, opts = {}) {
  const headers = Object.assign({}, opts.headers || {});
  if (state.token) headers["Authorization"] = "Bearer " + state.token;
  if (opts.body !== undefined) headers["Content-Type"] = "application/json";
  const resp = await fetch(path, {
    method: opts.method || "GET", headers, cache: "no-store",
    body: opts.body !== undefined ? JSON.stringify(opts.body) : undefined,
  });
  const text = await resp.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch (_) { /* not JSON */ }
  if (!resp.ok) {
    const msg = (data && data.error) || text || resp.statusText;
    const err = new Error(msg);
    err.status = resp.status;
    throw err;
  }
  return data;
}

const post = (path, body) => api(path, { method: "POST", body });

// ---- the list ----

function fmtAge(ms) {
  if (!ms) return "";
  let s = Math.max(0, Math.round((Date.now() - ms) / 1000));
  if (s < 60) return s + "s";
  let m = Math.floor(s / 60);
  if (m < 60) return m + "m";
  const h = Math.floor(m / 60);
  return h + "h" + String(m % 60).padStart(2, "0");
}

function fmtTokens(u) {
  if (!u) return "";
  const t = u.total_tokens || ((u.input_tokens || 0) + (u.output_tokens || 0));
  if (!t) return "";
  return t >= 10000 ? (t / 1000).toFixed(1) + "k" : String(t);
}

function fmtCost(c) {
  return typeof c === "number" ? "$" + c.toFixed(c < 1 ? 4 : 2) : "";
}

// waitingFor says why a runtime needs its person: a permission, or no
// progress for the board's stall time while it runs.
function waitingFor(key, rt) {
  if (rt.pending_permission) return "waiting for you: permission";
  if (rt.status !== "running") return "";
  // A rate limit's wait (docs/unattended.md#rate-limits): it resumes on its own.
  if (rt.waiting_reason === "rate_limit") return "rate limited: resumes at " + fmtReset(rt.rate_limited_until);
  // The turn watchdog warned (docs/unattended.md): the turn goes on, hung.
  if (rt.watchdog && rt.watchdog.action === "warn") return "watchdog: " + watchdogWhat(rt.watchdog);
  const s = state.seen.get(key);
  if (s && Date.now() - s.at >= state.config.stall_after_ms) {
    return "no progress for " + fmtAge(s.at);
  }
  return "";
}

// fmtReset is a rate limit's reset as a local time of day.
function fmtReset(iso) {
  const d = new Date(iso);
  return isNaN(d) ? (iso || "unknown") : d.toLocaleTimeString();
}

// watchdogWhat says what a watchdog firing found hung.
function watchdogWhat(w) {
  const idle = Math.round((w.idle_for_ms || 0) / 1000) + "s";
  if (w.kind === "tool") return "tool " + (w.tool || "") + " made no progress for " + idle;
  return "no event for " + idle;
}

function noteProgress(key, rt) {
  const seq = rt.latest_seq || 0;
  const s = state.seen.get(key);
  if (!s || s.seq !== seq) {
    const at = rt.updated_at && !s ? rt.updated_at : Date.now();
    state.seen.set(key, { seq, at });
  }
}

// oneShotRow turns a one-shot run's status snapshot into a runtime row.
function oneShotRow(st) {
  const ended = st.turn_state === "ended";
  return {
    runtime_id: st.run_id || "run", label: st.run_label || st.run_id || "one-shot run",
    status: ended ? "ended" : (st.turn_state === "idle" ? "idle" : "running"),
    phase: st.phase, phase_label: st.phase_label, started_at: st.started_at, updated_at: st.updated_at,
    pending_permission: st.pending_permission, permission: st.permission, latest_seq: st.latest_seq,
    backend: st.backend || "", model: st.model || "", oneShot: true, watchdog: st.watchdog,
    waiting_reason: st.waiting_reason, rate_limited_until: st.rate_limited_until,
  };
}

async function refresh() {
  let sockets;
  try {
    sockets = await api("/api/sockets");
    setConn(true);
  } catch (e) {
    setConn(false, e.message, e.status);
    return;
  }
  const next = new Map();
  const order = [];
  const socketHeads = [];
  await Promise.all(sockets.map(async (s) => {
    let rts = [];
    if (s.type === "stable") {
      try { rts = await api("/api/list?socket=" + encodeURIComponent(s.path)); } catch (_) { rts = []; }
    } else if (s.status) {
      rts = [oneShotRow(s.status)];
    }
    s.rts = rts;
  }));
  for (const s of sockets) {
    socketHeads.push(s);
    for (const rt of s.rts) {
      const key = keyOf(s.path, rt.runtime_id);
      next.set(key, { socket: s.path, type: s.type, rt });
      noteProgress(key, rt);
      order.push(key);
    }
  }
  state.rows = next;
  state.order = order;
  renderList(socketHeads);
  if (state.view) updateViewFromRow();
}

async function refreshUsage() {
  try {
    const u = await api("/api/usage");
    state.usage.clear();
    for (const e of u.runtimes) state.usage.set(keyOf(e.socket, e.runtime_id || "run"), e);
    const t = u.total;
    $("summary").dataset.tokens = t.total_tokens;
    renderSummary(t);
  } catch (_) { /* the list shows the connection state */ }
}

let lastTotal = null;
function renderSummary(total) {
  if (total) lastTotal = total;
  let running = 0, waiting = 0;
  for (const [key, r] of state.rows) {
    if (r.rt.status === "running") running++;
    if (waitingFor(key, r.rt)) waiting++;
  }
  let s = state.rows.size + " runtimes · " + running + " running";
  if (waiting) s += " · " + waiting + " waiting for you";
  if (lastTotal && lastTotal.total_tokens) s += " · " + fmtTokens(lastTotal) + " tokens";
  if (lastTotal && typeof lastTotal.cost_usd === "number") s += " · " + fmtCost(lastTotal.cost_usd);
  $("summary").textContent = s;
}

// setConn shows whether the board answers. A 401 is not an unreachable
// board: the page lacks the token (or has a stale one), and says so.
function setConn(ok, why, status) {
  const c = $("conn");
  const noToken = status === 401;
  c.textContent = ok ? "live" : (noToken ? "token required" : "board unreachable");
  c.className = "badge " + (ok ? "on" : "off");
  c.title = ok ? "" : (why || "");
  if (noToken) $("summary").textContent = "token required: open the URL avenor board printed (it ends in ?token=…)";
}

// outcome tells a run that ended well from one that did not: "ok" for a
// turn that ended with end_turn (exit 0), "failed" for any other end
// (error, cancelled, timeout, a non-zero exit), "" while it runs or
// before its first end.
function outcome(rt) {
  if (rt.status === "running") return "";
  const code = rt.exit_code;
  const reason = rt.stop_reason || "";
  if ((typeof code === "number" && code !== 0) || (reason && reason !== "end_turn")) return "failed";
  if (reason === "end_turn" || code === 0) return "ok";
  return "";
}

const rowEls = new Map(); // key -> tr
const headEls = new Map(); // socket -> tr

function matchesFilter(r) {
  const f = $("filter").value.trim().toLowerCase();
  if (!f) return true;
  const rt = r.rt;
  return [rt.label, rt.runtime_id, rt.backend, rt.model, rt.status, rt.phase, r.socket]
    .some((v) => (v || "").toLowerCase().includes(f));
}

function cell(tr, i, text, cls) {
  const td = tr.children[i];
  if (td.textContent !== text) td.textContent = text;
  if (cls !== undefined && td.className !== cls) td.className = cls;
}

function renderList(socketHeads) {
  const tbody = document.querySelector("#runtimes tbody");
  $("empty").hidden = state.rows.size > 0 || socketHeads.length > 0;
  const want = [];
  for (const s of socketHeads) {
    let head = headEls.get(s.path);
    if (!head) {
      head = el("tr", "sock");
      head.appendChild(el("td")).colSpan = 7;
      headEls.set(s.path, head);
    }
    const pid = s.pid ? " · pid " + s.pid : "";
    head.firstChild.textContent = s.path.split("/").pop() + " · " + s.type + pid;
    head.firstChild.title = s.path;
    want.push(head);
    for (const rt of s.rts) {
      const key = keyOf(s.path, rt.runtime_id);
      const r = state.rows.get(key);
      if (!matchesFilter(r)) continue;
      let tr = rowEls.get(key);
      if (!tr) {
        tr = el("tr", "rt");
        tr.tabIndex = 0;
        tr.dataset.key = key;
        tr.dataset.socket = s.path;
        tr.dataset.runtime = rt.runtime_id;
        for (let i = 0; i < 7; i++) tr.appendChild(el("td"));
        const name = tr.children[0];
        name.append(el("span", "label"), el("span", "id"), el("span", "waiting"));
        tr.addEventListener("click", () => { select(key); openView(key); });
        rowEls.set(key, tr);
      }
      fillRow(tr, key, r);
      want.push(tr);
    }
  }
  // Reorder only when needed: a stable DOM keeps focus and selection.
  let i = 0;
  for (const node of want) {
    if (tbody.children[i] !== node) tbody.insertBefore(node, tbody.children[i] || null);
    i++;
  }
  while (tbody.children.length > want.length) tbody.lastChild.remove();
  for (const [key, tr] of rowEls) if (!state.rows.has(key)) rowEls.delete(key);
  for (const [p] of headEls) if (!socketHeads.some((s) => s.path === p)) headEls.delete(p);
  if (!state.selected && state.order.length) select(state.order[0], false);
  renderSummary();
}

function fillRow(tr, key, r) {
  const rt = r.rt;
  const name = tr.children[0];
  const label = rt.label || rt.runtime_id;
  if (name.children[0].textContent !== label) name.children[0].textContent = label;
  const id = label === rt.runtime_id ? "" : rt.runtime_id;
  if (name.children[1].textContent !== id) name.children[1].textContent = id;
  const w = waitingFor(key, rt);
  name.children[2].textContent = w;
  name.children[2].hidden = !w;
  tr.dataset.waiting = w ? "1" : "";
  // The wire's word for a runtime waiting for a follow-up is idle, and
  // people read the same word here and in avenor control list.
  let status = rt.status || "";
  if (rt.stop_reason && rt.status !== "running") status += " (" + rt.stop_reason + ")";
  // Colour and a marker both: the marker reads without colour.
  const out = outcome(rt);
  if (out === "failed") status = "\u2717 " + status;
  if (out === "ok") status = "\u2713 " + status;
  cell(tr, 1, status, "st-" + (rt.status || "") + (out ? " st-" + out : ""));
  tr.classList.toggle("failed", out === "failed");
  tr.dataset.outcome = out;
  cell(tr, 2, [rt.phase, rt.phase_label].filter(Boolean).join(": "), "phase");
  tr.children[2].title = tr.children[2].textContent;
  cell(tr, 3, [rt.backend, rt.model].filter(Boolean).join(" / "));
  cell(tr, 4, fmtAge(rt.started_at));
  const u = state.usage.get(key);
  cell(tr, 5, fmtTokens((u && u.usage) || rt.usage), "num");
  cell(tr, 6, fmtCost(u && u.cost_usd), "num");
  tr.classList.toggle("selected", key === state.selected);
}

function select(key, focus = true) {
  state.selected = key;
  for (const [k, tr] of rowEls) tr.classList.toggle("selected", k === key);
  const tr = rowEls.get(key);
  if (tr && focus) { tr.focus(); tr.scrollIntoView({ block: "nearest" }); }
}

function visibleKeys() {
  return [...document.querySelectorAll("#runtimes tr.rt")].map((tr) => tr.dataset.key);
}

function move(delta) {
  const keys = visibleKeys();
  if (!keys.length) return;
  let i = keys.indexOf(state.selected);
  i = i < 0 ? 0 : Math.min(keys.length - 1, Math.max(0, i + delta));
  select(keys[i]);
}

function nextWaiting() {
  const keys = visibleKeys();
  const start = keys.indexOf(state.selected);
  for (let n = 1; n <= keys.length; n++) {
    const k = keys[(start + n) % keys.length];
    if (rowEls.get(k).dataset.waiting) { select(k); openView(k); return; }
  }
}

// ---- the runtime view ----

function openView(key) {
  const r = state.rows.get(key);
  if (!r) return;
  closeView(false);
  const v = {
    key, socket: r.socket, type: r.type, runtimeID: r.rt.oneShot ? "" : r.rt.runtime_id,
    es: null, lastSeq: 0, msg: null, thought: null, tools: new Map(), perm: null, blocks: 0, turns: 0,
  };
  state.view = v;
  $("view-pane").hidden = false;
  document.querySelector("main").classList.add("viewing");
  $("view-pane").dataset.key = key;
  $("transcript").replaceChildren();
  $("plan").hidden = true;
  $("permission").hidden = true;
  $("question").hidden = true;
  const mut = state.config.mutations_allowed;
  $("cancel").hidden = !mut || r.rt.status !== "running";
  $("prompt-form").hidden = !mut;
  resetCancel();
  updateViewFromRow();
  connectStream(v);
}

function closeView(refocus = true) {
  const v = state.view;
  if (!v) return;
  if (v.es) v.es.close();
  state.view = null;
  $("view-pane").hidden = true;
  document.querySelector("main").classList.remove("viewing");
  if (refocus && state.selected) select(state.selected);
}

function updateViewFromRow() {
  const v = state.view;
  const r = state.rows.get(v.key);
  if (!r) {
    $("view-meta").textContent = "gone: the socket no longer lists this runtime";
    return;
  }
  const rt = r.rt;
  $("view-title").textContent = rt.label || rt.runtime_id;
  // Cancel ends a turn in flight: an ended or parked runtime has none.
  const cancellable = state.config.mutations_allowed && rt.status === "running";
  if ($("cancel").hidden === cancellable) { $("cancel").hidden = !cancellable; resetCancel(); }
  // A runtime a spend limit paused parks idle: the button raises the limit and resumes it.
  const paused = rt.spend && rt.spend.reached;
  $("raise-budget").hidden = !(state.config.mutations_allowed && paused && rt.status === "idle");
  const u = state.usage.get(v.key);
  const bits = [rt.runtime_id, rt.status, rt.phase, [rt.backend, rt.model].filter(Boolean).join(" / "),
    fmtAge(rt.started_at) && "age " + fmtAge(rt.started_at),
    fmtTokens((u && u.usage) || rt.usage) && fmtTokens((u && u.usage) || rt.usage) + " tokens",
    fmtCost(u && u.cost_usd), paused && spendMarker(rt.spend)];
  $("view-meta").textContent = bits.filter(Boolean).join(" · ");
  // A request older than the replayed history still gets its card.
  if (rt.pending_permission && rt.permission && !v.perm) showPermission(v, rt.permission);
  if (!rt.pending_permission && v.perm && v.perm.fromRow) hidePermission(v);
}

function connectStream(v) {
  let url = "/api/events?socket=" + encodeURIComponent(v.socket) + "&replay=1";
  if (v.runtimeID) url += "&runtime_id=" + encodeURIComponent(v.runtimeID);
  if (state.token) url += "&token=" + encodeURIComponent(state.token);
  const es = new EventSource(url);
  v.es = es;
  es.addEventListener("event", (m) => {
    if (state.view !== v) return;
    let ev;
    try { ev = JSON.parse(m.data); } catch (_) { return; }
    if (ev.seq && ev.seq <= v.lastSeq) return; // a reconnect's replay overlap
    if (ev.seq) v.lastSeq = ev.seq;
    onEvent(v, ev);
  });
  es.addEventListener("end", () => { es.close(); note(v, "the control socket closed"); });
  es.onerror = () => { if (state.view === v) $("conn").title = "event stream reconnecting"; };
}

function addBlock(v, node) {
  const t = $("transcript");
  t.appendChild(node);
  if (++v.blocks > MAX_BLOCKS) { t.firstChild.remove(); v.blocks--; }
  const pane = $("view-pane");
  if (pane.scrollHeight - pane.scrollTop - pane.clientHeight < 200) pane.scrollTop = pane.scrollHeight;
}

function note(v, text, cls = "note") {
  v.msg = null; v.thought = null;
  addBlock(v, el("div", cls, text));
}

function textOf(ev) {
  const c = ev.content;
  if (typeof c === "string") return c;
  if (c && typeof c.text === "string") return c.text;
  return typeof ev.text === "string" ? ev.text : "";
}

function onEvent(v, ev) {
  switch (ev.event) {
    case "agent.message_chunk": {
      const text = textOf(ev);
      if (!v.msg) { v.msg = el("div", "msg"); v.msg.appendChild(document.createTextNode("")); addBlock(v, v.msg); }
      v.msg.firstChild.appendData(text);
      v.thought = null;
      break;
    }
    case "agent.thought_chunk": {
      if (!v.thought) { v.thought = el("div", "thought"); v.thought.appendChild(document.createTextNode("")); addBlock(v, v.thought); }
      v.thought.firstChild.appendData(textOf(ev));
      v.msg = null;
      break;
    }
    case "tool.call": {
      v.msg = null; v.thought = null;
      const d = el("div", "tool " + (ev.status || ""));
      d.dataset.toolId = ev.toolCallId || "";
      d.append(el("span", "title", ev.title || ev.kind || "tool"), el("span", "status", ev.status || ""));
      addBlock(v, d);
      if (ev.toolCallId) v.tools.set(ev.toolCallId, d);
      break;
    }
    case "tool.call_update": {
      const d = v.tools.get(ev.toolCallId);
      if (!d) break;
      if (ev.status) { d.className = "tool " + ev.status; d.lastChild.textContent = ev.status; }
      if (ev.title) d.firstChild.textContent = ev.title;
      break;
    }
    case "session.plan": {
      const ol = document.querySelector("#plan ol");
      ol.replaceChildren(...(ev.entries || []).map((e) => el("li", e.status || "", e.content || "")));
      $("plan").hidden = !(ev.entries || []).length;
      break;
    }
    case "permission.request":
      note(v, "permission asked: " + (ev.tool || "") + " " + (ev.question || ""));
      showPermission(v, ev);
      break;
    case "permission.response":
      note(v, "permission " + (ev.outcome === "cancelled" ? "cancelled" : ev.option_id + " (" + ev.kind + ")") + " by " + ev.source, "decided");
      if (v.perm && v.perm.request_id === ev.request_id) hidePermission(v);
      break;
    case "question.request":
      note(v, "the agent asks: " + (ev.prompts || []).map((p) => p.question).join(" / "));
      showQuestion(v, ev);
      break;
    case "question.response":
      note(v, ev.answered ? "question answered by " + ev.source + ": " + JSON.stringify(ev.answers)
        : "question not answered (" + ev.reason + "): the agent goes on without an answer", "decided");
      if (v.question === ev.request_id) hideQuestion(v);
      break;
    case "avenor.turn.start":
      // A follow-up of a parked runtime is a new run whose turns count
      // from 1 again: the view numbers the runtime's turns itself.
      v.turns = Math.max(v.turns + 1, ev.turn || 0);
      note(v, "turn " + v.turns);
      break;
    case "session.end":
      note(v, "turn ended: " + ev.stop_reason + (ev.usage && ev.usage.total_tokens ? " · " + ev.usage.total_tokens + " tokens" : ""),
        ev.stop_reason && ev.stop_reason !== "end_turn" ? "note failed-end" : "note");
      refreshUsage();
      break;
    case "avenor.error":
      note(v, "error (" + ev.source + "): " + ev.message, "error");
      break;
    case "avenor.rate_limit.wait":
      note(v, "rate limited: waiting until " + fmtReset(ev.until) + " (resume " + ev.attempt + " of " + ev.max_resumes + ")", "error");
      break;
    case "avenor.watchdog":
      note(v, "watchdog: " + watchdogWhat(ev) + " \u2192 " + (ev.restarts_exhausted ? "restarts used up, cancel" : ev.action), "error");
      break;
    case "avenor.warning":
      note(v, "warning (" + ev.source + "): " + ev.message);
      break;
    case "avenor.budget.reached":
      note(v, "spend limit reached: " + ev.limit + " (" + ev.spent_tokens + " tokens, $" + Number(ev.spent_usd || 0).toFixed(2) + ", " + Math.round((ev.spent_wall_ms || 0) / 1000) + "s in turns)", "error");
      break;
    case "avenor.context":
      note(v, "context: " + ev.used_tokens + " of " + ev.window_tokens + " tokens (" + ev.used_pct + "%)");
      break;
    case "subscriber.lagged":
      note(v, ev.dropped_count + " events were dropped (the page fell behind); the log file has them all", "error");
      break;
    case "avenor.retry":
      note(v, "retry: attempt " + ev.attempt + " of " + (ev.max_retries + 1));
      break;
  }
}

function showPermission(v, p) {
  v.perm = { request_id: p.request_id, fromRow: p.event !== "permission.request" };
  $("permission").hidden = false;
  $("permission").dataset.requestId = p.request_id;
  $("perm-tool").textContent = p.tool ? "tool: " + p.tool : "";
  $("perm-question").textContent = p.question || "";
  $("perm-error").hidden = true;
  const box = $("perm-options");
  box.replaceChildren();
  const mut = state.config.mutations_allowed;
  $("perm-readonly").hidden = mut;
  if (!mut) return;
  for (const o of p.options || []) {
    const kind = String(o.kind || "");
    const b = el("button", kind.startsWith("allow") ? "allow" : (kind.startsWith("reject") ? "reject" : ""), o.name || o.optionId);
    b.type = "button";
    b.dataset.option = o.optionId;
    b.title = kind;
    b.addEventListener("click", () => answer(v, p, o, b));
    box.appendChild(b);
  }
  const first = box.querySelector("button.allow") || box.firstChild;
  if (first && document.activeElement === document.body) first.focus();
}

function hidePermission(v) {
  v.perm = null;
  $("permission").hidden = true;
}

async function answer(v, p, o, button) {
  let message = "";
  if (o.requiresMessage) {
    message = prompt("A message is required for \u201c" + (o.name || o.optionId) + "\u201d:") || "";
    if (!message) return;
  }
  for (const b of $("perm-options").children) b.disabled = true;
  try {
    await post("/api/answer", { socket: v.socket, runtime_id: v.runtimeID, request_id: p.request_id, option_id: o.optionId, message });
    $("perm-error").hidden = true;
  } catch (e) {
    $("perm-error").textContent = e.message;
    $("perm-error").hidden = false;
    for (const b of $("perm-options").children) b.disabled = false;
    button.focus();
  }
}

// showQuestion shows a runtime's question (question.request): each prompt
// its options as buttons (several may be chosen when multi) and a text
// field for a free-text answer; Answer sends one answer per prompt.
function showQuestion(v, q) {
  v.question = q.request_id;
  $("question").hidden = false;
  $("q-error").hidden = true;
  const mut = state.config.mutations_allowed;
  $("q-readonly").hidden = mut;
  $("q-send").hidden = !mut;
  const box = $("q-prompts");
  const picks = (q.prompts || []).map(() => new Set());
  const texts = [];
  box.replaceChildren(...(q.prompts || []).map((p, i) => {
    const fs = el("fieldset");
    fs.appendChild(el("legend", "", (p.header ? p.header + ": " : "") + p.question));
    for (const o of p.options || []) {
      const b = el("button", "", o);
      b.type = "button";
      b.disabled = !mut;
      b.addEventListener("click", () => {
        if (!p.multi) {
          picks[i].clear();
          for (const x of fs.querySelectorAll("button")) x.classList.remove("chosen");
        }
        if (picks[i].has(o)) { picks[i].delete(o); b.classList.remove("chosen"); } else { picks[i].add(o); b.classList.add("chosen"); }
      });
      fs.appendChild(b);
    }
    const t = el("input");
    t.type = "text";
    t.placeholder = (p.options || []).length ? "or your own answer" : "your answer";
    t.disabled = !mut;
    texts[i] = t;
    fs.appendChild(t);
    return fs;
  }));
  $("q-send").onclick = async () => {
    const answers = picks.map((set, i) => {
      const vs = [...set];
      const t = texts[i].value.trim();
      if (t) { if ((q.prompts[i] || {}).multi) vs.push(t); else return [t]; }
      return vs;
    });
    $("q-send").disabled = true;
    try {
      await post("/api/answer-question", { socket: v.socket, runtime_id: v.runtimeID, request_id: q.request_id, answers });
      $("q-error").hidden = true;
    } catch (e) {
      $("q-error").textContent = e.message;
      $("q-error").hidden = false;
    } finally {
      $("q-send").disabled = false;
    }
  };
}

function hideQuestion(v) {
  v.question = null;
  $("question").hidden = true;
}

let cancelTimer = 0;
function resetCancel() {
  clearTimeout(cancelTimer);
  const b = $("cancel");
  b.textContent = "Cancel";
  b.dataset.armed = "";
}

// Cancel takes two presses (the second within 3 s): a stray click or key
// must not end someone's run.
async function cancelRun() {
  const v = state.view;
  const b = $("cancel");
  if (!v || b.hidden) return;
  if (!b.dataset.armed) {
    b.dataset.armed = "1";
    b.textContent = "Confirm cancel";
    cancelTimer = setTimeout(resetCancel, 3000);
    return;
  }
  resetCancel();
  try {
    await post("/api/cancel", { socket: v.socket, runtime_id: v.runtimeID });
    note(v, "cancel sent");
  } catch (e) {
    note(v, "cancel failed: " + e.message, "error");
  }
}

// spendMarker says which spend limit paused the runtime and what it spent.
function spendMarker(sp) {
  const spent = { tokens: sp.spent_tokens, usd: "$" + Number(sp.spent_usd || 0).toFixed(2), wall: Math.round((sp.spent_wall_ms || 0) / 1000) + "s" };
  const limit = { tokens: sp.spend_tokens, usd: "$" + sp.spend_usd, wall: Math.round((sp.spend_wall_ms || 0) / 1000) + "s" };
  return "paused at the " + sp.reached + " limit (" + spent[sp.reached] + " of " + limit[sp.reached] + ")";
}

// raiseBudget doubles the limit that paused the runtime (at least past what
// it spent) and resumes its session.
async function raiseBudget() {
  const v = state.view;
  const r = v && state.rows.get(v.key);
  const sp = r && r.rt.spend;
  if (!sp || !sp.reached) return;
  const body = { socket: v.socket, runtime_id: v.runtimeID, resume: true };
  switch (sp.reached) {
    case "tokens": body.spend_tokens = Math.max(2 * sp.spend_tokens, 2 * sp.spent_tokens); break;
    case "usd": body.spend_usd = Math.max(2 * sp.spend_usd, 2 * sp.spent_usd); break;
    case "wall": body.spend_wall = Math.ceil(Math.max(2 * sp.spend_wall_ms, 2 * sp.spent_wall_ms) / 1000); break;
  }
  try {
    await post("/api/set-budget", body);
    note(v, "spend limit raised, resuming");
  } catch (e) {
    note(v, "raising the limit failed: " + e.message, "error");
  }
}

async function sendPrompt(ev) {
  if (ev) ev.preventDefault();
  const v = state.view;
  const text = $("prompt").value;
  if (!v || !text.trim()) return;
  $("prompt-status").textContent = "sending…";
  try {
    await post("/api/prompt", { socket: v.socket, runtime_id: v.runtimeID, text });
    $("prompt").value = "";
    $("prompt-status").textContent = "queued";
  } catch (e) {
    $("prompt-status").textContent = e.message;
  }
}

// ---- keyboard ----

function onKey(e) {
  const t = e.target;
  const typing = t instanceof HTMLInputElement || t instanceof HTMLTextAreaElement;
  if (typing) {
    if (e.key === "Escape") t.blur();
    if (t.id === "prompt" && e.key === "Enter" && (e.ctrlKey || e.metaKey)) sendPrompt(e);
    return;
  }
  if (e.ctrlKey || e.metaKey || e.altKey) return;
  switch (e.key) {
    case "j": case "ArrowDown": move(1); break;
    case "k": case "ArrowUp": move(-1); break;
    case "Enter":
      if (t instanceof HTMLButtonElement) return; // the button's own action
      if (state.selected) openView(state.selected);
      break;
    case "Escape": closeView(); break;
    case "/": $("filter").focus(); break;
    case "w": nextWaiting(); break;
    case "c": cancelRun(); break;
    case "p": if (state.view && !$("prompt-form").hidden) $("prompt").focus(); break;
    case "a": case "r": {
      if (!state.view || $("permission").hidden) return;
      const b = $("perm-options").querySelector(e.key === "a" ? "button.allow" : "button.reject");
      if (b) b.focus();
      break;
    }
    default: return;
  }
  e.preventDefault();
}

// ---- start ----

async function start() {
  takeToken();
  try { state.config = await api("/api/config"); } catch (_) { /* defaults */ }
  const m = $("mode");
  m.textContent = state.config.mutations_allowed ? "answers, cancel, prompt allowed" : "read-only";
  m.className = "badge " + (state.config.mutations_allowed ? "on" : "");
  document.body.dataset.mutations = state.config.mutations_allowed ? "1" : "";
  if (state.config.auth_required && !state.token) {
    setConn(false, "no token: open the URL avenor board printed (it ends in ?token=…)", 401);
    document.body.dataset.ready = "1";
    return;
  }
  document.addEventListener("keydown", onKey);
  $("filter").addEventListener("input", () => refresh());
  $("close-view").addEventListener("click", () => closeView());
  $("cancel").addEventListener("click", cancelRun);
  $("raise-budget").addEventListener("click", raiseBudget);
  $("prompt-form").addEventListener("submit", sendPrompt);
  await refresh();
  await refreshUsage();
  document.body.dataset.ready = "1";
  setInterval(refresh, POLL_MS);
  setInterval(() => { refreshUsage().then(() => { for (const [k, tr] of rowEls) fillRow(tr, k, state.rows.get(k)); }); }, USAGE_MS);
}

start();
