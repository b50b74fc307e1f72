/**
 * The permission matrix: every tool × action × scope kind, generated from the tool definitions
 * (a new tool or action is in it without anyone adding it), against the seed's permission table,
 * through the real MCP endpoint with issued tokens.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import type { Access, Target } from "../../worker/src/auth/scopes.js";
import { toolDefinitions } from "../../worker/src/tools/catalog.js";
import { actionLabel, argumentsSchema } from "../../worker/src/tools/define.js";
import { disconnectAll, FakeHost, uniqueHostId } from "./support/fake-host.js";
import { rawCall } from "./support/jobs.js";
import { callTool, initialize, mcpFetch } from "./support/mcp.js";
import { createProject } from "./support/projects.js";

type Kind = "admin" | "admin:ro" | "project:A" | "project:A:ro" | "project:B" | "expired" | "revoked";
const KINDS: Kind[] = ["admin", "admin:ro", "project:A", "project:A:ro", "project:B", "expired", "revoked"];

/**
 * The seed's table (seeds/002 "Tool Permission Model" with the scope model), written out on its
 * own, not derived from the code under test. Project actions act on project A.
 */
function seedAllows(kind: Kind, access: Access, target: Target): boolean {
  switch (kind) {
    case "admin":
      return true;
    // README: admin:ro may read everything, the administration (tokens, hosts, audit) included.
    case "admin:ro":
      return access === "read" || access === "admin_read";
    case "project:A":
      return access !== "admin" && access !== "admin_read" && (target === "project" || access === "read");
    case "project:A:ro":
      return access === "read";
    case "project:B":
      return target === "global" && access === "read";
    case "expired":
    case "revoked":
      return false;
  }
}

/** The tools the seed names, with the access level and target it gives each. */
const SEED_NAMED: Record<string, [Access, Target]> = {
  "token.create": ["admin", "global"],
  "token.list": ["admin_read", "global"],
  "host.list": ["admin_read", "global"],
  audit: ["admin_read", "global"],
  "token.revoke": ["admin", "global"],
  "project.create": ["write", "global"],
  "project.list": ["read", "global"],
  "project.options": ["read", "global"],
  "project.delete": ["write", "project"],
  "project.get": ["read", "project"],
  "session.spawn": ["write", "project"],
  "session.message": ["write", "project"],
  "session.end": ["write", "project"],
  "session.cleanup": ["write", "project"],
  "session.get": ["read", "project"],
  "session.list": ["read", "project"],
  "session.events": ["read", "project"],
  "workspace.delete": ["write", "project"],
  "container.start": ["write", "project"],
  "container.stop": ["write", "project"],
  "container.exec": ["write", "project"],
  "container.logs": ["write", "project"],
  image_rebuild: ["write", "global"],
  "workspace.list": ["read", "project"],
  config_limits: ["read", "project"],
  approval_response: ["write", "project"],
};

const rows = toolDefinitions.flatMap((tool) =>
  Object.entries(tool.actions).map(([name, def]) => ({ tool, name, def, label: actionLabel(tool, name) })),
);

describe("the tool definitions", () => {
  it.each(rows.map((r) => [r.label, r] as const))(
    "%s has an example its own schema accepts",
    (_label, row) => {
      const args = row.tool.single === undefined ? { ...row.def.example, action: row.name } : row.def.example;
      expect(argumentsSchema(row.tool).safeParse(args).success).toBe(true);
    },
  );

  it("give every action the seed names the seed's access level and target", () => {
    const defined = Object.fromEntries(rows.map((r) => [r.label, [r.def.access, r.def.target]]));
    for (const [label, expected] of Object.entries(SEED_NAMED))
      expect([label, defined[label]]).toEqual([label, expected]);
  });
});

describe("the permission matrix", () => {
  const tokens = new Map<Kind, string>();
  const sessions = new Map<Kind, string>();
  let projectA = "";
  let projectB = "";
  let sessionA = "";
  let sessionToEnd = "";
  let scheduleA = "";
  let jobA = "";

  async function issue(
    admin: string,
    scope: string,
    extra: Record<string, unknown> = {},
  ): Promise<{ token: string; id: string }> {
    const created = await callTool(admin, "token", {
      action: "create",
      name: `matrix ${scope}`,
      scope,
      ...extra,
    });
    if (created.isError) throw new Error(`token create failed: ${created.content[0]?.text}`);
    const { token, token_id } = z
      .object({ token: z.string(), token_id: z.string() })
      .parse(created.structuredContent);
    return { token, id: token_id };
  }

  beforeAll(async () => {
    await FakeHost.connect(uniqueHostId("matrix"), { maxSessions: 100 });
    projectA = await createProject();
    projectB = await createProject();
    const admin = await initialize();
    const spawnIn = async () => {
      const spawned = await callTool(admin, "session", {
        action: "spawn",
        project_id: projectA,
        new_session: true,
      });
      return z.string().parse(spawned.structuredContent?.session_id);
    };
    sessionA = await spawnIn();
    sessionToEnd = await spawnIn();
    const schedule = await callTool(admin, "schedule", {
      action: "create",
      name: "matrix",
      cron_expr: "0 0 1 1 *",
      prompt: "matrix run",
      targets: [{ project_id: projectA }],
      overlap_behavior: "parallel",
    });
    scheduleA = z.string().parse(schedule.structuredContent?.schedule_id);
    // A job of project A (its exec fails at once on this host: any outcome will do).
    const exec = await rawCall(admin, "container", {
      action: "exec",
      project_id: projectA,
      command: ["true"],
    });
    jobA = exec._meta["oubliette/job_id"];
    const scopeOf: Record<Exclude<Kind, "expired" | "revoked">, string> = {
      admin: "admin",
      "admin:ro": "admin:ro",
      "project:A": `project:${projectA}`,
      "project:A:ro": `project:${projectA}:ro`,
      "project:B": `project:${projectB}`,
    };
    for (const [kind, scope] of Object.entries(scopeOf))
      tokens.set(kind as Kind, (await issue(admin, scope)).token);
    // Both start working, and stop: one by expiring, one by being revoked. The expiring one
    // starts its session at once (on a busy machine the others' may take longer than its life).
    const expiresAt = Date.now() + 3_000;
    const expired = await issue(admin, "admin", { expires_in_hours: 3 / 3600 });
    tokens.set("expired", expired.token);
    sessions.set("expired", await initialize(expired.token));
    const revoked = await issue(admin, "admin");
    tokens.set("revoked", revoked.token);
    for (const kind of KINDS) if (kind !== "expired") sessions.set(kind, await initialize(tokens.get(kind)));
    expect(
      (await callTool(admin, "token", { action: "revoke", token_id: revoked.id })).isError,
    ).toBeUndefined();
    // Past the expiry and the isolates' token cache.
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, expiresAt - Date.now()) + 2_500));
  }, 30_000);

  afterAll(disconnectAll);

  /** The example arguments, aimed at project A and its sessions. */
  function argsFor(row: (typeof rows)[number]): Record<string, unknown> {
    const args: Record<string, unknown> = { ...row.def.example };
    if (row.tool.single === undefined) args.action = row.name;
    if ("project_id" in args) args.project_id = projectA;
    if ("session_id" in args) args.session_id = row.label === "session.end" ? sessionToEnd : sessionA;
    if ("schedule_id" in args) args.schedule_id = scheduleA;
    if ("job_id" in args) args.job_id = jobA;
    if (Array.isArray(args.targets)) args.targets = args.targets.map((t) => ({ ...t, project_id: projectA }));
    if (typeof args.scope === "string" && args.scope.startsWith("project:"))
      args.scope = `project:${projectA}:ro`;
    if (row.label === "project.create") args.name = `matrix-${crypto.randomUUID().slice(0, 8)}`;
    return args;
  }

  const cases = rows.flatMap((row) => KINDS.map((kind) => [row.label, kind, row] as const));

  it.each(cases)("%s with %s", async (_label, kind, row) => {
    const allowed = seedAllows(kind, row.def.access, row.def.target);
    const session = sessions.get(kind) ?? "";
    const res = await mcpFetch({
      body: {
        jsonrpc: "2.0",
        id: 1,
        method: "tools/call",
        params: { name: row.tool.name, arguments: argsFor(row) },
      },
      session,
      token: tokens.get(kind) ?? null,
      headers: { "mcp-protocol-version": "2025-11-25" },
    });
    if (kind === "expired" || kind === "revoked") {
      expect(res.status).toBe(401);
      await res.body?.cancel();
      return;
    }
    expect(res.status).toBe(200);
    const body = z
      .object({
        result: z.object({ isError: z.boolean().optional(), structuredContent: z.unknown().optional() }),
      })
      .parse(await res.json());
    const code = z
      .object({ error: z.object({ code: z.string().optional() }) })
      .safeParse(body.result.structuredContent).data?.error.code;
    if (allowed) expect(code).not.toBe("forbidden");
    else expect(code).toBe("forbidden");
  });
});
