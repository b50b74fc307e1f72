/**
 * Method descriptors (`protocol/rpc/method.ts`) on two RpcPeers linked in memory, and on the
 * Durable Objects' MethodTable: params parsed by the descriptor and refused as before (-32602,
 * "invalid params: …"), results parsed by it, notifications, and the wire text unchanged.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createLogger } from "../../lib/log.js";
import { RpcPeer } from "../../lib/rpc/peer.js";
import { RpcError, RpcErrorCode } from "../../protocol/rpc/errors.js";
import { encodeNotification, encodeRequest } from "../../protocol/rpc/messages.js";
import {
  checkResult,
  defineNotification,
  defineRequest,
  EmptyResultSchema,
  methodNames,
} from "../../protocol/rpc/method.js";
import { SocketMethod, SocketMethods } from "../../protocol/socket.js";
import { TunnelMethod, TunnelMethods } from "../../protocol/tunnel.js";
import { MethodTable } from "../../worker/src/rpc/method-table.js";

const logger = createLogger({ name: "method-test", level: process.env.TEST_LOG_LEVEL ?? "silent", fd: 2 });

const add = defineRequest("add", {
  params: z.object({ x: z.number(), y: z.number().default(1) }),
  result: z.object({ sum: z.number(), unit: z.string().default("none") }),
});
const lie = defineRequest("lie", { params: z.object({}), result: z.object({ sum: z.number() }) });
const tick = defineNotification("tick", { params: z.object({ n: z.number().int() }) });

/** Two peers whose sends reach the other asynchronously; `sent` holds what `a` wrote. */
function pair() {
  const sent: string[] = [];
  let a!: RpcPeer;
  let b!: RpcPeer;
  a = new RpcPeer({
    send: (text) => {
      sent.push(text);
      setImmediate(() => b.receive(text));
      return true;
    },
    maxMessageBytes: 64 * 1024,
    logger,
  });
  b = new RpcPeer({
    send: (text) => {
      setImmediate(() => a.receive(text));
      return true;
    },
    maxMessageBytes: 64 * 1024,
    logger,
  });
  return { a, b, sent };
}

describe("method descriptors", () => {
  it("carry their name, schemas and kind", () => {
    expect(add).toMatchObject({ kind: "request", name: "add" });
    expect(tick).toMatchObject({ kind: "notification", name: "tick" });
    expect("result" in tick).toBe(false);
  });

  it("derive the name maps, which keep every name the protocols had", () => {
    expect(methodNames({ add, tick })).toEqual({ add: "add", tick: "tick" });
    expect(SocketMethod).toEqual({
      hello: "hello",
      ping: "ping",
      callerTool: "caller_tool",
      callerToolsConfig: "caller_tools_config",
      agentStart: "agent_start",
      agentMessage: "agent_message",
      agentStop: "agent_stop",
      agentInterrupt: "agent_interrupt",
      approval: "approval",
      agentEvents: "agent_events",
      agentEventsAck: "agent_events_ack",
      oublietteTools: "oubliette_tools",
      oublietteCallTool: "oubliette_call_tool",
      sessionMessage: "session_message",
      sessionEvents: "session_events",
      gitList: "git_list",
      gitPush: "git_push",
      gitFetch: "git_fetch",
      gitFetchRead: "git_fetch_read",
      oublietteToolsChanged: "oubliette_tools_changed",
    });
    expect(TunnelMethod).toEqual({
      hostHello: "host_hello",
      sessionStart: "session_start",
      sessionStop: "session_stop",
      projectEnsure: "project_ensure",
      projectStop: "project_stop",
      projectRemove: "project_remove",
      projectRefresh: "project_refresh",
      workspaceCreate: "workspace_create",
      workspaceDelete: "workspace_delete",
      workspaceRead: "workspace_read",
      workspacePush: "workspace_push",
      containerExec: "container_exec",
      containerLogs: "container_logs",
      workspaceSetup: "workspace_setup",
      projectNetwork: "project_network",
      projectNetworkBlocked: "project_network_blocked",
      projectProgress: "project_progress",
      workspaceGit: "workspace_git",
      workspacePullRequest: "workspace_pull_request",
      sessionHello: "session_hello",
      callerTool: "caller_tool",
      approval: "approval",
      sessionEvents: "session_events",
      sessionEnd: "session_end",
      callerToolsConfig: "caller_tools_config",
      droidMessage: "droid_message",
      droidInterrupt: "droid_interrupt",
      sessionUsage: "session_usage",
      gitPushed: "git_pushed",
      networkBlocked: "network_blocked",
      networkUsage: "network_usage",
      setupEvent: "setup_event",
      oublietteTools: "oubliette_tools",
      oublietteCall: "oubliette_call_tool",
      childMessage: "session_message",
      ownEvents: "session_events_read",
    });
    // Notifications are the ones that never had an answer.
    const notifications = [...Object.values(SocketMethods), ...Object.values(TunnelMethods)]
      .filter((m) => m.kind === "notification")
      .map((m) => m.name);
    expect(notifications.sort()).toEqual(
      [
        "agent_events",
        "agent_events_ack",
        "caller_tools_config",
        "caller_tools_config",
        "droid_interrupt",
        "oubliette_tools_changed",
        "session_usage",
        "network_usage",
        "project_network_blocked",
        "project_progress",
        "setup_event",
      ].sort(),
    );
  });

  it("encode the same text as the bare name", () => {
    expect(encodeRequest(7, add, { x: 1 })).toBe(encodeRequest(7, "add", { x: 1 }));
    expect(encodeNotification(tick, { n: 1 })).toBe('{"jsonrpc":"2.0","method":"tick","params":{"n":1}}');
  });
});

describe("RpcPeer with descriptors", () => {
  it("parses params for the handler and the result for the caller; the params go out as given", async () => {
    const { a, b, sent } = pair();
    const seen: unknown[] = [];
    b.handle(add, (params) => {
      seen.push(params);
      return { sum: params.x + params.y };
    });
    const result = await a.request(add, { x: 2 });
    // The handler saw the default; the caller's result has the result schema's default.
    expect(seen).toEqual([{ x: 2, y: 1 }]);
    expect(result).toEqual({ sum: 3, unit: "none" });
    expect(sent[0]).toBe('{"jsonrpc":"2.0","id":1,"method":"add","params":{"x":2}}');
    // The bare name still works, unparsed (the generic forwarder's form).
    expect(await a.request("add", { x: 2 })).toEqual({ sum: 3 });
  });

  it("refuses bad params with -32602 and the issues, as the (name, schema) form did", async () => {
    const { a, b } = pair();
    let ran = false;
    b.handle(add, () => {
      ran = true;
      return { sum: 0 };
    });
    const error = await a.request("add", { x: "2" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RpcError);
    expect(error).toMatchObject({
      code: RpcErrorCode.InvalidParams,
      message: "invalid params: x: Invalid input: expected number, received string",
    });
    expect(ran).toBe(false);
  });

  it("rejects a result that is not what the descriptor says with a local InternalError", async () => {
    const { a, b } = pair();
    b.handle(lie, () => ({ sum: "three" }) as unknown as { sum: number });
    await expect(a.request(lie, {})).rejects.toMatchObject({
      code: RpcErrorCode.InternalError,
      message: "invalid result of lie: sum: Invalid input: expected number, received string",
    });
    // An error answer is the peer's error, as before.
    b.handle(add, () => {
      throw new RpcError(RpcErrorCode.ServerError, "no", { reason: "busy" });
    });
    await expect(a.request(add, { x: 1 })).rejects.toMatchObject({ code: -32000, data: { reason: "busy" } });
  });

  it("delivers notifications parsed and drops ones whose params do not parse", async () => {
    const { a, b, sent } = pair();
    const got: number[] = [];
    b.onNotification(tick, (params) => got.push(params.n));
    expect(a.notify(tick, { n: 1 })).toBe(true);
    a.notify("tick", { n: 1.5 });
    a.notify("tick", "nope");
    expect(a.notify(tick, { n: 2 })).toBe(true);
    await new Promise((r) => setTimeout(r, 10));
    expect(got).toEqual([1, 2]);
    expect(sent[0]).toBe('{"jsonrpc":"2.0","method":"tick","params":{"n":1}}');
  });

  it("serves a protocol descriptor with its defaults", async () => {
    const { a, b } = pair();
    b.handle(SocketMethods.agentStart, (params) => ({ pid: params.agent.runtime === "scripted" ? 1 : 2 }));
    const started = await a.request(SocketMethods.agentStart, {
      session_id: "ses_000000000000000000000001",
      session_token: "secret",
      cwd: "/workspace/default",
    });
    expect(started.pid).toBe(1);
  });
});

describe("MethodTable with descriptors", () => {
  it("parses params, refuses bad ones with the same -32602, and runs notifications", () => {
    const got: string[] = [];
    const table = new MethodTable<string>()
      .handle(add, (params, ctx) => ({ sum: params.x + params.y, unit: ctx }))
      .onNotification(tick, (params, ctx) => got.push(`${ctx}:${params.n}`));
    expect(table.dispatch("add", { x: 1, y: 2 }, "m")).toEqual({ sum: 3, unit: "m" });
    expect(() => table.dispatch("add", { x: "2" }, "m")).toThrow(
      expect.objectContaining({
        code: RpcErrorCode.InvalidParams,
        message: "invalid params: x: Invalid input: expected number, received string",
      }),
    );
    expect(() => table.dispatch("nope", {}, "m")).toThrow(
      expect.objectContaining({ code: RpcErrorCode.MethodNotFound }),
    );
    table.notified("tick", { n: 3 }, "m");
    table.notified("tick", { n: "x" }, "m");
    table.notified("other", {}, "m");
    expect(got).toEqual(["m:3"]);
  });
});

describe("checkResult", () => {
  it("passes a fitting value on as it is, and refuses one that does not fit", () => {
    const value = { content: [], extra: { kept: true }, isError: false };
    expect(checkResult(SocketMethods.oublietteCallTool, value)).toBe(value);
    expect(checkResult(defineRequest("e", { params: z.unknown(), result: EmptyResultSchema }), {})).toEqual(
      {},
    );
    expect(() => checkResult(SocketMethods.oublietteTools, { tools: "none" })).toThrow(
      expect.objectContaining({ code: RpcErrorCode.InternalError }),
    );
  });
});
