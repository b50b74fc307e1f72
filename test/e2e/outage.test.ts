/**
 * One authority per call, through real network cuts (a TCP proxy between the host-agent and the
 * Worker that drops every connection and refuses new ones): the session object decides each
 * call's outcome, so after an outage longer than the caller's deadline the caller and the droid
 * still agree on every call; the droid's cancellation crosses every hop; the session tunnels come
 * back with their host channel, not after their own backoffs.
 */
import { readFile } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SessionEvent } from "../../protocol/events.js";
import type { HostAgent } from "../../scripts/stack/host-agent-process.js";
import { TestCaller } from "../support/caller.js";
import { dockerContext } from "../support/docker-context.js";
import { TestStack } from "../support/stack.js";
import { TcpProxy } from "../support/tcp-proxy.js";
import { runStep, spawnDroid, text } from "./support.js";

type RequestEvent = Extract<SessionEvent, { type: "caller_tool_request" }>;

let stack: TestStack;
let proxy: TcpProxy;
let host: HostAgent;
let caller: TestCaller;
/** What the caller was told for each answer it sent: request_id → "delivered" or the error text. */
const answers = new Map<string, string>();

beforeAll(async () => {
  stack = await TestStack.start();
  proxy = await TcpProxy.start(Number(new URL(stack.url).port));
  host = await stack.addHost({
    runtime: "docker",
    image: dockerContext().droidImage,
    workerUrl: proxy.url,
    heartbeatMs: 500,
    // Long enough that, without following the host channel, a tunnel would come back seconds late.
    reconnectMaxMs: 8_000,
  });
  caller = await TestCaller.connect(stack.mcpUrl, stack.adminToken);
});

afterAll(async () => {
  await caller?.close();
  await stack?.stop();
  await proxy?.close();
});

/** Answers every request at once (echoing its n), recording what the caller is told. */
function answerEverything(): void {
  caller.answerWith(async (request) => {
    const reply = await caller.respond(request.session_id, request.request_id, {
      result: `n=${String(request.arguments.n)}`,
    });
    answers.set(request.request_id, reply.isError ? JSON.stringify(reply.content) : "delivered");
    return "ignore" as const;
  });
}

interface TunnelLine {
  time: string;
  msg: string;
  url?: string;
}

async function hostLog(): Promise<TunnelLine[]> {
  const text = await readFile(host.logFile, "utf8");
  return text
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as TunnelLine);
}

describe("an outage longer than the caller's deadline", () => {
  it("ends with the caller and the droid agreeing on every call, none lost or duplicated", async () => {
    answerEverything();
    const sessions = await Promise.all([0, 1, 2].map(() => spawnDroid(caller, { timeoutSeconds: 3 })));
    const soaks = sessions.map((sessionId, i) =>
      caller.runScript(
        sessionId,
        {
          id: `outage-${i}`,
          steps: [
            {
              op: "soak",
              name: "ant_send_response",
              start: i * 1000,
              count: 40,
              concurrency: 2,
              pause_ms: 150,
            },
          ],
        },
        120_000,
      ),
    );
    await new Promise((r) => setTimeout(r, 1_000));
    const cutAt = Date.now();
    proxy.cut();
    await new Promise((r) => setTimeout(r, 8_000));
    proxy.restore();
    await Promise.all(soaks);

    for (const sessionId of sessions) {
      const outcomes = caller.droidOutputs(sessionId).filter((d) => d.op === "soak_call");
      const requests = caller.events.filter(
        (e): e is RequestEvent => e.type === "caller_tool_request" && e.session_id === sessionId,
      );
      expect(outcomes).toHaveLength(40);
      // Every call waited out the outage and got the caller's answer: the deadline runs at the
      // session object, from when the call reached it, not in the host-agent or the client.
      for (const outcome of outcomes) {
        expect(outcome).toMatchObject({ ok: true, text: `n=${String(outcome.n)}` });
        const asked = requests.filter((r) => r.arguments.n === outcome.n);
        expect(new Set(asked.map((r) => r.request_id)).size).toBe(1);
        expect(answers.get(asked[0]?.request_id ?? "")).toBe("delivered");
      }
      // Some of them were made while the network was cut.
      expect(outcomes.some((o) => Number(o.ms) >= 4_000)).toBe(true);
    }
    expect(Date.now() - cutAt).toBeGreaterThan(8_000);
  }, 180_000);

  it("brings the session tunnels back with the host channel, not after their own backoffs", async () => {
    const sessions = await Promise.all([0, 1, 2].map(() => spawnDroid(caller)));
    const lines = (await hostLog()).length;
    proxy.cut();
    // Long enough for every backoff to grow to several seconds.
    await new Promise((r) => setTimeout(r, 12_000));
    const restoredAt = Date.now();
    proxy.restore();
    await expect
      .poll(
        async () =>
          (await hostLog()).slice(lines).filter((l) => l.msg === "registered with the Worker").length,
        {
          timeout: 20_000,
        },
      )
      .toBeGreaterThan(0);
    await new Promise((r) => setTimeout(r, 2_000));
    const after = (await hostLog()).slice(lines).filter((l) => Date.parse(l.time) >= restoredAt);
    const registered = after.find((l) => l.msg === "registered with the Worker");
    expect(registered).toBeDefined();
    for (const sessionId of sessions) {
      const back = after.find((l) => l.msg === "tunnel connected" && l.url?.includes(sessionId));
      expect(back, `session ${sessionId} tunnel reconnected`).toBeDefined();
      const lag = Date.parse(back?.time ?? "") - Date.parse(registered?.time ?? "");
      expect(lag).toBeLessThan(1_000);
    }
    // And the relay works on every one of them.
    caller.answerWith((r) => ({ result: `after ${r.session_id}` }));
    for (const sessionId of sessions) {
      const out = await runStep(caller, sessionId, { op: "call", name: "ant_send_response", arguments: {} });
      expect(text(out)).toBe(`after ${sessionId}`);
    }
  }, 120_000);
});

describe("cancellation", () => {
  it("crosses every hop: the caller hears nobody waits, and its late answer is refused", async () => {
    caller.answerWith(() => "ignore");
    const sessionId = await spawnDroid(caller);
    const before = caller.events.length;
    // The droid gives up after 1 s (its MCP client cancels the request).
    const out = await runStep(caller, sessionId, {
      op: "call",
      id: "gives-up",
      name: "ant_send_response",
      arguments: {},
      timeout_ms: 1_000,
    });
    expect(out.error ?? out.is_error).toBeTruthy();
    const request = caller.events.find(
      (e, i) => i >= before && e.type === "caller_tool_request" && e.session_id === sessionId,
    ) as RequestEvent;
    const cancelled = await caller.waitFor(
      (e) =>
        e.type === "caller_tool_failed" && e.session_id === sessionId && e.request_id === request.request_id,
      10_000,
      "the cancel event",
    );
    expect(cancelled).toMatchObject({ reason: "cancelled", message: expect.stringMatching(/nobody waits/) });
    const late = await caller.respond(sessionId, request.request_id, { result: "too late" });
    expect(late.isError).toBe(true);
    expect(JSON.stringify(late.content)).toMatch(/request_cancelled/);
  });
});
