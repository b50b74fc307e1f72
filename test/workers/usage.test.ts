/**
 * Model usage reports: a session's usage reports (through its tunnel, as a host sends them) reach
 * its project, which keeps them per session and per UTC day; the `usage` tool adds them up over
 * the projects a token may read. Real objects in workerd, a fake host on the tunnel.
 */
import { afterEach, describe, expect, it } from "vitest";
import { disconnectAll, FakeHost, SessionTunnel, uniqueHostId } from "./support/fake-host.js";
import { callTool, initialize } from "./support/mcp.js";
import { until } from "./support/poll.js";
import { createProject } from "./support/projects.js";

afterEach(async () => {
  await disconnectAll();
});

interface Totals {
  requests: number;
  input_tokens: number;
  output_tokens: number;
  cost_usd: number;
}
interface UsageReport {
  totals: Totals;
  by_project: (Totals & { project_id: string; name: string })[];
  by_day: (Totals & { day: string })[];
  sessions: (Totals & {
    session_id: string;
    project_id: string;
    agent: string | null;
    model: string | null;
    status: string | null;
  })[];
}

async function usage(args: Record<string, unknown>, token?: string): Promise<UsageReport> {
  const result = await callTool(await initialize(token), "usage", args, token);
  if (result.isError) throw new Error(JSON.stringify(result.content));
  return result.structuredContent as unknown as UsageReport;
}

/** A session of a real project on a fake host, with its tunnel open. */
async function projectSession(name: string) {
  const host = await FakeHost.connect(uniqueHostId());
  const projectId = await createProject({ name, default_agent: "claude", default_model: "claude-haiku-4-5" });
  const spawned = await callTool(await initialize(), "session", { action: "spawn", project_id: projectId });
  const sessionId = String(spawned.structuredContent?.session_id);
  const tunnel = await SessionTunnel.open(sessionId);
  await tunnel.hello(host.hostId);
  return { projectId, sessionId, tunnel };
}

describe("usage", () => {
  it("adds a session's reports up per session, project and day, ignoring stale ones", async () => {
    const name = `usage-${crypto.randomUUID().slice(0, 8)}`;
    const { projectId, sessionId, tunnel } = await projectSession(name);
    tunnel.usage({ requests: 1, input_tokens: 100, output_tokens: 10, cost_usd: 0.001 });
    tunnel.usage({ requests: 3, input_tokens: 300, output_tokens: 30, cost_usd: 0.004 });
    tunnel.usage({ requests: 2, input_tokens: 200, output_tokens: 20, cost_usd: 0.002 });
    await tunnel.barrier();
    const expected = { requests: 3, input_tokens: 300, output_tokens: 30, cost_usd: 0.004 };
    let report = await usage({ project_id: projectId, days: 1 });
    await until(async () => {
      report = await usage({ project_id: projectId, days: 1 });
      return report.totals.requests === 3;
    }, "the project has the session's usage");
    expect(report.totals).toEqual(expected);
    expect(report.by_project).toEqual([{ project_id: projectId, name, ...expected }]);
    expect(report.by_day).toEqual([{ day: new Date().toISOString().slice(0, 10), ...expected }]);
    expect(report.sessions).toEqual([
      expect.objectContaining({
        session_id: sessionId,
        project_id: projectId,
        agent: "claude",
        model: "claude-haiku-4-5",
        ...expected,
      }),
    ]);
    // Across every project the admin may read, this one is among them with the same figures.
    const all = await usage({});
    expect(all.by_project).toContainEqual({ project_id: projectId, name, ...expected });
    expect(all.totals.requests).toBeGreaterThanOrEqual(3);
  });

  it("shows a token only the projects it may read", async () => {
    const { projectId, tunnel } = await projectSession(`usage-seen-${crypto.randomUUID().slice(0, 8)}`);
    tunnel.usage({ requests: 1, input_tokens: 10, output_tokens: 1, cost_usd: 0.0001 });
    await tunnel.barrier();
    const other = await createProject({ name: `usage-other-${crypto.randomUUID().slice(0, 8)}` });
    const created = await callTool(await initialize(), "token", {
      action: "create",
      name: "usage-reader",
      scope: `project:${other}:ro`,
    });
    const token = String(created.structuredContent?.token);
    const theirs = await usage({}, token);
    expect(theirs.by_project.map((p) => p.project_id)).not.toContain(projectId);
    expect(theirs.sessions.map((s) => s.project_id)).not.toContain(projectId);
    const refused = await callTool(await initialize(token), "usage", { project_id: projectId }, token);
    expect(refused.isError).toBe(true);
    expect(JSON.stringify(refused.structuredContent)).toContain("forbidden");
  });
});
