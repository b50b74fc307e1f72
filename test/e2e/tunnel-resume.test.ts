/**
 * The host-agent's tunnel is cut (a real TCP proxy drops every connection and refuses new ones)
 * while a caller tool call is pending; when the network comes back the call completes, once.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import type { SessionEvent } from "../../protocol/events.js";
import { TestCaller } from "../support/caller.js";
import { dockerContext } from "../support/docker-context.js";
import { TestStack } from "../support/stack.js";
import { TcpProxy } from "../support/tcp-proxy.js";
import { runStep, spawnDroid, text } from "./support.js";

let stack: TestStack;
let proxy: TcpProxy;
let caller: TestCaller;
let reconnects = 0;

beforeAll(async () => {
  stack = await TestStack.start();
  proxy = await TcpProxy.start(Number(new URL(stack.url).port));
  const host = await stack.addHost({
    runtime: "docker",
    image: dockerContext().droidImage,
    workerUrl: proxy.url,
    // The faults close the tunnel's sockets, so they are seen at once; the heartbeat only finds a
    // silent peer, and a tighter one mistakes a loaded machine's pause for a dead tunnel.
    heartbeatMs: 2_000,
    // Each test cuts the network again; keep the backoff from growing past the tests' patience.
    reconnectMaxMs: 1_000,
  });
  host.process.stdout?.on("data", (chunk: Buffer) => {
    reconnects += chunk.toString().split('"tunnel connected"').length - 1;
  });
  caller = await TestCaller.connect(stack.mcpUrl, stack.adminToken);
});

afterAll(async () => {
  await caller?.close();
  await stack?.stop();
  await proxy?.close();
});

const requests = (sessionId: string) =>
  caller.events.filter((e) => e.type === "caller_tool_request" && e.session_id === sessionId);

async function pending(sessionId: string, id: string) {
  const before = requests(sessionId).length;
  const call = runStep(
    caller,
    sessionId,
    { op: "call", id, name: "ant_send_response", arguments: { id } },
    60_000,
  );
  await caller.waitFor(
    (e) =>
      e.type === "caller_tool_request" && e.session_id === sessionId && requests(sessionId).length > before,
  );
  const request = requests(sessionId).at(-1) as Extract<SessionEvent, { type: "caller_tool_request" }>;
  return { call, request };
}

async function cutUntilNoticed(): Promise<number> {
  const seen = reconnects;
  proxy.cut();
  // Both tunnels (host channel and session tunnel) are down: nothing reaches the Worker.
  await new Promise((r) => setTimeout(r, 1_500));
  return seen;
}

it("completes a call answered while the tunnel is down, once it comes back", async () => {
  const sessionId = await spawnDroid(caller);
  const { call, request } = await pending(sessionId, "answered-while-cut");
  const seen = await cutUntilNoticed();
  await caller.respond(sessionId, request.request_id, { result: "answered while cut" });
  proxy.restore();
  const out = await call;
  expect(out.is_error).toBe(false);
  expect(text(out)).toBe("answered while cut");
  expect(reconnects).toBeGreaterThan(seen);
  expect(requests(sessionId)).toHaveLength(1);
});

it("completes a call answered after the tunnel is restored, without a duplicate request", async () => {
  const sessionId = await spawnDroid(caller);
  const { call, request } = await pending(sessionId, "answered-after");
  const seen = await cutUntilNoticed();
  proxy.restore();
  await expect.poll(() => reconnects, { timeout: 15_000 }).toBeGreaterThan(seen);
  await caller.respond(sessionId, request.request_id, { result: "answered after" });
  const out = await call;
  expect(out.is_error).toBe(false);
  expect(text(out)).toBe("answered after");
  // The host re-sent the call on reconnect; the session object recognised it.
  expect(requests(sessionId)).toHaveLength(1);
});

it("relays a call the droid makes while the tunnel is down once it is back", async () => {
  const sessionId = await spawnDroid(caller);
  caller.answerWith((r) => ({ result: `late ${String(r.arguments.id)}` }));
  try {
    // The droid waits, then calls, while the host cannot reach the Worker.
    const script = caller.runScript(sessionId, {
      id: "call-while-cut",
      steps: [
        { op: "print", data: "armed" },
        { op: "sleep", ms: 1_500 },
        { op: "call", id: "made-while-cut", name: "ant_send_response", arguments: { id: 1 } },
      ],
    });
    await caller.waitForOutput(sessionId, (d) => d.op === "print" && d.data === "armed");
    proxy.cut();
    await new Promise((r) => setTimeout(r, 3_000));
    proxy.restore();
    await script;
    const out = caller.droidOutputs(sessionId).find((d) => d.id === "made-while-cut");
    expect(out?.is_error).toBe(false);
    expect(text(out ?? {})).toBe("late 1");
  } finally {
    proxy.restore();
    caller.answerWith(() => "ignore");
  }
});
