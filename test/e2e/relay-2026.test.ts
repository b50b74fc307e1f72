/**
 * The caller tool relay and long jobs with the official MCP SDK clients of both eras on one
 * Worker (wrangler dev, a Docker host-agent, the scripted droid in a real container):
 * - 2025-11-25: the SDK 1.x client (TestCaller): initialize, Mcp-Session-Id, events as
 *   notifications/message on its stream, a long call answered with a job id and `job wait`;
 * - 2026-07-28: the SDK v2 client pinned to the revision (no initialize, no session): events by
 *   `session events` long-poll and by `subscriptions/listen`, the same long call answered with a
 *   job id — and as an MCP task to a request that declares the Tasks extension (sent raw: the
 *   SDK v2 client rejects `resultType: "task"`), polled with `tasks/get`;
 * - both at once on one session, each seeing every event once.
 * The job wait bound is short (3 s) so that a 6 s exec outlasts it; spawns therefore go through
 * `wait: false` and `job wait` (droid-driver.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SessionEvent } from "../../protocol/events.js";
import { TestCaller } from "../support/caller.js";
import { dockerContext } from "../support/docker-context.js";
import { ModernCaller } from "../support/modern-caller.js";
import { modernRequest, type RawReply, TASKS_EXTENSION } from "../support/modern-request.js";
import type { Answer, CallerToolRequest } from "../support/session-follower.js";
import { TestStack } from "../support/stack.js";
import { type Spawned, spawnLending } from "./droid-driver.js";
import { runStep, SEND_RESPONSE, text } from "./support.js";

const JOB_BOUND_MS = 3_000;
const EXEC_MS = 6_000;

let stack: TestStack;

beforeAll(async () => {
  stack = await TestStack.start({
    vars: {
      OUBLIETTE_JOB_SHORT_WAIT_MS: String(JOB_BOUND_MS),
      OUBLIETTE_JOB_MEDIUM_WAIT_MS: String(JOB_BOUND_MS),
      OUBLIETTE_TASK_SHORTCUT_MS: "500",
      OUBLIETTE_KEEPALIVE_MS: "1000",
    },
  });
  await stack.addHost({ runtime: "docker", image: dockerContext().droidImage });
}, 300_000);

afterAll(async () => {
  await stack?.stop();
});

/** `container exec` of a node script that prints `marker` after EXEC_MS (past the job bound). */
function longExec(projectId: string, marker: string) {
  return {
    action: "exec",
    project_id: projectId,
    command: ["node", "-e", `setTimeout(() => console.log(${JSON.stringify(marker)}), ${EXEC_MS})`],
    timeout_seconds: 60,
  };
}

/** The caller tool requests of `sessionId` a caller saw. */
function requestsIn(events: SessionEvent[], sessionId: string): CallerToolRequest[] {
  return events.filter(
    (e): e is CallerToolRequest => e.type === "caller_tool_request" && e.session_id === sessionId,
  );
}

interface JobView {
  job_id: string;
  status: string;
  result?: { exit_code?: number; stdout?: string };
}

describe("2025-11-25: the SDK 1.x client (initialize, Mcp-Session-Id, notifications/message)", () => {
  let caller: TestCaller;
  let projectId = "";
  let spawned: Spawned;
  let answer: (request: CallerToolRequest) => Answer = () => "ignore";

  beforeAll(async () => {
    caller = await TestCaller.connect(stack.mcpUrl, stack.adminToken, "caller-2025");
    caller.answerWith((request) => answer(request));
    projectId = await caller.newProject();
    spawned = await spawnLending(caller, projectId, "ant", [SEND_RESPONSE]);
  }, 180_000);

  afterAll(async () => {
    await caller?.call("session", { action: "end", session_id: spawned?.sessionId });
    await caller?.close();
  });

  it("answers a spawn with wait: false with a job id at once; job wait gives the session", () => {
    expect(caller.transport.sessionId).toMatch(/.+/);
    expect(spawned.pointer.job_id).toMatch(/^job_/);
    expect(spawned.waited).toMatchObject({ job_id: spawned.pointer.job_id, status: "complete" });
    expect(spawned.sessionId).toMatch(/^ses_/);
  });

  it("relays the droid's call as a caller_tool_request notification and returns the caller's answer", async () => {
    answer = (request) => ({ result: { era: "2025", echo: request.arguments } });
    const out = await runStep(caller, spawned.sessionId, {
      op: "call",
      name: "ant_send_response",
      arguments: { message: "hello 2025" },
    });
    expect(out.is_error).toBe(false);
    expect(JSON.parse(text(out))).toEqual({ era: "2025", echo: { message: "hello 2025" } });
    const requests = requestsIn(caller.events, spawned.sessionId);
    expect(requests).toHaveLength(1);
    expect(requests[0]).toMatchObject({
      caller_id: "ant",
      tool: "send_response",
      arguments: { message: "hello 2025" },
    });
    expect(caller.loggers[caller.events.indexOf(requests[0] as SessionEvent)]).toBe("oubliette.caller_tool");
  });

  it("answers a long container exec with a job id past the bound; job wait gives the outcome", async () => {
    const started = await caller.call("container", longExec(projectId, "late-2025"));
    expect(started.isError).toBeFalsy();
    const pointer = started.structuredContent as { job_id: string; status: string };
    expect(pointer).toMatchObject({ job_id: expect.stringMatching(/^job_/), status: "running" });
    const waited = await caller.ok<JobView>("job", {
      action: "wait",
      job_id: pointer.job_id,
      wait_seconds: 30,
    });
    expect(waited).toMatchObject({ job_id: pointer.job_id, status: "complete", result: { exit_code: 0 } });
    expect(waited.result?.stdout).toContain("late-2025");
  }, 60_000);
});

describe("2026-07-28: the SDK v2 client pinned to the revision (stateless)", () => {
  let poller: ModernCaller;
  let projectId = "";
  let spawned: Spawned;
  let pollerAnswer: (request: CallerToolRequest) => Answer = () => "ignore";

  beforeAll(async () => {
    poller = await ModernCaller.connect(stack.mcpUrl, stack.adminToken, {
      name: "poller-2026",
      feed: "poll",
    });
    poller.answerWith((request) => pollerAnswer(request));
    projectId = await poller.newProject();
    spawned = await spawnLending(poller, projectId, "bee", [SEND_RESPONSE]);
  }, 180_000);

  afterAll(async () => {
    await poller?.call("session", { action: "end", session_id: spawned?.sessionId });
    await poller?.close();
  });

  it("connects by server/discover, never initialize, and mirrors project_id into Mcp-Param-Project-Id", () => {
    expect(poller.client.getProtocolEra()).toBe("modern");
    expect(poller.client.getNegotiatedProtocolVersion()).toBe("2026-07-28");
    expect(poller.sent[0]?.method).toBe("server/discover");
    expect(poller.sent.map((s) => s.method)).not.toContain("initialize");
    const withProject = poller.sent.filter((s) => s.projectId !== undefined);
    expect(withProject.length).toBeGreaterThan(0);
    for (const sent of withProject)
      expect(sent).toMatchObject({ paramProjectId: sent.projectId, status: 200 });
  });

  it("answers a spawn with wait: false with a job id at once; job wait gives the session, present by deadline", async () => {
    expect(spawned.pointer.job_id).toMatch(/^job_/);
    expect(spawned.waited).toMatchObject({ job_id: spawned.pointer.job_id, status: "complete" });
    const info = await poller.ok<{ caller_presence: string }>("session", {
      action: "get",
      session_id: spawned.sessionId,
    });
    expect(info.caller_presence).toBe("deadline");
  });

  it("relays the droid's call as a caller_tool_request seen by session events long-poll", async () => {
    pollerAnswer = (request) => ({ result: { era: "2026", feed: "poll", echo: request.arguments } });
    try {
      const out = await runStep(poller, spawned.sessionId, {
        op: "call",
        name: "bee_send_response",
        arguments: { message: "hello poll" },
      });
      expect(out.is_error).toBe(false);
      expect(JSON.parse(text(out))).toEqual({ era: "2026", feed: "poll", echo: { message: "hello poll" } });
      const requests = requestsIn(poller.events, spawned.sessionId);
      expect(requests).toHaveLength(1);
      expect(requests[0]).toMatchObject({
        caller_id: "bee",
        tool: "send_response",
        arguments: { message: "hello poll" },
      });
    } finally {
      pollerAnswer = () => "ignore";
    }
  });

  it("relays the droid's call as notifications/resources/updated on a subscriptions/listen stream", async () => {
    const listener = await ModernCaller.connect(stack.mcpUrl, stack.adminToken, {
      name: "listener-2026",
      feed: "listen",
    });
    try {
      listener.answerWith((request) => ({
        result: { era: "2026", feed: "listen", echo: request.arguments },
      }));
      listener.follow(spawned.sessionId);
      // The listen replays the session's log from its first event: the droid's ready line is there.
      await listener.waitForOutput(spawned.sessionId, (d) => d.op === "ready");
      const out = await runStep(poller, spawned.sessionId, {
        op: "call",
        name: "bee_send_response",
        arguments: { message: "hello listen" },
      });
      expect(out.is_error).toBe(false);
      expect(JSON.parse(text(out))).toEqual({
        era: "2026",
        feed: "listen",
        echo: { message: "hello listen" },
      });
      const heard = requestsIn(listener.events, spawned.sessionId).filter(
        (r) => r.arguments.message === "hello listen",
      );
      expect(heard).toHaveLength(1);
      expect(listener.feedErrors).toEqual([]);
      expect(listener.malformed).toEqual([]);
    } finally {
      await listener.close();
    }
  });

  it("answers a long container exec with a job id past the bound (no Tasks); job wait gives the outcome", async () => {
    const started = await poller.call("container", longExec(projectId, "late-2026"));
    expect(started.isError).toBeFalsy();
    const pointer = started.structuredContent as { job_id: string; status: string };
    expect(pointer).toMatchObject({ job_id: expect.stringMatching(/^job_/), status: "running" });
    const waited = await poller.ok<JobView>("job", {
      action: "wait",
      job_id: pointer.job_id,
      wait_seconds: 30,
    });
    expect(waited).toMatchObject({ job_id: pointer.job_id, status: "complete", result: { exit_code: 0 } });
    expect(waited.result?.stdout).toContain("late-2026");
  }, 60_000);

  it("answers the same exec as a task to a request declaring Tasks; tasks/get polls it to completed with job get's result", async () => {
    const tasks = { extensions: { [TASKS_EXTENSION]: {} } };
    const created = await modernRequest(stack.mcpUrl, stack.adminToken, {
      method: "tools/call",
      name: "container",
      params: { name: "container", arguments: longExec(projectId, "task-2026") },
      capabilities: tasks,
      headers: { "mcp-param-project-id": projectId },
    });
    expect(created.status, JSON.stringify(created)).toBe(200);
    const task = created.result ?? {};
    expect(task).toMatchObject({
      resultType: "task",
      status: "working",
      taskId: expect.stringMatching(/^job_/),
    });
    for (const key of ["task", "result", "error", "requestState"]) expect(task).not.toHaveProperty(key);
    const taskId = String(task.taskId);

    const seen: string[] = [];
    let got: RawReply | null = null;
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline) {
      got = await modernRequest(stack.mcpUrl, stack.adminToken, {
        method: "tasks/get",
        name: taskId,
        params: { taskId },
        capabilities: tasks,
      });
      expect(got.status, JSON.stringify(got)).toBe(200);
      const status = String(got.result?.status);
      seen.push(status);
      if (status !== "working") break;
      await new Promise((r) => setTimeout(r, 500));
    }
    expect(seen).toContain("working");
    const final = got?.result ?? {};
    expect(final).toMatchObject({ resultType: "complete", taskId, status: "completed" });

    const job = await poller.ok<JobView>("job", { action: "get", job_id: taskId });
    expect(job).toMatchObject({ job_id: taskId, status: "complete", result: { exit_code: 0 } });
    expect(job.result?.stdout).toContain("task-2026");
    const inlined = final.result as {
      isError?: boolean;
      structuredContent?: unknown;
      _meta?: Record<string, unknown>;
    };
    expect(inlined.isError ?? false).toBe(false);
    expect(inlined.structuredContent).toEqual(job.result);
    expect(inlined._meta?.["oubliette/job_id"]).toBe(taskId);
  }, 90_000);
});

describe("both eras following one session", () => {
  it("shows a 2025 caller (notifications) and 2026 callers (long-poll, listen) every event once, in order", async () => {
    const old = await TestCaller.connect(stack.mcpUrl, stack.adminToken, "mixed-2025");
    const poller = await ModernCaller.connect(stack.mcpUrl, stack.adminToken, {
      name: "mixed-poll",
      feed: "poll",
    });
    const listener = await ModernCaller.connect(stack.mcpUrl, stack.adminToken, {
      name: "mixed-listen",
      feed: "listen",
    });
    try {
      old.answerWith(() => "ignore");
      listener.answerWith(() => "ignore");
      poller.answerWith((request) => ({ result: { answered_by: "2026", echo: request.arguments } }));
      const { sessionId, pointer } = await spawnLending(old, await old.newProject(), "cat", [SEND_RESPONSE]);
      poller.follow(sessionId);
      listener.follow(sessionId);
      const out = await runStep(old, sessionId, {
        op: "call",
        name: "cat_send_response",
        arguments: { message: "mixed" },
      });
      expect(JSON.parse(text(out))).toEqual({ answered_by: "2026", echo: { message: "mixed" } });
      await old.ok("session", { action: "end", session_id: sessionId });

      const ended = (e: SessionEvent) => e.session_id === sessionId && e.type === "session_ended";
      await Promise.all([old.waitFor(ended), poller.waitFor(ended), listener.waitFor(ended)]);
      const inSession = (events: SessionEvent[]) => events.filter((e) => e.session_id === sessionId);
      const log = (events: SessionEvent[]) => inSession(events).map((e) => `${e.index}:${e.type}`);
      // The 2026 callers read the session's log itself: every index from 0, once, in order.
      const full = log(poller.events);
      expect(full.map((entry) => Number(entry.split(":")[0]))).toEqual(full.map((_, i) => i));
      expect(full.filter((entry) => entry.endsWith(":caller_tool_request"))).toHaveLength(1);
      expect(log(listener.events)).toEqual(full);
      // The 2025 caller too, except the log's copies of its own spawn job's events: it heard those
      // directly (logger oubliette.job), once each (docs/protocol.md: "not ... twice").
      const ownJob = (e: SessionEvent) => "job_id" in e && e.job_id === pointer.job_id;
      const copies = inSession(poller.events).filter(ownJob);
      expect(copies.length).toBeGreaterThan(0);
      expect(log(old.events)).toEqual(log(inSession(poller.events).filter((e) => !ownJob(e))));
      const direct = old.events.filter((e, i) => ownJob(e) && old.loggers[i] === "oubliette.job");
      for (const copy of copies) expect(direct.filter((e) => e.type === copy.type)).toHaveLength(1);
    } finally {
      await Promise.all([old.close(), poller.close(), listener.close()]);
    }
  }, 180_000);
});

describe("2026: input-required rounds with the official client (SEP-2322)", () => {
  it("project delete asks the human through the SDK's elicitation handler and runs only on a yes", async () => {
    let consent = false;
    const caller = await ModernCaller.connect(stack.mcpUrl, stack.adminToken, {
      elicit: () => ({ action: "accept", content: { confirm: consent } }),
    });
    try {
      const projectId = await caller.newProject();
      const refused = await caller.call("project", { action: "delete", project_id: projectId });
      expect(refused).toMatchObject({ isError: true, structuredContent: { error: { code: "cancelled" } } });
      expect(caller.asked).toHaveLength(1);
      expect(caller.asked[0]).toContain(projectId);
      await caller.ok("project", { action: "get", project_id: projectId });

      consent = true;
      const deleted = await caller.ok<{ deleted?: boolean }>("project", {
        action: "delete",
        project_id: projectId,
      });
      expect(deleted.deleted).toBe(true);
      expect(caller.asked).toHaveLength(2);
      const gone = await caller.call("project", { action: "get", project_id: projectId });
      expect(gone.isError).toBe(true);
    } finally {
      await caller.close();
    }
  });
});
