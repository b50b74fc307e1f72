/**
 * One session cannot reach another, tried as a hostile agent would, end to end: the Worker under
 * wrangler dev, a Docker host-agent, scripted droids in one project's container. Three sessions:
 * A (a caller tool, a project key), B (A's workspace), C (a workspace of its own). From each
 * session's own process (the droid's `exec` step, as its agent's shell would run it) a probe
 * reads every other process's /proc environ, cmdline and fds, the container's files and sockets,
 * and tries `hello` with the others' secrets: it finds no secret but its own, for a default
 * project and for workspace isolation. A second runner is refused, and every session still
 * answers a message afterwards. The secrets themselves are read from outside (a privileged exec).
 */
import { readFileSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";
import Dockerode from "dockerode";
import { describe, expect, it } from "vitest";
import { dockerContext } from "../support/docker-context.js";
import { dockerStack } from "./docker-stack.js";
import { runStep } from "./support.js";

const e2e = dockerStack();
const PROBE = readFileSync(join(import.meta.dirname, "../fixtures/probes/secret-probe.js"), "utf8");

interface ProcessSecrets {
  pid: number;
  uid: number;
  env: Record<string, string>;
}

interface Needle {
  name: string;
  owner: string;
  kind: "session_token" | "api_key" | "runner_token";
  value: string;
}

interface ProbeReport {
  uid: number;
  gid: number;
  seen: { environ: number; cmdline: number; fd_dirs: number };
  hits: { needle: string; owner: string; where: string }[];
  sockets: Record<string, { connected: boolean; code?: string }>;
  hellos: Record<string, { connected: boolean; ok?: boolean; error?: string }>;
}

const docker = () => new Dockerode({ socketPath: dockerContext().dockerSocket });

async function projectContainer(projectId: string): Promise<Dockerode.Container> {
  const [found] = await docker().listContainers({ filters: { label: [`oubliette.project=${projectId}`] } });
  if (!found) throw new Error(`no container for ${projectId}`);
  return docker().getContainer(found.Id);
}

/**
 * Every process's uid and Oubliette environment, read from the host's /proc as root (the test's
 * eyes only: inside the container nothing may read them, and nothing there can be given the
 * right to, with no-new-privileges).
 */
async function secretsOf(container: Dockerode.Container): Promise<ProcessSecrets[]> {
  const top = await container.top();
  const pidColumn = top.Titles.indexOf("PID");
  const out: ProcessSecrets[] = [];
  for (const row of top.Processes) {
    const pid = Number(row[pidColumn]);
    try {
      const env = Object.fromEntries(
        readFileSync(`/proc/${pid}/environ`, "latin1")
          .split("\0")
          .filter((kv) => kv.startsWith("OUBLIETTE_"))
          .map((kv) => [kv.slice(0, kv.indexOf("=")), kv.slice(kv.indexOf("=") + 1)]),
      );
      const uid = Number(/^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1]);
      out.push({ pid, uid, env });
    } catch {
      // it ended meanwhile
    }
  }
  return out;
}

/** The secrets of the container: the runner's, and each session's token and key. */
function needlesOf(processes: ProcessSecrets[], sessions: string[]): Needle[] {
  const needles = new Map<string, Needle>();
  for (const p of processes) {
    const runner = p.env.OUBLIETTE_RUNNER_TOKEN;
    if (runner)
      needles.set(runner, { name: "runner token", owner: "runner", kind: "runner_token", value: runner });
    const session = p.env.OUBLIETTE_SESSION_ID;
    if (!session || !sessions.includes(session)) continue;
    const token = p.env.OUBLIETTE_SESSION_TOKEN;
    if (token)
      needles.set(token, { name: `${session} token`, owner: session, kind: "session_token", value: token });
    const key = p.env.OUBLIETTE_API_KEY;
    if (key) needles.set(key, { name: `${session} key`, owner: session, kind: "api_key", value: key });
  }
  return [...needles.values()];
}

async function spawn(projectId: string, extra: Record<string, unknown>): Promise<string> {
  const { session_id } = await e2e.caller.ok<{ session_id: string }>("session", {
    action: "spawn",
    project_id: projectId,
    new_session: true,
    ...extra,
  });
  await e2e.caller.waitForOutput(session_id, (d) => d.op === "ready", 60_000);
  return session_id;
}

/** A hello with the real runner secret while the runner is connected (from the host, as root). */
function secondRunnerHello(socketPath: string, token: string): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const socket = connect(socketPath);
    let data = "";
    socket.once("error", reject);
    socket.on("connect", () =>
      socket.write(
        `${JSON.stringify({ jsonrpc: "2.0", id: 1, method: "hello", params: { role: "runner", runner_token: token, agents: [] } })}\n`,
      ),
    );
    socket.on("data", (chunk) => {
      data += String(chunk);
      if (data.includes("\n")) {
        socket.destroy();
        resolve(JSON.parse(data.slice(0, data.indexOf("\n"))) as Record<string, unknown>);
      }
    });
  });
}

describe.each([
  { isolation: false, name: "a default project" },
  { isolation: true, name: "a project with workspace isolation" },
])("in $name", ({ isolation }) => {
  it("no session's process finds another session's or the runner's secret, nor reaches their sockets", async () => {
    const { project_id: projectId } = await e2e.caller.ok<{ project_id: string }>("project", {
      action: "create",
      name: `separation-${isolation}-${crypto.randomUUID().slice(0, 8)}`,
      workspace_isolation: isolation,
    });
    const a = await spawn(projectId, {
      caller_id: "alice",
      caller_tools: [{ name: "secret_op", inputSchema: { type: "object" } }],
      oubliette_access: "project",
    });
    const b = await spawn(projectId, {});
    const c = await spawn(projectId, { workspace_id: "other", create_workspace: true });
    const sessions = [a, b, c];
    const container = await projectContainer(projectId);
    const processes = await secretsOf(container);
    const needles = needlesOf(processes, sessions);
    // What there is to find: the runner's secret, three session tokens, A's key.
    expect(needles.filter((n) => n.kind === "runner_token")).toHaveLength(1);
    expect(
      needles
        .filter((n) => n.kind === "session_token")
        .map((n) => n.owner)
        .sort(),
    ).toEqual([...sessions].sort());
    expect(needles.filter((n) => n.kind === "api_key").map((n) => n.owner)).toEqual([a]);
    // Who runs as whom: the runner is root; each session a uid of its own, none root.
    const uidOf = (session: string) =>
      new Set(processes.filter((p) => p.env.OUBLIETTE_SESSION_ID === session).map((p) => p.uid));
    const runnerUids = new Set(processes.filter((p) => p.env.OUBLIETTE_RUNNER_TOKEN).map((p) => p.uid));
    expect([...runnerUids]).toEqual([0]);
    const uids = sessions.map((s) => [...uidOf(s)]);
    for (const u of uids) expect(u).toHaveLength(1);
    expect(new Set(uids.flat()).size).toBe(3);
    expect(uids.flat().every((u) => u >= 30_000)).toBe(true);

    for (const self of sessions) {
      const line = await runStep(
        e2e.caller,
        self,
        {
          op: "exec",
          argv: ["node", "-e", PROBE],
          stdin: JSON.stringify({ needles, sessions, self }),
          timeout_ms: 60_000,
          max_bytes: 256 * 1024,
        },
        90_000,
      );
      const report = JSON.parse(String(line.stdout)) as ProbeReport;
      // It did look: it read the /proc entries its uid may read (its own among them).
      expect(report.seen.environ).toBeGreaterThan(0);
      expect(
        report.hits.filter((h) => h.owner === self && h.where.endsWith("/environ")).length,
      ).toBeGreaterThan(0);
      // And found nothing of anybody else's, anywhere.
      expect(report.hits.filter((h) => h.owner !== self)).toEqual([]);
      // Other sessions' sockets and the runner's are closed to it by the kernel.
      for (const [peer, result] of Object.entries(report.sockets)) {
        expect({ peer, ...result }).toEqual({ peer, connected: false, code: "EACCES" });
      }
      // On its own socket, others' secrets (and made-up ones) are refused.
      for (const [attempt, result] of Object.entries(report.hellos)) {
        expect({ attempt, connected: result.connected, ok: result.ok }).toEqual({
          attempt,
          connected: true,
          ok: false,
        });
      }
    }

    // A second runner, with the real secret, from the host: refused while the runner is there.
    const info = await container.inspect();
    const socketDir = info.Config.Labels?.["oubliette.socket-dir"] ?? "";
    const runnerToken = (info.Config.Env ?? [])
      .find((kv) => kv.startsWith("OUBLIETTE_RUNNER_TOKEN="))
      ?.slice("OUBLIETTE_RUNNER_TOKEN=".length);
    const refused = await secondRunnerHello(join(socketDir, "runner", "relay.sock"), runnerToken ?? "");
    expect(refused).toMatchObject({ error: { data: { reason: "runner_connected" } } });

    // Afterwards every session still answers a message, on its own droid, as its own uid.
    for (const [i, session] of sessions.entries()) {
      const who = await runStep(e2e.caller, session, { op: "fs", action: "whoami" });
      expect(who).toMatchObject({ ok: true, uid: uids[i]?.[0] });
    }
    await e2e.caller.call("project", { action: "delete", project_id: projectId, force: true });
  }, 300_000);
});
