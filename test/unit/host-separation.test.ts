/**
 * The host-agent's pieces that keep sessions apart, each at its own level: who a session is
 * (project.json: versioned, migrated, uids never shared), who owns which directory, which secret
 * each socket takes, one runner per container (a second refused, a silent one dropped), and
 * socket names longer than the kernel takes.
 */
import { spawn } from "node:child_process";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { connect, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { killUidProcesses, pidsOfUid } from "../../container-client/src/runner/uid-sweep.js";
import { ownerOf, widened } from "../../host-agent/src/projects/ownership.js";
import { migrateRecord, sessionIndex, workspaceIndex } from "../../host-agent/src/projects/project-record.js";
import { RunnerLink } from "../../host-agent/src/sessions/runner-link.js";
import {
  type ContainerHandlers,
  RelaySocketServer,
  runnerOnlyAuth,
  sessionOnlyAuth,
} from "../../host-agent/src/socket/index.js";
import { createLogger } from "../../lib/log.js";
import { MAX_SOCKET_PATH_BYTES, withSocketPath } from "../../lib/unix-path.js";
import { Identities, sessionUid, workspaceGid } from "../../protocol/container-layout.js";
import { RawClient } from "../support/raw-socket-client.js";

const logger = createLogger({ name: "separation-test", level: "silent" });

/** Socket handlers whose runner side is `runner` (the rest answers nothing of interest). */
function handlersFor(runner: RunnerLink): ContainerHandlers {
  return {
    callerTool: async () => ({}),
    oubliette: async () => ({}),
    admitRunner: (connection) => runner.admit(connection),
    runnerConnected: (connection, agents) => runner.attach(connection, agents),
    runnerGone: (connection) => runner.detach(connection),
    agentEvents: () => {},
  };
}
const SESSION = "ses_000000000000000000000001";
const PROJECT = "prj_000000000000000000000001";

describe("project.json", () => {
  it("migrates a version-1 record (workspaces only) to version 2 and starts sessions from none", () => {
    expect(migrateRecord({ isolation: true, workspaces: { default: 0, other: 3 } })).toEqual({
      version: 2,
      isolation: true,
      workspaces: { default: 0, other: 3 },
      sessions: {},
      next_session: 0,
    });
    expect(migrateRecord("not a record")).toMatchObject({ version: 2, workspaces: {}, sessions: {} });
  });

  it("gives each session an index of its own, skips the uids live sessions hold when it wraps", () => {
    const record = migrateRecord(undefined);
    expect(sessionIndex(record, "ses_a")).toBe(0);
    expect(sessionIndex(record, "ses_b")).toBe(1);
    expect(sessionIndex(record, "ses_a")).toBe(0);
    // Far along, the count wraps onto index 0's uid, which ses_a still holds.
    record.next_session = Identities.sessionUidCount;
    const wrapped = sessionIndex(record, "ses_c");
    expect(sessionUid(wrapped)).not.toBe(sessionUid(record.sessions.ses_a ?? -1));
    expect(sessionUid(wrapped)).not.toBe(sessionUid(record.sessions.ses_b ?? -1));
    expect(new Set(Object.values(record.sessions).map(sessionUid)).size).toBe(3);
  });

  it("numbers workspaces for their groups and refuses past the last group", () => {
    const record = migrateRecord(undefined);
    expect(workspaceIndex(record, "default")).toBe(0);
    expect(workspaceIndex(record, "other")).toBe(1);
    expect(workspaceGid(true, 1)).toBe(Identities.workspaceGidBase + 1);
    expect(workspaceGid(false, 1)).toBe(Identities.projectGid);
    record.workspaces.last = Identities.maxWorkspaceIndex;
    expect(() => workspaceIndex(record, "one-too-many")).toThrow(/used up/);
  });
});

describe("directory owners", () => {
  it("as root: a session's socket directory and home are its uid's alone, a workspace its group's", () => {
    expect(ownerOf("root", { kind: "session-sockets", uid: 30_001, gid: 1000 })).toEqual({
      uid: 30_001,
      gid: 1000,
      mode: 0o700,
    });
    expect(ownerOf("root", { kind: "home", uid: 30_001, gid: 1000 })).toEqual({
      uid: 30_001,
      gid: 1000,
      mode: 0o700,
    });
    expect(ownerOf("root", { kind: "runner-sockets" })).toEqual({ uid: 0, gid: 0, mode: 0o700 });
    expect(ownerOf("root", { kind: "workspace", gid: 20_002 })).toEqual({
      uid: 0,
      gid: 20_002,
      mode: 0o2770,
    });
    expect(ownerOf("root", { kind: "workspaces", isolation: true })).toEqual({ uid: 0, gid: 0, mode: 0o711 });
    expect(ownerOf("own", { kind: "home", uid: 1, gid: 1 })).toBeNull();
  });

  it("lets a workspace's group do what a file's owner may, and keeps directories setgid", () => {
    expect(widened(0o644, false, "root")).toBe(0o664);
    expect(widened(0o755, false, "root")).toBe(0o775);
    expect(widened(0o700, true, "root")).toBe(0o2770);
    expect(widened(0o600, false, "open")).toBe(0o666);
    expect(widened(0o700, true, "open")).toBe(0o777);
  });
});

describe("sockets that take one peer each", () => {
  let dir: string;
  const servers: RelaySocketServer[] = [];
  const clients: RawClient[] = [];

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), "separation-"));
  });

  afterEach(async () => {
    for (const c of clients.splice(0)) c.socket.destroy();
    await Promise.all(servers.splice(0).map((s) => s.close()));
    await rm(dir, { recursive: true, force: true });
  });

  async function open(path: string): Promise<RawClient> {
    const client = await RawClient.open(path);
    clients.push(client);
    return client;
  }

  it("a session's socket takes only that session's secret, as a client; the runner's only the runner's", async () => {
    const runner = new RunnerLink({ logger, onAgents: () => {} });
    const handlers = handlersFor(runner);
    const sessionPath = join(dir, "session.sock");
    const runnerPath = join(dir, "runner.sock");
    for (const [path, auth] of [
      [sessionPath, sessionOnlyAuth(SESSION, "session-secret")],
      [runnerPath, runnerOnlyAuth("runner-secret")],
    ] as const) {
      const server = new RelaySocketServer({ path, projectId: PROJECT, auth, handlers, logger });
      await server.start();
      servers.push(server);
    }
    const asRunnerOnSession = await (await open(sessionPath)).hello({
      role: "runner",
      runner_token: "runner-secret",
      agents: [],
    });
    expect(asRunnerOnSession.error?.code).toBe(-32003);
    const wrongSession = await (await open(sessionPath)).hello({ session_token: "other-secret" });
    expect(wrongSession.error?.code).toBe(-32003);
    const right = await (await open(sessionPath)).hello({ session_token: "session-secret" });
    expect(right.result).toMatchObject({ session_id: SESSION });
    const clientOnRunner = await (await open(runnerPath)).hello({ session_token: "session-secret" });
    expect(clientOnRunner.error?.code).toBe(-32003);

    // One runner: the first is it; a second, with the same secret, is refused while it is there.
    const first = await open(runnerPath);
    expect(
      (await first.hello({ role: "runner", runner_token: "runner-secret", agents: [] })).result,
    ).toBeDefined();
    const second = await open(runnerPath);
    const refused = await second.hello({ role: "runner", runner_token: "runner-secret", agents: [] });
    expect(refused.error).toMatchObject({ code: -32000, data: { reason: "runner_connected" } });
    // Once the first is gone, a runner may connect again (a restarted runner reconnects).
    first.socket.destroy();
    await expect
      .poll(async () => {
        const again = await open(runnerPath);
        return (await again.hello({ role: "runner", runner_token: "runner-secret", agents: [] })).result;
      })
      .toBeDefined();
    runner.close();
  });

  it("drops a runner that stops answering pings, so its reconnect takes over", async () => {
    const runner = new RunnerLink({ logger, onAgents: () => {}, pingIntervalMs: 50, pingTimeoutMs: 200 });
    const path = join(dir, "runner.sock");
    const server = new RelaySocketServer({
      path,
      projectId: PROJECT,
      auth: runnerOnlyAuth("runner-secret"),
      handlers: handlersFor(runner),
      logger,
    });
    await server.start();
    servers.push(server);
    const silent = await open(path);
    await silent.hello({ role: "runner", runner_token: "runner-secret", agents: [] });
    expect(runner.connected).toBe(true);
    // It never answers the pings it is sent.
    await silent.waitClosed(3_000);
    expect(runner.connected).toBe(false);
    runner.close();
  });

  it("binds and connects a socket whose path is longer than the kernel's socket names", async () => {
    const deep = join(dir, "a".repeat(60), "b".repeat(60));
    await mkdir(deep, { recursive: true });
    const path = join(deep, "relay.sock");
    expect(Buffer.byteLength(path)).toBeGreaterThan(MAX_SOCKET_PATH_BYTES);
    const server = createServer((socket) => socket.end("hi\n"));
    await withSocketPath(path, (usable) => new Promise<void>((resolve) => server.listen(usable, resolve)));
    try {
      const answer = await withSocketPath(
        path,
        (usable) =>
          new Promise<string>((resolve, reject) => {
            const client = connect(usable);
            client.once("error", reject);
            client.once("data", (data) => resolve(String(data)));
          }),
      );
      expect(answer).toBe("hi\n");
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

describe("a session's stray processes", () => {
  it.runIf(process.getuid?.() === 0)(
    "are all ended when the session ends, whatever their group",
    async () => {
      const uid = 64_999;
      // A daemon the agent forked off its process group: its own session, its own group.
      const stray = spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], {
        uid,
        gid: uid,
        detached: true,
        stdio: "ignore",
      });
      await new Promise((resolve) => stray.once("spawn", resolve));
      expect(await pidsOfUid(uid)).toContain(stray.pid);
      const exited = new Promise((resolve) => stray.once("exit", resolve));
      expect(await killUidProcesses(uid)).toBeGreaterThanOrEqual(1);
      await exited;
      expect(await pidsOfUid(uid)).toEqual([]);
    },
  );
});
