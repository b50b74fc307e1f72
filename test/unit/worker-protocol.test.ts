import { describe, expect, it } from "vitest";
import {
  CallerToolListSchema,
  CallerToolOutcomeSchema,
  CallerToolsConfigSchema,
  prefixedToolName,
} from "../../protocol/caller-tools.js";
import { loggerFor, SessionEventSchema } from "../../protocol/events.js";
import { SubscriberFrameSchema } from "../../protocol/subscriber.js";
import {
  HostHelloParamsSchema,
  SessionEventsParamsSchema,
  SessionHelloResultSchema,
  TunnelCallerToolParamsSchema,
} from "../../protocol/tunnel.js";

describe("caller tools", () => {
  it("accepts tools with an object input schema and refuses others", () => {
    expect(CallerToolListSchema.safeParse([{ name: "send", inputSchema: { type: "object" } }]).success).toBe(
      true,
    );
    expect(CallerToolListSchema.safeParse([{ name: "send", inputSchema: { type: "string" } }]).success).toBe(
      false,
    );
    expect(CallerToolListSchema.safeParse([{ name: "bad name" }]).success).toBe(false);
  });

  it("refuses the same tool name twice", () => {
    const parsed = CallerToolListSchema.safeParse([{ name: "a" }, { name: "a" }]);
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues[0]?.message).toContain("twice");
  });

  it.each([
    ["ant", true],
    ["my-app-2", true],
    ["-ant", false],
    ["an_t", false],
    ["a".repeat(33), false],
  ])("judges caller_id %j: %s", (callerId, ok) => {
    const config = { caller_id: callerId, tools: [], timeout_ms: 1, backstop_ms: 2 };
    expect(CallerToolsConfigSchema.safeParse(config).success).toBe(ok);
  });

  it("prefixes tool names with the caller id", () => {
    expect(prefixedToolName("ant", "send_response")).toBe("ant_send_response");
  });

  it("types outcomes by ok", () => {
    expect(CallerToolOutcomeSchema.safeParse({ ok: true, result: [1] }).success).toBe(true);
    expect(
      CallerToolOutcomeSchema.safeParse({ ok: false, error: { reason: "timeout", message: "late" } }).success,
    ).toBe(true);
    expect(
      CallerToolOutcomeSchema.safeParse({ ok: false, error: { reason: "boom", message: "" } }).success,
    ).toBe(false);
  });
});

describe("tunnel messages", () => {
  it("parses the host hello and refuses missing fields", () => {
    const hello = {
      v: 2,
      host_id: "h1",
      runtime: "docker",
      agent_version: "1",
      sessions: [],
      max_sessions: 4,
    };
    expect(HostHelloParamsSchema.safeParse(hello).success).toBe(true);
    expect(HostHelloParamsSchema.safeParse({ ...hello, max_sessions: 0 }).success).toBe(false);
    expect(HostHelloParamsSchema.safeParse({ ...hello, runtime: "vm" }).success).toBe(false);
  });

  it("bounds session_events batches and requires a positive seq per event", () => {
    const batch = (first: number, n: number) => ({
      events: Array.from({ length: n }, (_, i) => ({ seq: first + i, type: "droid_log", text: "x" })),
    });
    expect(SessionEventsParamsSchema.safeParse(batch(1, 1)).success).toBe(true);
    expect(SessionEventsParamsSchema.safeParse(batch(0, 1)).success).toBe(false);
    expect(SessionEventsParamsSchema.safeParse(batch(1, 0)).success).toBe(false);
    expect(SessionEventsParamsSchema.safeParse(batch(1, 257)).success).toBe(false);
  });

  it("requires a caller_tool call id and object arguments", () => {
    const call = { call_id: "c-1", tool: "t", arguments: {} };
    expect(TunnelCallerToolParamsSchema.safeParse(call).success).toBe(true);
    expect(TunnelCallerToolParamsSchema.safeParse({ ...call, arguments: [] }).success).toBe(false);
    expect(TunnelCallerToolParamsSchema.safeParse({ ...call, call_id: "" }).success).toBe(false);
    expect(TunnelCallerToolParamsSchema.safeParse({ ...call, call_id: "has space" }).success).toBe(false);
  });

  it("parses the session's hello answer with its config", () => {
    const welcome = {
      session_id: "s",
      stored_event_seq: 0,
      config: { caller_id: null, tools: [], timeout_ms: 1000, backstop_ms: 76_000 },
    };
    expect(SessionHelloResultSchema.safeParse(welcome).success).toBe(true);
  });
});

describe("session events", () => {
  const base = { session_id: "s", index: 0, ts: "t" };

  it("routes a job's events in a session's log to oubliette.job", () => {
    const job = { ...base, job_id: "job_0123456789abcdef01234567", tool: "container.exec" };
    const started = SessionEventSchema.parse({ ...job, type: "job_started", project_id: "prj_x" });
    expect(loggerFor(started)).toBe("oubliette.job");
    const ended = SessionEventSchema.parse({ ...job, type: "job_ended", project_id: null, status: "failed" });
    expect(loggerFor(ended)).toBe("oubliette.job");
    expect(
      SessionEventSchema.safeParse({ ...job, type: "job_ended", project_id: null, status: "running" })
        .success,
    ).toBe(false);
  });

  it("routes caller tool requests and failures to oubliette.caller_tool and the rest to oubliette.session", () => {
    const request = SessionEventSchema.parse({
      ...base,
      type: "caller_tool_request",
      request_id: "r",
      caller_id: "ant",
      tool: "t",
      arguments: {},
      deadline: "d",
    });
    expect(loggerFor(request)).toBe("oubliette.caller_tool");
    const failed = SessionEventSchema.parse({
      ...base,
      type: "caller_tool_failed",
      request_id: "r",
      tool: "t",
      reason: "cancelled",
      message: "m",
    });
    expect(loggerFor(failed)).toBe("oubliette.caller_tool");
    expect(loggerFor(SessionEventSchema.parse({ ...base, type: "droid_log", text: "x" }))).toBe(
      "oubliette.session",
    );
  });
});

describe("subscriber frames", () => {
  it("accepts a caller_tool_response with a result or an error", () => {
    expect(
      SubscriberFrameSchema.safeParse({ type: "caller_tool_response", request_id: "r", result: 1 }).success,
    ).toBe(true);
    expect(SubscriberFrameSchema.safeParse({ type: "caller_tool_response", request_id: "" }).success).toBe(
      false,
    );
    expect(SubscriberFrameSchema.safeParse({ type: "subscribe" }).success).toBe(false);
  });
});
