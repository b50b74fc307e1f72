import { z } from "zod";
import { TunnelMethod } from "../../../protocol/tunnel.js";
import { FakeHost, uniqueHostId } from "./fake-host.js";
import { callTool, initialize, rpc } from "./mcp.js";
import { okResult } from "./mcp-spawn.js";
import { createProject } from "./projects.js";

/** What a finished `container exec` answers. */
export const EXEC_RESULT = {
  exit_code: 0,
  stdout: "done\n",
  stderr: "",
  truncated: false,
  timed_out: false,
  duration_ms: 4000,
};

/**
 * A fake host that starts project containers (`project_ensure` answers a container) and holds
 * every `container_exec` for the test to answer, as late as it likes, or to see cancelled.
 */
export async function execHost(): Promise<FakeHost> {
  const host = await FakeHost.connect(uniqueHostId("jobs"), { answer: () => null });
  host.socket.onFrame((frame) => {
    if (frame.kind !== "request") return;
    if (frame.method === TunnelMethod.containerExec) return;
    const started = { container_id: "ctr-jobs", started: true };
    host.socket.reply(frame.id, frame.method === TunnelMethod.projectEnsure ? started : {});
  });
  return host;
}

/** A project whose container runs on an `execHost`, and an MCP session of the admin. */
export async function projectWithContainer() {
  const host = await execHost();
  const projectId = await createProject();
  const mcp = await initialize();
  okResult(await callTool(mcp, "container", { action: "start", project_id: projectId }));
  return { host, projectId, mcp };
}

/** A container exec's arguments (the host holds it until the test answers). */
export function execArgs(projectId: string) {
  return { action: "exec", project_id: projectId, command: ["make", "test"], timeout_seconds: 300 };
}

export const JobSchema = z
  .object({
    job_id: z.string().regex(/^job_[0-9a-f]{24}$/),
    tool: z.string(),
    project_id: z.string().nullable(),
    status: z.enum(["pending", "running", "complete", "failed", "cancelled"]),
    result: z.unknown().optional(),
    error: z.object({ code: z.string(), message: z.string() }).optional(),
    cancel: z.object({ reason: z.string(), work: z.enum(["stopped", "running", "finished"]) }).optional(),
  })
  .loose();
export type Job = z.infer<typeof JobSchema>;

/** `job get`. */
export async function getJob(mcp: string, jobId: string): Promise<Job> {
  return JobSchema.parse(okResult(await callTool(mcp, "job", { action: "get", job_id: jobId })));
}

/** `job list` (one project, optionally by status): the jobs' ids, newest first. */
export async function listJobs(mcp: string, projectId: string, status?: string): Promise<Job[]> {
  const listed = okResult(
    await callTool(mcp, "job", { action: "list", project_id: projectId, ...(status ? { status } : {}) }),
  );
  return z.array(JobSchema).parse(listed.jobs);
}

/** A `tools/call` read raw, `_meta` included (the test helpers' ToolResult drops it). */
export async function rawCall(mcp: string, name: string, args: Record<string, unknown>) {
  const res = await rpc(mcp, "tools/call", { name, arguments: args });
  return z
    .object({
      isError: z.boolean().optional(),
      structuredContent: z.record(z.string(), z.unknown()).optional(),
      _meta: z.object({ "oubliette/job_id": z.string() }),
    })
    .parse(res.result);
}
