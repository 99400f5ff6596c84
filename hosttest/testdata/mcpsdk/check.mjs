// Drives `avenor mcp` with the official MCP TypeScript SDK client, as an
// agent host built on it would: listTools (the SDK checks every tool's
// schemas against the MCP schema), then every tool once on the echo backend
// (the SDK validates each structuredContent against the tool's
// outputSchema). Prints one JSON line per step; exits non-zero on the
// first failure.
//
//   node check.mjs stdio <avenor> <control-socket> <repo-dir>
//   node check.mjs http  <base-url> <token> <repo-dir>
//
// The HTTP bearer token may also come from MCP_AUTH_TOKEN (then pass "-").
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [mode, a, b, repo] = process.argv.slice(2);
if (!["stdio", "http"].includes(mode) || !a || !b || !repo) {
  console.error("usage: check.mjs stdio <avenor> <control-socket> <repo-dir> | http <base-url> <token> <repo-dir>");
  process.exit(2);
}

function out(step, v) {
  console.log(JSON.stringify({ step, ...v }));
}

function fail(step, msg) {
  out(step, { error: String(msg) });
  process.exit(1);
}

let transport;
if (mode === "stdio") {
  transport = new StdioClientTransport({
    command: a,
    args: ["mcp", "--control-socket", b, "--idle-timeout", "0"],
    env: process.env,
    cwd: repo,
    stderr: "inherit",
  });
} else {
  const token = b === "-" ? process.env.MCP_AUTH_TOKEN : b;
  transport = new StreamableHTTPClientTransport(new URL(a + "/mcp"), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
}

const client = new Client({ name: "avenor-mcpsdk-check", version: "1.0.0" });
const timeout = { timeout: 90_000 };

async function call(name, args) {
  let res;
  try {
    res = await client.callTool({ name, arguments: args }, undefined, timeout);
  } catch (e) {
    fail(name, e?.message ?? e);
  }
  if (res.isError) {
    fail(name, `tool error: ${res.content?.map((c) => c.text).join("")}`);
  }
  if (!res.structuredContent) {
    fail(name, "no structuredContent");
  }
  return res.structuredContent;
}

function expect(step, cond, what) {
  if (!cond) fail(step, what);
}

try {
  await client.connect(transport, timeout);
} catch (e) {
  fail("connect", e?.message ?? e);
}

let tools;
try {
  tools = (await client.listTools(undefined, timeout)).tools;
} catch (e) {
  fail("listTools", e?.message ?? e);
}
out("listTools", {
  tools: tools.map((t) => ({ name: t.name, title: t.title ?? t.annotations?.title, annotations: t.annotations })),
});

const called = new Set();
const tracked = async (name, args) => {
  called.add(name);
  const r = await call(name, args);
  out(name, { result: r });
  return r;
};

const sp = await tracked("avenor_spawn", { repo_dir: repo, backend: "echo", prompt: "hello from the sdk", label: "sdk-kid" });
const res = await tracked("avenor_result", { run_id: sp.run_id, timeout: 60 });
expect("avenor_result", res.status === "done" && res.output === "echo (turn 1): hello from the sdk", `result ${JSON.stringify(res)}`);
const st = await tracked("avenor_status", { run_id: sp.run_id, view: "full", wait_for: "terminal", timeout: 30 });
expect("avenor_status", st.status === "done", `status ${JSON.stringify(st)}`);
const list = await call("avenor_status", {});
expect("avenor_status", list.count >= 1 && Array.isArray(list.runs), `status list ${JSON.stringify(list)}`);
const ev = await tracked("avenor_events", { run_id: sp.run_id, types: ["session.end"] });
expect("avenor_events", ev.events.length === 1 && ev.events[0].run_id === sp.run_id, `events ${JSON.stringify(ev)}`);
const fu = await tracked("avenor_follow_up", { run_id: sp.run_id, message: "and again" });
const res2 = await call("avenor_result", { run_id: fu.run_id, timeout: "60s" });
expect("avenor_follow_up", res2.status === "done" && res2.output === "echo (turn 2): and again", `follow-up result ${JSON.stringify(res2)}`);

const perm = await call("avenor_spawn", { repo_dir: repo, backend: "echo", prompt: "ask permission please" });
const ws = await call("avenor_status", { run_id: perm.run_id, wait_for: "permission", timeout: 60 });
expect("avenor_status", ws.status === "waiting" && ws.permission && Array.isArray(ws.permission.options), `wait_for permission ${JSON.stringify(ws)}`);
const pres = await call("avenor_result", { run_id: perm.run_id, wait: false });
expect("avenor_result", pres.pending_permission === true && typeof pres.permission === "object", `result with a pending permission ${JSON.stringify(pres)}`);
await tracked("avenor_answer_permission", { run_id: perm.run_id, option_id: "allow_once" });
const pdone = await call("avenor_result", { run_id: perm.run_id, timeout: 60 });
expect("avenor_answer_permission", pdone.status === "done", `after the answer ${JSON.stringify(pdone)}`);

const ask = await call("avenor_spawn", { repo_dir: repo, backend: "scripted", questions: true, prompt: 'question "Pick one" options=a|b\nsay " done"' });
let q;
for (let i = 0; i < 200 && !q; i++) {
  const qe = await call("avenor_events", { run_id: ask.run_id, types: ["question.request"] });
  q = qe.events[0];
  if (!q) await new Promise((r) => setTimeout(r, 50));
}
expect("avenor_answer_question", q && q.request_id, "no question.request in avenor_events");
await tracked("avenor_answer_question", { run_id: ask.run_id, request_id: q.request_id, answers: [["b"]] });
const qdone = await call("avenor_result", { run_id: ask.run_id, timeout: 60 });
expect("avenor_answer_question", qdone.status === "done" && qdone.output === 'answer [["b"]] done', `after the answer ${JSON.stringify(qdone)}`);

const long = await call("avenor_spawn", { repo_dir: repo, backend: "echo", prompt: "word ".repeat(400) });
const cn = await tracked("avenor_cancel", { run_id: long.run_id });
expect("avenor_cancel", cn.ok === true, `cancel ${JSON.stringify(cn)}`);

const spent = await call("avenor_spawn", { repo_dir: repo, backend: "scripted", spend_tokens: 50, prompt: "say t\nusage in=60 out=40" });
const sres = await call("avenor_result", { run_id: spent.run_id, timeout: 60 });
expect("avenor_set_budget", sres.stop_reason === "budget_reached", `result at the limit ${JSON.stringify(sres)}`);
const sb = await tracked("avenor_set_budget", { run_id: spent.run_id, spend_tokens: 1000, resume: true });
expect("avenor_set_budget", sb.ok === true && sb.resumed === true, `set_budget ${JSON.stringify(sb)}`);

const lb = await tracked("avenor_list_backends", {});
expect("avenor_list_backends", lb.count >= 1 && lb.backends.some((r) => r.backend === "echo"), `list_backends ${JSON.stringify(lb)}`);

const sd = await tracked("avenor_shutdown", {});
expect("avenor_shutdown", sd.ok === true, `shutdown ${JSON.stringify(sd)}`);

const missing = tools.map((t) => t.name).filter((n) => !called.has(n));
expect("coverage", missing.length === 0, `tools not called: ${missing.join(", ")}`);
out("done", { called: [...called] });
await client.close();
process.exit(0);
