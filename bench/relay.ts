/**
 * `npm run bench`: the caller tool relay on the local stack (wrangler dev + a host-agent, in
 * Docker when an engine is reachable, else the process runtime), all on loopback.
 *
 * 1. Latency: a relayed call (droid → container-client → socket → host-agent → tunnel →
 *    SessionDO → caller's MCP stream → caller answers with caller_tool_response → back), timed by
 *    the droid, against a plain `tools/call` round trip (`session get`) timed by the caller; the
 *    same for a 2026-07-28 caller (SDK v2: stateless requests, events by subscriptions/listen).
 * 2. Throughput: 1,000 relayed calls at concurrency 32; every result must reach the call that
 *    asked (lost or duplicated must be 0).
 * 3. A long session: throughput of a fresh session, then again after LONG_SESSION_CALLS relayed
 *    calls in that one session (nothing on a call's path may cost more as its history grows).
 * 4. The host-agent's peak memory (VmHWM), after the runs above and again with MANY_SESSIONS
 *    sessions live in one project at once, each relaying a few calls.
 * Every loop is bounded in count, and the whole run in time.
 */
import { readFile } from "node:fs/promises";
import WebSocket from "ws";
import { ensureDroidImage } from "../host-agent/src/images/images.js";
import { type Summary, summarize } from "../lib/stats.js";
import { buildAll } from "../scripts/build.js";
import { ensureDockerEngine } from "../scripts/docker/engine.js";
import { LocalStack } from "../scripts/stack/local-stack.js";
import { runSteps, spawnDroid } from "../test/e2e/support.js";
import { TestCaller } from "../test/support/caller.js";
import { ModernCaller } from "../test/support/modern-caller.js";
import { CPU_PART_NAMES, CPU_PARTS, cpuPerCall, cpuUse } from "./process-cpu.js";

/** Latency is sampled in interleaved rounds (plain, then relayed) so drift in machine load hits both alike. */
const ROUNDS = 10;
const PER_ROUND = 50;
const LATENCY_SAMPLES = ROUNDS * PER_ROUND;
const WARMUP = 50;
const THROUGHPUT_CALLS = 1_000;
const CONCURRENCY = 32;
const LONG_SESSION_CALLS = Number(process.env.BENCH_LONG_SESSION_CALLS ?? 100_000);
const PROBE_CALLS = 2_000;
const RUN_LIMIT_MS = 30 * 60_000;
/** Sessions live at once on the host for the memory figure (and how many start at a time). */
const MANY_SESSIONS = Number(process.env.BENCH_SESSIONS ?? 50);
const START_BATCH = 5;
const CALLS_PER_SESSION = 5;

const say = (line: string) => process.stdout.write(`${line}\n`);

async function plainToolCalls(
  caller: TestCaller | ModernCaller,
  sessionId: string,
  count: number,
): Promise<number[]> {
  const samples: number[] = [];
  for (let i = 0; i < count; i++) {
    const started = performance.now();
    await caller.ok("session", { action: "get", session_id: sessionId });
    samples.push(performance.now() - started);
  }
  return samples;
}

interface BenchLine {
  errors: number;
  mismatches: number;
  calls_per_s: number;
  total_ms: number;
  latency_ms: Summary;
  samples_ms?: number[];
}

async function droidBench(
  caller: TestCaller,
  sessionId: string,
  count: number,
  concurrency: number,
  samples = false,
) {
  const [line] = await runSteps(
    caller,
    sessionId,
    [
      {
        op: "bench",
        name: "bench_echo",
        count,
        concurrency,
        arguments: { payload: "x" },
        samples,
        stamp: samples,
      },
    ],
    RUN_LIMIT_MS,
  );
  if (line?.op !== "bench") throw new Error(`the droid printed no bench result: ${JSON.stringify(line)}`);
  return line as unknown as BenchLine;
}

/** How the caller answers caller tool requests right now ("2026": the stateless caller). */
type AnswerPath = "mcp" | "ws" | "2026";

/**
 * Plain and relayed round trips, one at a time, in interleaved rounds after a warm-up. Relayed
 * calls are answered by the MCP caller (caller_tool_response, an HTTP tools/call) and, for
 * comparison, over the session's WebSocket.
 */
async function latency(
  caller: TestCaller,
  modern: ModernCaller,
  sessionId: string,
  answerVia: (path: AnswerPath) => void,
) {
  await plainToolCalls(caller, sessionId, WARMUP);
  await plainToolCalls(modern, sessionId, WARMUP);
  await droidBench(caller, sessionId, WARMUP, 1);
  const plain: number[] = [];
  const relay: number[] = [];
  const relayWs: number[] = [];
  const plain2026: number[] = [];
  const relay2026: number[] = [];
  const sample = async () => (await droidBench(caller, sessionId, PER_ROUND, 1, true)).samples_ms ?? [];
  for (let round = 0; round < ROUNDS; round++) {
    plain.push(...(await plainToolCalls(caller, sessionId, PER_ROUND)));
    relay.push(...(await sample()));
    answerVia("ws");
    relayWs.push(...(await sample()));
    answerVia("2026");
    plain2026.push(...(await plainToolCalls(modern, sessionId, PER_ROUND)));
    relay2026.push(...(await sample()));
    answerVia("mcp");
  }
  return {
    plain: summarize(plain),
    relay: summarize(relay),
    relayWs: summarize(relayWs),
    plain2026: summarize(plain2026),
    relay2026: summarize(relay2026),
  };
}

/** A WebSocket subscriber of the session that answers caller tool requests while `active()`. */
async function webSocketAnswerer(
  stack: LocalStack,
  sessionId: string,
  active: () => boolean,
): Promise<WebSocket> {
  const url = new URL(
    `/v1/sessions/${sessionId}/ws?since_index=${Number.MAX_SAFE_INTEGER}`,
    stack.url.replace(/^http/, "ws"),
  );
  const ws = new WebSocket(url, { headers: { authorization: `Bearer ${stack.adminToken}` } });
  ws.on("message", (data) => {
    if (!active()) return;
    const event = JSON.parse(data.toString()) as { type?: string; request_id?: string; arguments?: unknown };
    if (event.type !== "caller_tool_request") return;
    ws.send(
      JSON.stringify({ type: "caller_tool_response", request_id: event.request_id, result: event.arguments }),
    );
  });
  await new Promise((resolve, reject) => {
    ws.once("open", resolve);
    ws.once("error", reject);
  });
  return ws;
}

async function peakMemoryMiB(pid: number | undefined): Promise<number | null> {
  if (pid === undefined) return null;
  const status = await readFile(`/proc/${pid}/status`, "utf8").catch(() => "");
  const kb = /VmHWM:\s+(\d+) kB/.exec(status)?.[1];
  return kb ? Number(kb) / 1024 : null;
}

async function main(): Promise<void> {
  const bundles = await buildAll();
  const engine = await ensureDockerEngine({ install: false }).catch((err: Error) => {
    say(`Docker Engine unavailable (${err.message.split("\n")[0]}); using the process runtime`);
    return null;
  });
  const image = engine ? await ensureDroidImage(engine.docker, bundles, () => {}) : undefined;
  const stack = await LocalStack.start();
  let caller: TestCaller | undefined;
  let modern: ModernCaller | undefined;
  try {
    const host = await stack.addHost({
      runtime: engine ? "docker" : "process",
      image,
      maxSessions: MANY_SESSIONS + 8,
    });
    caller = await TestCaller.connect(stack.mcpUrl, stack.adminToken, "bench-caller");
    const seen = new Map<number, number>();
    let path: AnswerPath = "mcp";
    // The latency rounds' calls carry when the droid made them: their way out, droid to caller.
    const wayOut: number[] = [];
    caller.answerWith((request) => {
      if (path !== "mcp") return "ignore";
      const sentAt = request.arguments.sent_at;
      if (typeof sentAt === "number") wayOut.push(performance.timeOrigin + performance.now() - sentAt);
      const n = Number(request.arguments.n);
      seen.set(n, (seen.get(n) ?? 0) + 1);
      return { result: request.arguments };
    });
    const sessionId = await spawnDroid(caller, { callerId: "bench", tools: [{ name: "echo" }] });
    say(`runtime: ${engine ? "docker" : "process"}; session ${sessionId}`);
    const ws = await webSocketAnswerer(stack, sessionId, () => path === "ws");
    modern = await ModernCaller.connect(stack.mcpUrl, stack.adminToken, {
      name: "bench-2026",
      feed: "listen",
    });
    modern.answerWith((request) => (path === "2026" ? { result: request.arguments } : "ignore"));
    modern.follow(sessionId);

    const { plain, relay, relayWs, plain2026, relay2026 } = await latency(caller, modern, sessionId, (p) => {
      path = p;
    });
    ws.close();
    await modern.close();
    modern = undefined;
    seen.clear();
    const pids = { devServer: stack.worker.process.pid ?? -1, hostAgent: host.process.pid ?? -1 };
    const cpuBefore = cpuUse(pids);
    const load = await droidBench(caller, sessionId, THROUGHPUT_CALLS, CONCURRENCY);
    const cpuAfter = cpuUse(pids);
    const duplicated = [...seen.values()].filter((c) => c > 1).length;
    const lost = THROUGHPUT_CALLS - seen.size + load.errors;

    // A long session: the same probe on a fresh session, then after many calls in that session.
    const long = await spawnDroid(caller, { callerId: "bench", tools: [{ name: "echo" }] });
    const fresh = await droidBench(caller, long, PROBE_CALLS, CONCURRENCY);
    say(`long session: ${LONG_SESSION_CALLS} relayed calls in one session (this takes a few minutes)`);
    const history = await droidBench(caller, long, LONG_SESSION_CALLS, CONCURRENCY);
    const aged = await droidBench(caller, long, PROBE_CALLS, CONCURRENCY);
    const memory = await peakMemoryMiB(host.process.pid);
    say(
      `many sessions: ${MANY_SESSIONS} live at once in one project, ${CALLS_PER_SESSION} relayed calls each`,
    );
    const many = await manySessions(caller, MANY_SESSIONS - 2);
    const manyMemory = await peakMemoryMiB(host.process.pid);

    const ratio = relay.p50 / plain.p50;
    say("");
    say(
      `round trip (ms)          p50      p99     mean   (n=${LATENCY_SAMPLES} each, sequential, interleaved)`,
    );
    say(`plain tools/call     ${fmt(plain.p50)}  ${fmt(plain.p99)}  ${fmt(plain.mean)}`);
    say(
      `relayed caller tool  ${fmt(relay.p50)}  ${fmt(relay.p99)}  ${fmt(relay.mean)}   (caller answers with caller_tool_response)`,
    );
    say(
      `  same, WS answer    ${fmt(relayWs.p50)}  ${fmt(relayWs.p99)}  ${fmt(relayWs.mean)}   (caller answers on /v1/sessions/:id/ws)`,
    );
    say(
      `2026 plain tools/call ${fmt(plain2026.p50)}  ${fmt(plain2026.p99)}  ${fmt(plain2026.mean)}   (stateless, SDK v2)`,
    );
    say(
      `2026 relayed tool    ${fmt(relay2026.p50)}  ${fmt(relay2026.p99)}  ${fmt(relay2026.mean)}   (request by subscriptions/listen, stateless caller_tool_response)`,
    );
    const out = summarize(wayOut);
    say(
      `  its way out        ${fmt(out.p50)}  ${fmt(out.p99)}  ${fmt(out.mean)}   (the droid's call to the caller's handler; the rest is the answer's way back)`,
    );
    say(`relay p50 / plain p50: ${ratio.toFixed(2)}x   (target <= 1.6x)`);
    say(`relay p99: ${relay.p99.toFixed(2)} ms   (target < 50 ms)`);
    say("");
    say(
      `${THROUGHPUT_CALLS} relayed calls at concurrency ${CONCURRENCY}: ${load.calls_per_s.toFixed(0)} calls/s, p50 ${load.latency_ms.p50.toFixed(2)} ms, p99 ${load.latency_ms.p99.toFixed(2)} ms`,
    );
    say(
      `lost: ${lost}, duplicated: ${duplicated}, mismatched results: ${load.mismatches}, errors: ${load.errors}`,
    );
    if (cpuBefore && cpuAfter) {
      const cpu = cpuPerCall(cpuBefore, cpuAfter, THROUGHPUT_CALLS);
      say("CPU per relayed call in that run (ms, every process of the stack):");
      for (const part of CPU_PARTS) say(`  ${CPU_PART_NAMES[part].padEnd(50)} ${fmt(cpu.parts[part])}`);
      say(
        `  total ${cpu.total.toFixed(2)} ms, of which the local server's own ${cpu.parts["dev-server"].toFixed(2)} ms (a deployed Worker has none)`,
      );
    } else say("CPU per relayed call: not measured (no /proc here)");
    say("");
    say(
      `long session: fresh ${fresh.calls_per_s.toFixed(0)} calls/s; after ${LONG_SESSION_CALLS} calls ${aged.calls_per_s.toFixed(0)} calls/s (${((aged.calls_per_s / fresh.calls_per_s) * 100).toFixed(0)}% of fresh; target >= 90%)`,
    );
    say(
      `  the ${LONG_SESSION_CALLS} calls themselves: ${history.calls_per_s.toFixed(0)} calls/s, errors ${history.errors}, mismatched ${history.mismatches}`,
    );
    say(`host-agent peak memory (VmHWM): ${mib(memory)} after the runs above (2 sessions)`);
    say(
      `  with ${many.sessions + 2} sessions live: ${mib(manyMemory)}   (target <= 80 MiB; ${many.calls} calls, errors ${many.errors})`,
    );
    const longErrors =
      fresh.errors + history.errors + aged.errors + history.mismatches + aged.mismatches + many.errors;
    if (lost !== 0 || duplicated !== 0 || load.mismatches !== 0 || longErrors !== 0) process.exitCode = 1;
  } finally {
    await modern?.close();
    await caller?.close();
    await stack.stop();
    await engine?.stop();
  }
}

/**
 * `count` more sessions in one project, started START_BATCH at a time and all kept live, then a
 * few relayed calls in every one of them at once.
 */
async function manySessions(caller: TestCaller, count: number) {
  // One container holds every session's droid and MCP server (two Node processes each): the
  // default limits (1 GiB, 256 pids) hold a few sessions, not `count`.
  const { project_id: projectId } = await caller.ok<{ project_id: string }>("project", {
    action: "create",
    name: `bench-${crypto.randomUUID().slice(0, 8)}`,
    limits: { memory_mb: Math.max(1024, count * 160), pids: Math.max(256, count * 40) },
  });
  const sessions: string[] = [];
  for (let i = 0; i < count; i += START_BATCH) {
    const batch = Math.min(START_BATCH, count - i);
    const started = await Promise.all(
      Array.from({ length: batch }, () =>
        spawnDroid(caller, { projectId, callerId: "bench", tools: [{ name: "echo" }] }),
      ),
    );
    sessions.push(...started);
  }
  const lines = await Promise.all(sessions.map((id) => droidBench(caller, id, CALLS_PER_SESSION, 1)));
  const errors = lines.reduce((n, line) => n + line.errors + line.mismatches, 0);
  return { sessions: sessions.length, calls: sessions.length * CALLS_PER_SESSION, errors };
}

function mib(value: number | null): string {
  return value === null ? "n/a" : `${value.toFixed(1)} MiB`;
}

function fmt(ms: number): string {
  return ms.toFixed(2).padStart(7);
}

const limit = setTimeout(() => {
  process.stderr.write(`bench: gave up after ${RUN_LIMIT_MS / 1000} s\n`);
  process.exit(2);
}, RUN_LIMIT_MS);
limit.unref();
await main();
