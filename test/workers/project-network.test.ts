/**
 * A project's network and setup settings in the Worker: written exactly as
 * `network: {mode, allow, presets, methods}` on `project create` / `update` and `session spawn`,
 * refused naming the bad entry (nothing stored changes), described by `project options` and
 * `config_limits`, carried to the host in `session_start` (the project's and the session's, the
 * stricter wins there) and in `project_network` when changed. The session object turns the
 * gate's reports into `network_blocked` events (once per report id) with audit entries, and its
 * totals into `session get`'s `network`; a network approval may be answered `allow_project`,
 * which adds the host to the project's allowlist (audited), and only a network approval may.
 */
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { DEFAULT_SETUP_NETWORK_POLICY, type NETWORK_PRESETS } from "../../protocol/network.js";
import { TunnelMethod } from "../../protocol/tunnel.js";
import { disconnectAll, FakeHost, uniqueHostId } from "./support/fake-host.js";
import { callTool, initialize, type ToolResult } from "./support/mcp.js";
import { until } from "./support/poll.js";
import { createProject } from "./support/projects.js";
import { events, liveSession, sessionStub } from "./support/session.js";
import { ADMIN } from "./support/tokens.js";

afterEach(disconnectAll);

async function call(tool: string, args: Record<string, unknown>): Promise<ToolResult> {
  return callTool(await initialize(), tool, args);
}
const errorOf = (r: ToolResult) =>
  z.object({ error: z.object({ code: z.string(), message: z.string() }) }).parse(r.structuredContent).error;
const REGISTRY_ALLOWLIST = { mode: "allowlist", allow: ["registry.npmjs.org"], presets: [] };

async function projectGet(projectId: string) {
  return (await call("project", { action: "get", project_id: projectId })).structuredContent as Record<
    string,
    unknown
  >;
}

describe("a project's network and setup", () => {
  it("default to off and to the package registries for setup, and are described by options and config_limits", async () => {
    const projectId = await createProject();
    expect(await projectGet(projectId)).toMatchObject({
      network: { mode: "off", allow: [], presets: [] },
      setup: [],
      setup_network: DEFAULT_SETUP_NETWORK_POLICY,
      setup_timeout_seconds: 600,
    });
    const options = (await call("project", { action: "options" })).structuredContent as {
      network: { presets: typeof NETWORK_PRESETS; help: string };
      create_schema: { properties: Record<string, unknown> };
    };
    expect(options.network.presets["package-registries"].hosts).toContain("registry.npmjs.org");
    expect(options.network.help).toContain("allowlist");
    expect(Object.keys(options.create_schema.properties)).toEqual(
      expect.arrayContaining(["network", "setup", "setup_network", "setup_timeout_seconds"]),
    );
    const limits = (await call("config_limits", { project_id: projectId })).structuredContent;
    expect(limits).toMatchObject({
      network: { mode: "off" },
      setup: { steps: 0, network: DEFAULT_SETUP_NETWORK_POLICY, timeout_seconds: 600 },
    });
  });

  it("is written exactly as {mode, allow, presets, methods}", async () => {
    const network = {
      mode: "allowlist",
      allow: ["registry.npmjs.org", "*.example.com:443", "[2001:db8::1]:8080"],
      presets: ["package-registries"],
      methods: ["GET", "HEAD", "CONNECT"],
    };
    const projectId = await createProject({ network, setup: ["npm ci", ["make", "deps"]] });
    expect(await projectGet(projectId)).toMatchObject({ network, setup: ["npm ci", ["make", "deps"]] });
  });

  const BAD: [string, Record<string, unknown>, string][] = [
    ["an unknown preset", { network: { mode: "allowlist", presets: ["everything"] } }, "network.presets.0"],
    [
      "a malformed host",
      { network: { mode: "allowlist", allow: ["ok.example", "bad host"] } },
      "network.allow.1: bad host is not a host name",
    ],
    [
      "port 0",
      { network: { mode: "allowlist", allow: ["a.example", "b.example", "c.example:0"] } },
      "network.allow.2: c.example:0: a port is 1-65535, not 0",
    ],
    [
      "port 70000",
      { network: { mode: "allowlist", allow: ["c.example:70000"] } },
      "network.allow.0: c.example:70000: a port is 1-65535, not 70000",
    ],
    [
      "a list of 10,000 entries",
      { network: { mode: "allowlist", allow: Array.from({ length: 10_000 }, (_, i) => `h${i}.example`) } },
      "network.allow: at most 256 allow entries",
    ],
    ["an unknown mode", { network: { mode: "sometimes" } }, "network.mode"],
    [
      "a setup of 1 MiB",
      { setup: ["x".repeat(1024 * 1024)] },
      "setup.0: a setup command is at most 16384 characters",
    ],
    ["a bare wildcard", { setup_network: { mode: "allowlist", allow: ["*"] } }, "setup_network.allow.0"],
    [
      "an approval rule that would open a host",
      { approval_policy: { rules: [{ kind: "network", action: "allow" }], default: "ask" } },
      "network rule asks or denies",
    ],
  ];

  it.each(BAD)("create refuses %s, naming the entry", async (_label, bad, why) => {
    const created = await call("project", {
      action: "create",
      name: `bad-${crypto.randomUUID().slice(0, 8)}`,
      ...bad,
    });
    expect(created.isError).toBe(true);
    expect(errorOf(created)).toMatchObject({ code: "invalid_arguments" });
    expect(errorOf(created).message).toContain(why);
  });

  it("update changes what it names, refuses a bad entry without changing anything, and tells the project's host", async () => {
    const host = await FakeHost.connect(uniqueHostId("net"));
    const projectId = await createProject();
    // Placed on the host by its first session.
    const spawned = await call("session", { action: "spawn", project_id: projectId });
    expect(spawned.isError).toBeFalsy();
    const updated = await call("project", {
      action: "update",
      project_id: projectId,
      network: REGISTRY_ALLOWLIST,
      setup: ["npm ci"],
    });
    expect(updated.isError, JSON.stringify(updated.content)).toBeFalsy();
    expect(await projectGet(projectId)).toMatchObject({ network: REGISTRY_ALLOWLIST, setup: ["npm ci"] });
    const told = await host.socket.nextRequest(TunnelMethod.projectNetwork);
    expect(told.params).toMatchObject({ project_id: projectId, network: REGISTRY_ALLOWLIST });

    const before = await projectGet(projectId);
    for (const bad of [
      { network: { mode: "allowlist", allow: ["ok.example", "exa mple"] } },
      { setup: ["x".repeat(1024 * 1024)] },
      { name: "renamed" },
      { limits: { memory_mb: 4096 } },
    ]) {
      const refused = await call("project", { action: "update", project_id: projectId, ...bad });
      expect(refused.isError, JSON.stringify(bad).slice(0, 80)).toBe(true);
    }
    const empty = await call("project", { action: "update", project_id: projectId });
    expect(errorOf(empty).message).toContain("at least one setting");
    expect(await projectGet(projectId)).toEqual(before);
  });
});

describe("a session's network", () => {
  it("session_start carries the project's policy and the session's own", async () => {
    const host = await FakeHost.connect(uniqueHostId("net"));
    const projectId = await createProject({ network: { mode: "open" } });
    const own = { mode: "allowlist", allow: ["registry.npmjs.org"], presets: [] };
    const spawned = await call("session", { action: "spawn", project_id: projectId, network: own });
    expect(spawned.isError).toBeFalsy();
    const start = host.starts().at(-1);
    expect(start?.project?.network).toEqual({ mode: "open", allow: [], presets: [] });
    expect(start?.spec.network).toEqual([own]);
    const resumed = await call("session", { action: "spawn", project_id: projectId, network: own });
    expect(errorOf(resumed).message).toContain("keeps the network policy it was started with");
  });

  it("a refusal is an event and an audit entry, once per report however often it is sent; totals show in session get", async () => {
    const s = await liveSession();
    const report = {
      blocked_id: "nb_0123456789abcdef",
      host: "evil.example",
      port: 443,
      method: "CONNECT",
      code: "not_listed" as const,
      reason: "evil.example:443 is not in the project's network allowlist",
      source: "project" as const,
    };
    expect((await s.tunnel.networkBlocked(report)).kind).toBe("result");
    expect((await s.tunnel.networkBlocked(report)).kind).toBe("result");
    const blocked = (await events(s.sessionId)).events.filter((e) => e.type === "network_blocked");
    expect(blocked).toEqual([
      expect.objectContaining({
        host: "evil.example",
        port: 443,
        method: "CONNECT",
        code: "not_listed",
        reason: report.reason,
      }),
    ]);
    s.tunnel.networkUsage({
      hosts: [
        {
          host: "registry.npmjs.org",
          port: 443,
          connections: 3,
          bytes_out: 900,
          bytes_in: 120_000,
          blocked: 0,
        },
      ],
    });
    await until(async () => {
      const info = await sessionStub(s.sessionId).getInfo(ADMIN, null);
      return info.ok && info.value.network.hosts.length === 1;
    }, "the network totals are stored");
    const info = await sessionStub(s.sessionId).getInfo(ADMIN, null);
    expect(info.ok && info.value.network).toEqual({
      policies: [],
      hosts: [
        {
          host: "registry.npmjs.org",
          port: 443,
          connections: 3,
          bytes_out: 900,
          bytes_in: 120_000,
          blocked: 0,
        },
      ],
      other: null,
      blocked: 1,
    });
    const audit = (await call("audit", { action_prefix: "network.blocked" })).structuredContent as {
      entries: { target: string; outcome: string; via_session: string | null }[];
    };
    expect(audit.entries.filter((e) => e.via_session === s.sessionId)).toEqual([
      expect.objectContaining({
        target: expect.stringContaining("evil.example:443 CONNECT"),
        outcome: "not_listed",
      }),
    ]);
  });
});

describe("a network approval", () => {
  const networkAsks = {
    policies: [{ rules: [{ kind: "network" as const, action: "ask" as const }], default: "allow" as const }],
    timeoutMs: 60_000,
    denialMessage: "not approved",
  };
  const request = {
    kind: "network" as const,
    host: "docs.example.com",
    port: 443,
    summary: "Connect to docs.example.com:443",
  };

  it("allow_project adds the host to the project's allowlist (audited) and answers with scope project", async () => {
    const projectId = await createProject({ network: REGISTRY_ALLOWLIST });
    const s = await liveSession({ projectId, approvals: networkAsks });
    s.tunnel.ask("apr_net_0123456789ab", request);
    await until(
      async () => (await events(s.sessionId)).events.some((e) => e.type === "approval_request"),
      "the approval request",
    );
    const asked = (await events(s.sessionId)).events.find((e) => e.type === "approval_request");
    expect(asked).toMatchObject({ kind: "network", host: "docs.example.com", port: 443 });
    const answered = await sessionStub(s.sessionId).answerApproval({
      principal: ADMIN,
      requestId: "apr_net_0123456789ab",
      answer: "allow_project",
    });
    expect(answered).toMatchObject({ ok: true, value: { decision: "allow", scope: "project" } });
    expect(await s.tunnel.decision("apr_net_0123456789ab")).toMatchObject({
      decision: "allow",
      scope: "project",
    });
    await until(
      async () =>
        ((await projectGet(projectId)).network as { allow: string[] }).allow.includes("docs.example.com:443"),
      "the host is in the project's allowlist",
    );
    expect((await projectGet(projectId)).network).toMatchObject({
      allow: ["registry.npmjs.org", "docs.example.com:443"],
    });
    await until(async () => {
      const audit = (await call("audit", { action_prefix: "project.network_allow" })).structuredContent as {
        entries: { target: string; outcome: string }[];
      };
      return audit.entries.some(
        (e) => e.target === `${projectId} docs.example.com:443` && e.outcome === "ok",
      );
    }, "the audit entry");
    // The rest of the session's requests to that host pass unasked.
    s.tunnel.ask("apr_net_fedcba987654", request);
    expect(await s.tunnel.decision("apr_net_fedcba987654")).toMatchObject({
      decision: "allow",
      by: "session_allowance",
    });
  });

  it("allow_project answers network requests only", async () => {
    const s = await liveSession({ approvals: { ...networkAsks, policies: [{ rules: [], default: "ask" }] } });
    s.tunnel.ask("apr_shell_0123456789", { kind: "shell", command: "ls", summary: "ls" });
    await until(
      async () => (await events(s.sessionId)).events.some((e) => e.type === "approval_request"),
      "the approval request",
    );
    const refused = await sessionStub(s.sessionId).answerApproval({
      principal: ADMIN,
      requestId: "apr_shell_0123456789",
      answer: "allow_project",
    });
    expect(refused).toMatchObject({ ok: false, error: { code: "invalid_arguments" } });
  });

  it("a policy that would let a network request pass unasked does not open the network: it is refused", async () => {
    const s = await liveSession({
      approvals: {
        ...networkAsks,
        policies: [{ rules: [{ kind: "shell", action: "ask" }], default: "allow" }],
      },
    });
    s.tunnel.ask("apr_net_aaaaaaaaaaaa", request);
    expect(await s.tunnel.decision("apr_net_aaaaaaaaaaaa")).toMatchObject({
      decision: "deny",
      by: "policy",
      message: expect.stringContaining("docs.example.com:443 is not in the network policy"),
    });
  });
});
