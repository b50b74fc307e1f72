/**
 * Jobs and timing classes: a call of a job-class action waits up to its bound, then answers its
 * job id; `job wait` answers the outcome; progress reaches a waiting call with a progressToken;
 * `job cancel` and MCP request cancellation end a job as cancelled (and reach the host's exec);
 * failures are listed; outcomes expire from the job's alarm.
 */
import { abortAllDurableObjects, runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { RpcErrorCode } from "../../protocol/rpc/errors.js";
import { TunnelMethod } from "../../protocol/tunnel.js";
import { callerTools } from "../../worker/src/tools/catalog.js";
import { freezeClock } from "./support/clock.js";
import { disconnectAll, FakeHost, type HostRequest, uniqueHostId } from "./support/fake-host.js";
import {
  EXEC_RESULT,
  execArgs,
  getJob,
  JobSchema,
  listJobs,
  projectWithContainer,
  rawCall,
} from "./support/jobs.js";
import { callTool, initialize, mcpFetch, RpcResponseSchema, streamedCall } from "./support/mcp.js";
import { okResult } from "./support/mcp-spawn.js";
import { until } from "./support/poll.js";
import { createProject } from "./support/projects.js";
import { resultOf } from "./support/rpc-socket.js";
import { events, liveSession } from "./support/session.js";
import { SseReader } from "./support/sse.js";

afterEach(async () => {
  vi.useRealTimers();
  await disconnectAll();
});

const PointerSchema = z.object({
  job_id: z.string(),
  status: z.string(),
  tool: z.string(),
  timing: z.string(),
});

const isResponse = (value: unknown) => RpcResponseSchema.safeParse(value).success;
const ProgressSchema = z.object({
  method: z.literal("notifications/progress"),
  params: z.object({
    progressToken: z.string(),
    progress: z.number(),
    total: z.number().optional(),
    message: z.string(),
  }),
});

/** A droid's `oubliette_call_tool` answer, `_meta` included. */
const DroidResultSchema = z.object({
  structuredContent: z.record(z.string(), z.unknown()),
  _meta: z.object({ "oubliette/job_id": z.string() }),
});

/** The fake host holds every container exec for the test to answer; everything else succeeds. */
const holdingExecs = (request: HostRequest) =>
  request.method === "project" && request.name === TunnelMethod.containerExec
    ? null
    : ({ ok: true } as const);

/** A key scoped to `projectId`, as a caller would hand a droid. */
async function projectKey(projectId: string): Promise<string> {
  const admin = await initialize();
  const created = okResult(
    await callTool(admin, "token", { action: "create", name: "droid key", scope: `project:${projectId}` }),
  );
  return z.object({ token: z.string() }).parse(created).token;
}

describe("spawn", () => {
  it("says in its description that it can answer a job id at once", () => {
    const session = callerTools.list().find((t) => t.name === "session");
    expect(session?.description).toContain("spawn (async_long when asked not to wait)");
    expect(session?._meta["oubliette/timing"]).toMatchObject({ spawn: "async_medium", get: "sync" });
  });
});

describe("a call that becomes a job", () => {
  it("answers its result when the job ends within the bound, naming the job in _meta", async () => {
    const { host, projectId, mcp } = await projectWithContainer();
    const call = rawCall(mcp, "container", execArgs(projectId));
    const exec = await host.socket.nextRequest(TunnelMethod.containerExec);
    host.socket.reply(exec.id, EXEC_RESULT);
    const result = await call;
    expect(result.structuredContent).toEqual(EXEC_RESULT);
    const job = await getJob(mcp, result._meta["oubliette/job_id"]);
    expect(job).toMatchObject({ status: "complete", tool: "container.exec", project_id: projectId });
    expect(job.result).toEqual(EXEC_RESULT);
    // A listing leaves results out (job get has them).
    const listed = (await listJobs(mcp, projectId)).find((j) => j.job_id === job.job_id);
    expect(listed?.status).toBe("complete");
    expect(listed && "result" in listed).toBe(false);
  });

  it("answers {job_id, status: running} past its bound; job wait answers the outcome", async () => {
    const { host, projectId, mcp } = await projectWithContainer();
    const started = Date.now();
    const answer = await callTool(mcp, "container", execArgs(projectId));
    expect(Date.now() - started).toBeGreaterThanOrEqual(2_900);
    const pointer = PointerSchema.parse(okResult(answer));
    expect(pointer).toMatchObject({ status: "running", tool: "container.exec", timing: "async_medium" });
    const exec = await host.socket.nextRequest(TunnelMethod.containerExec);
    // The registry waits for the host as long as the command may run, not its 30 s ack timeout.
    expect(exec.params).toMatchObject({ command: ["make", "test"], timeout_ms: 300_000 });
    const waiting = callTool(mcp, "job", { action: "wait", job_id: pointer.job_id, wait_seconds: 20 });
    host.socket.reply(exec.id, EXEC_RESULT);
    const job = JobSchema.parse(okResult(await waiting));
    expect(job).toMatchObject({ job_id: pointer.job_id, status: "complete", result: EXEC_RESULT });
  });

  it("sends notifications/progress to a waiting call that gave a progressToken", async () => {
    const { host, projectId, mcp } = await projectWithContainer();
    const { stream } = await streamedCall(mcp, "container", execArgs(projectId), { progressToken: "tok-7" });
    const first = ProgressSchema.parse(
      (await stream.nextJson((v) => ProgressSchema.safeParse(v).success)).value,
    );
    expect(first.params).toMatchObject({ progressToken: "tok-7", total: 3 });
    expect(first.params.message).toContain("container.exec");
    const second = ProgressSchema.parse(
      (await stream.nextJson((v) => ProgressSchema.safeParse(v).success)).value,
    );
    expect(second.params.progress).toBeGreaterThan(first.params.progress);
    const exec = await host.socket.nextRequest(TunnelMethod.containerExec);
    host.socket.reply(exec.id, EXEC_RESULT);
    const response = RpcResponseSchema.parse((await stream.nextJson(isResponse, 5_000)).value);
    expect(response.result).toMatchObject({ structuredContent: EXEC_RESULT });
    await stream.cancel();
  });

  it("spawn with wait: false answers a job id at once, and job wait the session", async () => {
    const { projectId, mcp } = await projectWithContainer();
    const answer = okResult(
      await callTool(mcp, "session", { action: "spawn", project_id: projectId, wait: false }),
    );
    const pointer = PointerSchema.parse(answer);
    expect(pointer).toMatchObject({ tool: "session.spawn", timing: "async_long" });
    expect(["pending", "running"]).toContain(pointer.status);
    const job = JobSchema.parse(
      okResult(await callTool(mcp, "job", { action: "wait", job_id: pointer.job_id, wait_seconds: 10 })),
    );
    expect(job.status).toBe("complete");
    expect(job.result).toMatchObject({ session_id: expect.stringMatching(/^ses_/), resumed: false });
  });
});

describe("cancelling a job", () => {
  it("job cancel ends it as cancelled, the exec is cancelled on the host and the waiting call hears it", async () => {
    const { host, projectId, mcp } = await projectWithContainer();
    const waiting = callTool(mcp, "container", execArgs(projectId));
    const exec = await host.socket.nextRequest(TunnelMethod.containerExec);
    const [running] = await listJobs(mcp, projectId, "running");
    expect(running?.tool).toBe("container.exec");
    const jobId = running?.job_id ?? "";
    const cancelled = okResult(
      await callTool(mcp, "job", { action: "cancel", job_id: jobId, reason: "enough" }),
    );
    expect(JobSchema.parse(cancelled)).toMatchObject({ status: "cancelled", cancel: { reason: "enough" } });
    const notice = await host.socket.nextNotification("notifications/cancelled");
    expect(notice.params).toMatchObject({ requestId: exec.id });
    expect(await waiting).toMatchObject({
      isError: true,
      structuredContent: { error: { code: "cancelled" } },
    });
    // The host request was cancelled, so the work itself stopped.
    let job = await getJob(mcp, jobId);
    for (let i = 0; i < 100 && job.cancel?.work === "running"; i++) {
      await scheduler.wait(20);
      job = await getJob(mcp, jobId);
    }
    expect(job.cancel?.work).toBe("stopped");
    const again = await callTool(mcp, "job", { action: "cancel", job_id: jobId });
    expect(again).toMatchObject({ isError: true, structuredContent: { error: { code: "conflict" } } });
  });

  it("cancelling the MCP request that waits cancels its job, on the host too", async () => {
    const { host, projectId, mcp } = await projectWithContainer();
    const { id, stream } = await streamedCall(mcp, "container", execArgs(projectId));
    const exec = await host.socket.nextRequest(TunnelMethod.containerExec);
    const notified = await mcpFetch({
      session: mcp,
      headers: { "mcp-protocol-version": "2025-11-25" },
      body: {
        jsonrpc: "2.0",
        method: "notifications/cancelled",
        params: { requestId: id, reason: "user pressed stop" },
      },
    });
    expect(notified.status).toBe(202);
    const notice = await host.socket.nextNotification("notifications/cancelled");
    expect(notice.params).toMatchObject({ requestId: exec.id });
    const response = RpcResponseSchema.parse((await stream.nextJson(isResponse, 5_000)).value);
    expect(response.result).toMatchObject({
      isError: true,
      structuredContent: { error: { code: "cancelled" } },
    });
    await stream.cancel();
    const [job] = await listJobs(mcp, projectId, "cancelled");
    expect(job?.cancel?.reason).toContain("user pressed stop");
  });
});

describe("failed jobs and expiry", () => {
  it("a failed job is listed with status=failed, with its error", async () => {
    const { host, projectId, mcp } = await projectWithContainer();
    const call = rawCall(mcp, "container", execArgs(projectId));
    const exec = await host.socket.nextRequest(TunnelMethod.containerExec);
    host.socket.replyError(exec.id, {
      code: RpcErrorCode.ServerError,
      message: "the project's container is not running",
      data: { reason: "not_running" },
    });
    const result = await call;
    expect(result).toMatchObject({ isError: true, structuredContent: { error: { code: "not_running" } } });
    const jobId = result._meta["oubliette/job_id"];
    const failed = await listJobs(mcp, projectId, "failed");
    expect(failed.map((j) => j.job_id)).toContain(jobId);
    expect(failed.find((j) => j.job_id === jobId)?.error?.code).toBe("not_running");
    expect((await listJobs(mcp, projectId, "complete")).map((j) => j.job_id)).not.toContain(jobId);
  });

  it("an ended job's outcome is forgotten after the TTL, by its alarm", async () => {
    const { host, projectId, mcp } = await projectWithContainer();
    const call = rawCall(mcp, "container", execArgs(projectId));
    host.socket.reply((await host.socket.nextRequest(TunnelMethod.containerExec)).id, EXEC_RESULT);
    const jobId = (await call)._meta["oubliette/job_id"];
    const stub = env.JOBS.get(env.JOBS.idFromName(jobId));
    freezeClock(23 * 60 * 60_000);
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect((await getJob(mcp, jobId)).status).toBe("complete");
    vi.setSystemTime(Date.now() + 60 * 60_000 + 1_000);
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    const gone = await callTool(mcp, "job", { action: "get", job_id: jobId });
    expect(gone).toMatchObject({ isError: true, structuredContent: { error: { code: "not_found" } } });
    expect((await listJobs(mcp, projectId)).map((j) => j.job_id)).not.toContain(jobId);
  });
});

describe("a restart", () => {
  it("cuts off a running job: its alarm marks it failed and does not run it again", async () => {
    const { host, projectId, mcp } = await projectWithContainer();
    const call = rawCall(mcp, "container", execArgs(projectId)).catch(() => null);
    await host.socket.nextRequest(TunnelMethod.containerExec);
    const [running] = await listJobs(mcp, projectId, "running");
    const jobId = running?.job_id ?? "";
    expect(jobId).toMatch(/^job_/);
    // Every object starts afresh from its storage, as after a deploy or a crash.
    await abortAllDurableObjects();
    await call;
    const stub = env.JOBS.get(env.JOBS.idFromName(jobId));
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    const job = await getJob(await initialize(), jobId);
    expect(job.status).toBe("failed");
    // Not run again: it says so, and it ended when the alarm found it (it was never pending again).
    expect(job.error?.message).toContain("was cut off before its work ended; it was not run again");
    expect(job.started_at).toBe(running?.started_at);
  });
});

describe("job events", () => {
  it("reach the MCP stream of the session that started the job", async () => {
    const { host, projectId, mcp } = await projectWithContainer();
    const stream = new SseReader((await mcpFetch({ method: "GET", session: mcp })).body);
    const call = rawCall(mcp, "container", execArgs(projectId));
    host.socket.reply((await host.socket.nextRequest(TunnelMethod.containerExec)).id, EXEC_RESULT);
    const jobId = (await call)._meta["oubliette/job_id"];
    const isJobEvent = (type: string) => (value: unknown) =>
      z
        .object({
          params: z.object({
            logger: z.literal("oubliette.job"),
            data: z.object({ type: z.literal(type), job_id: z.literal(jobId) }),
          }),
        })
        .safeParse(value).success;
    await stream.nextJson(isJobEvent("job_started"), 5_000);
    const ended = await stream.nextJson(isJobEvent("job_ended"), 5_000);
    expect(ended.value).toMatchObject({ params: { data: { status: "complete", tool: "container.exec" } } });
    await stream.cancel();
  });

  it("of a droid's call go into its session's log: plain subscribers and session events see them", async () => {
    const projectId = await createProject();
    const s = await liveSession({ projectId }, { answer: holdingExecs });
    const key = await projectKey(projectId);
    const ask = s.tunnel.socket.ask("oubliette_call_tool", {
      api_key: key,
      tool: "container",
      arguments: execArgs(projectId),
    });
    const exec = await s.host.socket.nextRequest(TunnelMethod.containerExec);
    const started = await s.owner.next("job_started");
    expect(started).toMatchObject({ session_id: s.sessionId, tool: "container.exec", project_id: projectId });
    s.host.socket.reply(exec.id, EXEC_RESULT);
    const result = DroidResultSchema.parse(resultOf(await ask));
    expect(result.structuredContent).toMatchObject({ exit_code: 0, stdout: "done\n" });
    const jobId = result._meta["oubliette/job_id"];
    expect(started.job_id).toBe(jobId);
    expect(await s.owner.next("job_ended")).toMatchObject({ job_id: jobId, status: "complete" });
    const logged = (await events(s.sessionId)).events;
    expect(logged.filter((e) => "job_id" in e && e.job_id === jobId).map((e) => e.type)).toEqual([
      "job_started",
      "job_ended",
    ]);
  });

  it("a droid's call past its bound answers the droid a job id; job wait with its key answers the outcome", async () => {
    const projectId = await createProject();
    const s = await liveSession({ projectId }, { answer: holdingExecs });
    const key = await projectKey(projectId);
    const droidCall = (tool: string, args: Record<string, unknown>) =>
      s.tunnel.socket.ask("oubliette_call_tool", { api_key: key, tool, arguments: args }, 10_000);
    const ask = droidCall("container", execArgs(projectId));
    const exec = await s.host.socket.nextRequest(TunnelMethod.containerExec);
    const pointer = PointerSchema.parse(DroidResultSchema.parse(resultOf(await ask)).structuredContent);
    expect(pointer).toMatchObject({ status: "running", tool: "container.exec", timing: "async_medium" });
    const waiting = droidCall("job", { action: "wait", job_id: pointer.job_id, wait_seconds: 10 });
    s.host.socket.reply(exec.id, EXEC_RESULT);
    const outcome = z
      .object({ structuredContent: JobSchema })
      .parse(resultOf(await waiting)).structuredContent;
    expect(outcome).toMatchObject({ status: "complete", result: { exit_code: 0, stdout: "done\n" } });
  });

  it("of a job acting on a session go into its log, and reach the caller that started it once", async () => {
    const mcp = await initialize();
    await FakeHost.connect(uniqueHostId("job-events"));
    const projectId = await createProject();
    const stream = new SseReader((await mcpFetch({ method: "GET", session: mcp })).body);
    // A spawn that does not wait is a job acting on the session it starts.
    const pointer = PointerSchema.parse(
      okResult(await callTool(mcp, "session", { action: "spawn", project_id: projectId, wait: false })),
    );
    const waited = okResult(
      await callTool(mcp, "job", { action: "wait", job_id: pointer.job_id, wait_seconds: 10 }),
    );
    const sessionId = z.object({ result: z.object({ session_id: z.string() }) }).parse(waited)
      .result.session_id;
    await until(
      async () =>
        (await events(sessionId)).events.some((e) => e.type === "job_ended" && e.job_id === pointer.job_id),
      "the spawn job's end is in the session's log",
    );
    // The caller follows the session it spawned, whose log now has the job's end: it heard the
    // end directly, and not a second time from the log.
    const ended = (value: unknown) =>
      z
        .object({
          params: z.object({
            data: z.object({ type: z.literal("job_ended"), job_id: z.literal(pointer.job_id) }),
          }),
        })
        .safeParse(value).success;
    await stream.nextJson(ended, 5_000);
    await expect(stream.nextJson(ended, 1_500)).rejects.toThrow(/no matching SSE event/);
    await stream.cancel();
  });
});
