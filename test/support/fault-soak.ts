/**
 * The fault soak: droids in several sessions make caller tool calls non-stop while the harness
 * kills and restarts the host-agent (SIGKILL and SIGTERM), cuts its network (a real TCP proxy)
 * and restarts the Worker. Afterwards every droid call is matched against what the caller saw,
 * read from the sessions' own event logs: each call must have ended (answered or with a clear
 * error), no call may have become two requests, and the caller and the droid must agree on every
 * call (the caller told "delivered" exactly when the droid got that answer).
 */
import type { SessionEvent } from "../../protocol/events.js";
import type { HostAgent } from "../../scripts/stack/host-agent-process.js";
import { LocalStack } from "../../scripts/stack/local-stack.js";
import { spawnDroid } from "../e2e/support.js";
import { TestCaller } from "./caller.js";
import { TcpProxy } from "./tcp-proxy.js";

export interface SoakOptions {
  image?: string;
  runtime: "docker" | "process";
  sessions: number;
  /**
   * How long the faults go on: every fault of the list runs at least once, in order, and the list
   * repeats while there is time; the droids call from before the first fault until well after
   * the last.
   */
  durationMs: number;
  faults: readonly Fault[];
  log(line: string): void;
}

export type Fault = "host_sigkill" | "host_sigterm" | "cut" | "worker_restart";

export interface SoakTally {
  calls: number;
  answered: number;
  errors: Record<string, number>;
  /** Droid calls that never ended. */
  lost: number;
  /** Droid calls that became more than one caller tool request. */
  duplicated: number;
  /** Calls where the caller was told "delivered" but the droid did not get that answer, or the reverse. */
  disagreements: number;
  faults: Record<string, number>;
  examples: string[];
}

type RequestEvent = Extract<SessionEvent, { type: "caller_tool_request" }>;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Runs the soak on a fresh local stack; returns the tally. */
export async function runFaultSoak(options: SoakOptions): Promise<SoakTally> {
  const { log } = options;
  const stack = await LocalStack.start({
    // A Worker restart takes a few seconds; the caller's stream comes back within this.
    vars: { OUBLIETTE_CALLER_GRACE_MS: "20000", OUBLIETTE_KEEPALIVE_MS: "2000" },
  });
  const proxy = await TcpProxy.start(Number(new URL(stack.url).port));
  let host: HostAgent | undefined;
  let caller: TestCaller | undefined;
  try {
    host = await stack.addHost({
      runtime: options.runtime,
      image: options.image,
      workerUrl: proxy.url,
      // The faults close the tunnel's sockets, so they are seen at once; the heartbeat only finds a
      // silent peer, and a tighter one mistakes a loaded machine's pause for a dead tunnel.
      heartbeatMs: 2_000,
      reconnectMaxMs: 1_000,
    });
    caller = await TestCaller.connect(stack.mcpUrl, stack.adminToken, "soak-caller", {
      reconnectAttempts: 1_000,
    });
    /** What the caller was told for each request it answered. */
    const told = new Map<string, { status: "delivered" | "refused"; text: string }>();
    const answer = answerer(caller, told);
    caller.answerWith((request) => {
      void answer(request);
      return "ignore";
    });
    const sessions: string[] = [];
    for (let i = 0; i < options.sessions; i++)
      sessions.push(await spawnDroid(caller, { timeoutSeconds: 60 }));
    log(`${sessions.length} sessions up; soaking for ${Math.round(options.durationMs / 1000)} s`);
    for (const [i, sessionId] of sessions.entries()) {
      const script = {
        id: `soak-${i}`,
        steps: [
          {
            op: "soak",
            id: `soak-${i}`,
            name: "ant_send_response",
            start: i * 1_000_000,
            count: 100_000,
            concurrency: 2,
            pause_ms: 10,
            // A cap only: the harness stops the soak (soak_stop) once the faults are over.
            duration_ms: options.durationMs + 300_000,
          },
        ],
      };
      await caller.ok("session", {
        action: "message",
        session_id: sessionId,
        message: JSON.stringify(script),
      });
    }
    const faults: Record<string, number> = {};
    const spacing = 12_000;
    const startedAt = Date.now();
    for (
      let i = 0;
      i < options.faults.length || Date.now() - startedAt + spacing <= options.durationMs;
      i++
    ) {
      await sleep(spacing / 2);
      const fault = options.faults[i % options.faults.length];
      if (fault === undefined) break;
      log(`fault ${i + 1}: ${fault}`);
      host = await inject(fault, { stack, proxy, host });
      faults[fault] = (faults[fault] ?? 0) + 1;
      await sleep(spacing / 2);
    }
    // Calm after the storm: calls go on a little longer, then the droids are told to stop.
    await sleep(5_000);
    log("faults done; stopping the droids");
    for (const sessionId of sessions) {
      await caller.ok("session", {
        action: "message",
        session_id: sessionId,
        message: JSON.stringify({ op: "soak_stop" }),
      });
    }
    // Read from the sessions' logs, not the caller's stream: the harness must not depend on what it tests.
    await waitForSummaries(caller, sessions, Date.now() + 150_000, log);
    // Let the last answers settle before reading the logs.
    await sleep(2_000);
    return { ...(await tally(caller, sessions, told)), faults };
  } finally {
    await caller?.close();
    await stack.stop();
    await proxy.close();
  }
}

/** Answers each request once it arrives, retrying through outages until the Worker decides. */
function answerer(caller: TestCaller, told: Map<string, { status: "delivered" | "refused"; text: string }>) {
  const answering = new Set<string>();
  return async (request: RequestEvent): Promise<void> => {
    const key = request.request_id;
    if (answering.has(key) || told.get(key)?.status === "delivered") return;
    answering.add(key);
    const text = `n=${String(request.arguments.n)}`;
    let tried = false;
    try {
      for (let attempt = 0; attempt < 200; attempt++) {
        try {
          const reply = await caller.respond(request.session_id, key, { result: text });
          const body = JSON.stringify(reply.content);
          // An earlier attempt whose reply was lost in an outage may have been the one that counted.
          const delivered = !reply.isError || (tried && body.includes("already_answered"));
          told.set(key, { status: delivered ? "delivered" : "refused", text: delivered ? text : body });
          return;
        } catch {
          tried = true;
          await sleep(250);
        }
      }
    } finally {
      answering.delete(key);
    }
  };
}

async function inject(
  fault: Fault,
  ctx: { stack: LocalStack; proxy: TcpProxy; host: HostAgent },
): Promise<HostAgent> {
  switch (fault) {
    case "host_sigkill":
    case "host_sigterm":
      ctx.host.process.kill(fault === "host_sigkill" ? "SIGKILL" : "SIGTERM");
      await ctx.host.exited;
      return ctx.stack.restartHost(ctx.host);
    case "cut":
      ctx.proxy.cut();
      await sleep(3_000);
      ctx.proxy.restore();
      return ctx.host;
    case "worker_restart":
      await ctx.stack.restartWorker();
      return ctx.host;
  }
}

/** Reads every session's log and matches droid calls against requests and what the caller was told. */
async function tally(
  caller: TestCaller,
  sessions: string[],
  told: Map<string, { status: "delivered" | "refused"; text: string }>,
): Promise<Omit<SoakTally, "faults">> {
  const result: Omit<SoakTally, "faults"> = {
    calls: 0,
    answered: 0,
    errors: {},
    lost: 0,
    duplicated: 0,
    disagreements: 0,
    examples: [],
  };
  const note = (line: string) => {
    if (result.examples.length < 10) result.examples.push(line);
  };
  for (const sessionId of sessions) {
    const events = await readLog(caller, sessionId);
    const requestsByN = new Map<number, Set<string>>();
    const failedById = new Map<string, string>();
    const outcomes: { n: number; ok: boolean; text: string }[] = [];
    let summaries = 0;
    let started = 0;
    for (const event of events) {
      if (event.type === "caller_tool_request") {
        const n = Number(event.arguments.n);
        if (!requestsByN.has(n)) requestsByN.set(n, new Set());
        requestsByN.get(n)?.add(event.request_id);
      } else if (event.type === "caller_tool_failed") {
        failedById.set(event.request_id, event.reason);
      } else if (event.type === "droid_output" && typeof event.data === "object" && event.data !== null) {
        const data = event.data as Record<string, unknown>;
        if (data.op === "soak_call")
          outcomes.push({ n: Number(data.n), ok: data.ok === true, text: String(data.text) });
        if (data.op === "soak") {
          summaries += 1;
          started = Number(data.count);
        }
      }
    }
    if (summaries !== 1) {
      result.lost += 1;
      const last = events
        .slice(-5)
        .map((e) => (e.type === "droid_output" ? JSON.stringify(e.data).slice(0, 120) : e.type));
      note(`${sessionId}: the soak did not finish (${events.length} events; last: ${last.join(" | ")})`);
    }
    // A call the droid made but never saw end (its outcome line is missing).
    result.lost += Math.max(0, started - outcomes.length);
    for (const outcome of outcomes) {
      result.calls += 1;
      const requestIds = [...(requestsByN.get(outcome.n) ?? [])];
      if (requestIds.length > 1) {
        result.duplicated += 1;
        note(`${sessionId} n=${outcome.n}: ${requestIds.length} requests`);
      }
      const delivered = requestIds.filter((id) => told.get(id)?.status === "delivered");
      if (outcome.ok) {
        result.answered += 1;
        const agrees = delivered.length === 1 && outcome.text === told.get(delivered[0] ?? "")?.text;
        if (!agrees) {
          result.disagreements += 1;
          note(
            `${sessionId} n=${outcome.n}: droid got "${outcome.text}", caller delivered ${delivered.length}`,
          );
        }
      } else {
        const reason =
          requestIds.map((id) => failedById.get(id)).find((r) => r !== undefined) ?? reasonOf(outcome.text);
        result.errors[reason] = (result.errors[reason] ?? 0) + 1;
        if (delivered.length > 0) {
          result.disagreements += 1;
          note(
            `${sessionId} n=${outcome.n}: droid got an error (${outcome.text}) but the caller was told delivered`,
          );
        }
      }
    }
  }
  return result;
}

/** A failure's reason when the session log has none (the call never reached the session object). */
function reasonOf(text: string): string {
  if (/host-agent within/.test(text)) return "host_unreachable";
  if (/Worker within/.test(text)) return "worker_unreachable";
  if (/not connected/.test(text)) return "caller_disconnected";
  return "other";
}

/** Waits until every session's droid printed its soak summary; says which did not when time runs out. */
async function waitForSummaries(
  caller: TestCaller,
  sessions: string[],
  deadline: number,
  log: (line: string) => void,
) {
  const done = new Set<string>();
  const since = new Map<string, number>();
  while (done.size < sessions.length) {
    for (const sessionId of sessions) {
      if (done.has(sessionId)) continue;
      const { events, next_index } = await caller.ok<{ events: SessionEvent[]; next_index: number }>(
        "session",
        {
          action: "events",
          session_id: sessionId,
          since_index: since.get(sessionId) ?? 0,
          limit: 1000,
        },
      );
      since.set(sessionId, next_index);
      if (
        events.some(
          (e) => e.type === "droid_output" && (e.data as { op?: string } | undefined)?.op === "soak",
        )
      ) {
        done.add(sessionId);
      }
    }
    if (done.size === sessions.length) return;
    if (Date.now() > deadline) {
      log(`still running: ${sessions.filter((s) => !done.has(s)).join(", ")}`);
      return;
    }
    await sleep(1_000);
  }
}

async function readLog(caller: TestCaller, sessionId: string): Promise<SessionEvent[]> {
  const events: SessionEvent[] = [];
  let since = 0;
  for (let page = 0; page < 10_000; page++) {
    const { events: batch, next_index } = await caller.ok<{ events: SessionEvent[]; next_index: number }>(
      "session",
      {
        action: "events",
        session_id: sessionId,
        since_index: since,
        limit: 1000,
      },
    );
    events.push(...batch);
    if (batch.length === 0) break;
    since = next_index;
  }
  return events;
}
