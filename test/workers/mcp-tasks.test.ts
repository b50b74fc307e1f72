/**
 * Jobs as MCP tasks (2026-07-28, extension `io.modelcontextprotocol/tasks`): discover advertises
 * the extension; a request declaring it gets a flat CreateTaskResult for a job that goes on (and
 * the result itself when the job ends within the shortcut bound); tasks/get maps the job's
 * status, inlining the result the call would have answered; tasks/cancel is `job cancel` (its
 * access and audit entry) acknowledged empty; unknown or unreadable tasks are not found; a
 * request without the extension, and a 2025 session, get today's job pointer.
 */
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { RpcErrorCode } from "../../protocol/rpc/errors.js";
import { TunnelMethod } from "../../protocol/tunnel.js";
import { McpErrorCode } from "../../worker/src/mcp/json-rpc.js";
import { disconnectAll } from "./support/fake-host.js";
import { EXEC_RESULT, execArgs, getJob, projectWithContainer } from "./support/jobs.js";
import { callTool, initialize, rpc } from "./support/mcp.js";
import { okResult } from "./support/mcp-spawn.js";
import { type ModernOptions, modernRpc } from "./support/modern.js";
import { createProject } from "./support/projects.js";
import { READER_TOKEN } from "./support/tokens.js";

afterEach(async () => {
  await disconnectAll();
});

const EXTENSION = "io.modelcontextprotocol/tasks";
const TASKS = { extensions: { [EXTENSION]: {} } };
const SERVER_INFO = { "io.modelcontextprotocol/serverInfo": { name: "oubliette-edge", version: "0.1.0" } };
/** A result's `_meta`: who answered, and nothing else. */
const ServerMetaSchema = z
  .object({ "io.modelcontextprotocol/serverInfo": z.object({ name: z.string(), version: z.string() }) })
  .strict();
const NOT_FOUND = { code: McpErrorCode.invalidParams, message: "Failed to retrieve task: Task not found" };
const DAY_MS = 24 * 60 * 60_000;

/** The task fields every view carries; `strict`: nothing else (no `task`, `ttl`, `requestState`…). */
const taskFields = {
  taskId: z.string().regex(/^job_[0-9a-f]{24}$/),
  statusMessage: z.string().optional(),
  createdAt: z.iso.datetime(),
  lastUpdatedAt: z.iso.datetime(),
  ttlMs: z.number().int().positive(),
  pollIntervalMs: z.number().int().positive(),
  _meta: ServerMetaSchema,
};
const CreateTaskSchema = z
  .object({ ...taskFields, resultType: z.literal("task"), status: z.literal("working") })
  .strict();
const ToolResultSchema = z
  .object({
    content: z.array(z.object({ type: z.literal("text"), text: z.string() })).min(1),
    structuredContent: z.record(z.string(), z.unknown()),
    isError: z.literal(true).optional(),
    _meta: z.object({ "oubliette/job_id": z.string() }).strict(),
  })
  .strict();
const DetailedTaskSchema = z
  .object({
    ...taskFields,
    resultType: z.literal("complete"),
    status: z.enum(["working", "completed", "cancelled"]),
    result: ToolResultSchema.optional(),
  })
  .strict();
type DetailedTask = z.infer<typeof DetailedTaskSchema>;
const AckSchema = z.object({ resultType: z.literal("complete"), _meta: ServerMetaSchema }).strict();

/** A `container exec` (async_medium: the fake host holds it) as a 2026 `tools/call`. */
async function execCall(projectId: string, capabilities: Record<string, unknown> = TASKS) {
  const body = await modernRpc(
    "tools/call",
    { name: "container", arguments: execArgs(projectId) },
    { capabilities, headers: { "mcp-param-project-id": projectId } },
  );
  expect(body.error).toBeUndefined();
  return z.record(z.string(), z.unknown()).parse(body.result);
}

/** One tasks/* request of a client declaring the extension. */
function taskRpc(method: string, taskId: string, options: ModernOptions & { status?: number } = {}) {
  return modernRpc(method, { taskId }, { capabilities: TASKS, ...options });
}

async function getTask(taskId: string): Promise<DetailedTask> {
  const body = await taskRpc("tasks/get", taskId);
  expect(body.error).toBeUndefined();
  return DetailedTaskSchema.parse(body.result);
}

/** Polls tasks/get until the task has `status`. */
async function taskWhen(taskId: string, status: DetailedTask["status"]): Promise<DetailedTask> {
  for (let i = 0; i < 200; i++) {
    const task = await getTask(taskId);
    if (task.status === status) return task;
    await scheduler.wait(25);
  }
  throw new Error(`task ${taskId} never became ${status}`);
}

/** A container exec that became a task, with its held request on the fake host. */
async function heldTask() {
  const { host, projectId, mcp } = await projectWithContainer();
  const started = Date.now();
  const created = CreateTaskSchema.parse(await execCall(projectId));
  const elapsed = Date.now() - started;
  const exec = await host.socket.nextRequest(TunnelMethod.containerExec);
  return { host, projectId, mcp, created, exec, elapsed };
}

/** The audit entries of job.cancel on `jobId`. */
async function cancelAudit(mcp: string, jobId: string) {
  const listed = okResult(await callTool(mcp, "audit", { action_prefix: "job.cancel" }));
  return z
    .array(
      z.object({
        action: z.string(),
        target: z.string().nullable(),
        outcome: z.string(),
        token_id: z.string(),
      }),
    )
    .parse(listed.entries)
    .filter((entry) => entry.target === jobId);
}

/** A caller token whose scope is another project: it may not read this one's jobs. */
async function strangerToken(): Promise<string> {
  const elsewhere = await createProject();
  const created = okResult(
    await callTool(await initialize(), "token", {
      action: "create",
      name: "stranger",
      scope: `project:${elsewhere}`,
    }),
  );
  return z.object({ token: z.string() }).parse(created).token;
}

describe("negotiation", () => {
  it("server/discover declares the extension under capabilities.extensions only", async () => {
    const body = await modernRpc("server/discover");
    const capabilities = z.record(z.string(), z.unknown()).parse(body.result?.capabilities);
    expect(capabilities.extensions).toEqual({ [EXTENSION]: {} });
    expect(capabilities).not.toHaveProperty("tasks");
  });

  it.each(["tasks/get", "tasks/update", "tasks/cancel"])(
    "%s without the extension in its own _meta is 400 / -32021 naming it",
    async (method) => {
      const body = await modernRpc(
        method,
        { taskId: "gate-test" },
        { capabilities: { elicitation: {} }, id: "gate-1", status: 400 },
      );
      expect(body.id).toBe("gate-1");
      expect(body.error).toMatchObject({
        code: McpErrorCode.missingClientCapability,
        data: { requiredCapabilities: { extensions: { [EXTENSION]: {} } } },
      });
    },
  );

  it("a job-class call without the extension answers the job pointer after its class bound, as before", async () => {
    const { host, projectId, mcp } = await projectWithContainer();
    const started = Date.now();
    const result = await execCall(projectId, { elicitation: {} });
    expect(Date.now() - started).toBeGreaterThanOrEqual(2_900);
    expect(result.resultType).toBe("complete");
    expect(result).not.toHaveProperty("taskId");
    const pointer = z
      .object({ job_id: z.string(), status: z.string(), timing: z.string() })
      .parse(result.structuredContent);
    expect(pointer).toMatchObject({ status: "running", timing: "async_medium" });
    host.socket.reply((await host.socket.nextRequest(TunnelMethod.containerExec)).id, EXEC_RESULT);
    const waited = okResult(
      await callTool(mcp, "job", { action: "wait", job_id: pointer.job_id, wait_seconds: 10 }),
    );
    expect(waited).toMatchObject({ status: "complete", result: EXEC_RESULT });
  });

  it("a 2025 session's job call is unchanged: the pointer after the class bound", async () => {
    const { host, projectId, mcp } = await projectWithContainer();
    const started = Date.now();
    const response = await rpc(mcp, "tools/call", { name: "container", arguments: execArgs(projectId) });
    expect(Date.now() - started).toBeGreaterThanOrEqual(2_900);
    const result = z
      .object({
        structuredContent: z.record(z.string(), z.unknown()),
        _meta: z.record(z.string(), z.unknown()),
      })
      .loose()
      .parse(response.result);
    expect(result).not.toHaveProperty("resultType");
    expect(result).not.toHaveProperty("taskId");
    expect(result.structuredContent).toMatchObject({
      job_id: result._meta["oubliette/job_id"],
      status: "running",
      timing: "async_medium",
    });
    host.close();
  });
});

describe("creating tasks", () => {
  it("a held exec answers a flat CreateTaskResult after the shortcut bound, durably created", async () => {
    const { mcp, projectId, created, elapsed } = await heldTask();
    // The shortcut bound of the test configuration (500 ms), well short of the class bound (3 s).
    expect(elapsed).toBeGreaterThanOrEqual(450);
    expect(elapsed).toBeLessThan(2_500);
    for (const absent of ["task", "result", "error", "inputRequests", "requestState", "ttl", "pollInterval"])
      expect(created).not.toHaveProperty(absent);
    expect(created._meta).toEqual(SERVER_INFO);
    expect(created.ttlMs).toBe(DAY_MS);
    expect(created.pollIntervalMs).toBe(2_000);
    expect(Date.parse(created.lastUpdatedAt)).toBeGreaterThanOrEqual(Date.parse(created.createdAt));
    // Durable: the very next tasks/get resolves it; and it is a job, as job get shows it.
    const task = await getTask(created.taskId);
    expect(task).toMatchObject({ taskId: created.taskId, status: "working", createdAt: created.createdAt });
    expect(task).not.toHaveProperty("result");
    expect(await getJob(mcp, created.taskId)).toMatchObject({
      status: "running",
      tool: "container.exec",
      project_id: projectId,
    });
  });

  it("a job that ends within the shortcut bound answers its result, not a task", async () => {
    const { projectId, mcp } = await projectWithContainer();
    const result = await modernRpc(
      "tools/call",
      { name: "container", arguments: { action: "start", project_id: projectId } },
      { capabilities: TASKS, headers: { "mcp-param-project-id": projectId } },
    );
    const answer = z
      .object({
        resultType: z.literal("complete"),
        structuredContent: z.record(z.string(), z.unknown()),
        _meta: z.object({ "oubliette/job_id": z.string() }).loose(),
      })
      .loose()
      .parse(result.result);
    expect(answer).not.toHaveProperty("taskId");
    expect(answer).not.toHaveProperty("isError");
    expect(await getJob(mcp, answer._meta["oubliette/job_id"])).toMatchObject({ status: "complete" });
  });

  it("spawn with wait: false answers a task at once; a sync action never does", async () => {
    const { projectId } = await projectWithContainer();
    const spawned = await modernRpc(
      "tools/call",
      { name: "session", arguments: { action: "spawn", project_id: projectId, wait: false } },
      { capabilities: TASKS, headers: { "mcp-param-project-id": projectId } },
    );
    const task = CreateTaskSchema.parse(spawned.result);
    expect(task.pollIntervalMs).toBe(5_000);
    expect((await taskWhen(task.taskId, "completed")).result?.structuredContent).toMatchObject({
      session_id: expect.stringMatching(/^ses_/),
    });
    const listed = await modernRpc(
      "tools/call",
      { name: "project", arguments: { action: "list" } },
      { capabilities: TASKS },
    );
    expect(listed.result).toMatchObject({ resultType: "complete", structuredContent: expect.any(Object) });
    expect(listed.result).not.toHaveProperty("taskId");
  });
});

describe("following a task", () => {
  it("tasks/get says working, then completed with the result the call would have answered", async () => {
    const { host, mcp, created, exec } = await heldTask();
    expect((await getTask(created.taskId)).status).toBe("working");
    host.socket.reply(exec.id, EXEC_RESULT);
    const done = await taskWhen(created.taskId, "completed");
    expect(done.result).toEqual({
      content: [{ type: "text", text: JSON.stringify(EXEC_RESULT) }],
      structuredContent: EXEC_RESULT,
      _meta: { "oubliette/job_id": created.taskId },
    });
    expect(Date.parse(done.lastUpdatedAt)).toBeGreaterThan(Date.parse(created.lastUpdatedAt));
    // One job, two views: job get has the same outcome; the TTL counts to its expiry.
    const job = await getJob(mcp, created.taskId);
    expect(job).toMatchObject({ status: "complete", result: EXEC_RESULT });
    const expiresAt = z.string().parse(job.expires_at);
    expect(done.ttlMs).toBe(Date.parse(expiresAt) - Date.parse(done.createdAt));
    // Still readable after the end (the outcome is kept a day).
    await scheduler.wait(500);
    expect((await getTask(created.taskId)).status).toBe("completed");
  });

  it("a failed exec completes the task with an isError tool result (a task never says failed)", async () => {
    const { host, mcp, created, exec } = await heldTask();
    host.socket.replyError(exec.id, {
      code: RpcErrorCode.ServerError,
      message: "the project's container is not running",
      data: { reason: "not_running" },
    });
    const done = await taskWhen(created.taskId, "completed");
    expect(done.result).toMatchObject({
      isError: true,
      structuredContent: { error: { code: "not_running" } },
      _meta: { "oubliette/job_id": created.taskId },
    });
    expect((await getJob(mcp, created.taskId)).status).toBe("failed");
  });

  it("tasks/update acknowledges a known task with an empty result", async () => {
    const { created } = await heldTask();
    const body = await modernRpc(
      "tasks/update",
      { taskId: created.taskId, inputResponses: { anything: { action: "accept" } } },
      { capabilities: TASKS },
    );
    AckSchema.parse(body.result);
  });
});

describe("cancelling a task", () => {
  it("tasks/cancel acks empty, cancels the job on the host, is audited as job.cancel; again after the end acks too", async () => {
    const { host, mcp, created, exec } = await heldTask();
    const ack = await taskRpc("tasks/cancel", created.taskId);
    AckSchema.parse(ack.result);
    const notice = await host.socket.nextNotification("notifications/cancelled");
    expect(notice.params).toMatchObject({ requestId: exec.id });
    const cancelled = await taskWhen(created.taskId, "cancelled");
    expect(cancelled.statusMessage).toContain("tasks/cancel");
    expect(cancelled).not.toHaveProperty("result");
    const job = await getJob(mcp, created.taskId);
    expect(job).toMatchObject({ status: "cancelled", cancel: { reason: cancelled.statusMessage } });
    AckSchema.parse((await taskRpc("tasks/cancel", created.taskId)).result);
    expect((await getTask(created.taskId)).status).toBe("cancelled");
    let audited = await cancelAudit(mcp, created.taskId);
    for (let i = 0; i < 40 && audited.length < 2; i++) {
      await scheduler.wait(25);
      audited = await cancelAudit(mcp, created.taskId);
    }
    expect(audited.map((e) => [e.token_id, e.outcome]).sort()).toEqual([
      ["admin", "conflict"],
      ["admin", "ok"],
    ]);
  });

  it("needs write access: a read-only token may read the task but not cancel it", async () => {
    const { created } = await heldTask();
    const body = await taskRpc("tasks/cancel", created.taskId, { token: READER_TOKEN });
    expect(body.error?.code).toBe(McpErrorCode.invalidParams);
    expect(body.error?.message).toContain("needs write access");
    const seen = await taskRpc("tasks/get", created.taskId, { token: READER_TOKEN });
    expect(DetailedTaskSchema.parse(seen.result).status).toBe("working");
  });
});

describe("tasks that cannot be seen", () => {
  it.each(["tasks/get", "tasks/update", "tasks/cancel"])(
    "%s of an unknown or malformed task id is -32602 (HTTP 200)",
    async (method) => {
      for (const taskId of [`job_${"0".repeat(24)}`, "gate-test"]) {
        const body = await taskRpc(method, taskId, { id: "nf-1" });
        expect(body).toMatchObject({ id: "nf-1", error: NOT_FOUND });
      }
    },
  );

  it("a token that may not read the project is told the task does not exist, and cannot cancel it", async () => {
    const { mcp, created } = await heldTask();
    const token = await strangerToken();
    for (const method of ["tasks/get", "tasks/update", "tasks/cancel"]) {
      const body = await taskRpc(method, created.taskId, { token });
      expect(body.error).toEqual(NOT_FOUND);
    }
    expect((await getJob(mcp, created.taskId)).status).toBe("running");
  });
});

describe("routing and removed methods", () => {
  it("tasks/get needs Mcp-Name equal to the taskId: a mismatch is 400 / -32020", async () => {
    const { created } = await heldTask();
    const body = await taskRpc("tasks/get", created.taskId, {
      headers: { "mcp-name": `job_${"f".repeat(24)}` },
      status: 400,
    });
    expect(body.error?.code).toBe(McpErrorCode.headerMismatch);
  });

  it.each(["tasks/result", "tasks/list"])("%s is unknown: 404 / -32601", async (method) => {
    const body = await taskRpc(method, `job_${"0".repeat(24)}`, { status: 404 });
    expect(body.error?.code).toBe(McpErrorCode.methodNotFound);
  });
});
