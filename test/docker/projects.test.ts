/**
 * One container per project, against a real Docker Engine and the droid image: the host-agent's
 * ProjectManager driven through the host channel's real request handlers (a linked in-memory
 * JSON-RPC pair stands in for the registry's WebSocket), sessions' tunnels to a fake Worker on
 * loopback, scripted droids as the agents. What each agent does, it reports on its tunnel.
 */

import { execFileSync } from "node:child_process";
import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type Dockerode from "dockerode";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GitCredentials } from "../../host-agent/src/git/git-credentials.js";
import { loadModelKeys } from "../../host-agent/src/models/model-keys.js";
import { ModelProxy } from "../../host-agent/src/models/model-proxy.js";
import { ProjectManager } from "../../host-agent/src/projects/project-manager.js";
import { DockerRuntime, PROJECT_LABEL } from "../../host-agent/src/runtime/docker-runtime.js";
import { serveHostRequests } from "../../host-agent/src/tunnel/host-control.js";
import { createLogger } from "../../lib/log.js";
import { RpcPeer } from "../../lib/rpc/peer.js";
import type { RpcError } from "../../protocol/rpc/errors.js";
import { ensureDockerEngine } from "../../scripts/docker/engine.js";
import { dockerContext } from "../support/docker-context.js";
import { execAs } from "../support/docker-exec.js";
import { FakeWorker } from "../support/fake-worker.js";
import { GitServer, gitAsync } from "../support/git-server.js";

const logger = createLogger({ name: "projects-test", level: process.env.OUBLIETTE_LOG_LEVEL ?? "silent" });
const hostId = `projects-test-${process.pid}`;
/** Plain measured volumes: this file is about containers and sessions, not disk bounds. */
const TEST_DISK = { mode: "measured", defaultMb: 4096, checkMs: 5_000, minFreeMb: 0, tmpMb: 16 } as const;
const run = process.pid.toString(16).padStart(8, "0");
const projectId = (n: number) => `prj_${run}${n.toString(16).padStart(16, "0")}`;
const sessionId = (n: number) => `ses_${run}${n.toString(16).padStart(16, "0")}`;

let docker: Dockerode;
let image: string;
let worker: FakeWorker;
let manager: ProjectManager;
let registry: RpcPeer;
let dataDir: string;
let socketDir: string;

/** Two RpcPeers wired to each other: the registry's side and the host's. */
function linkedPeers(): { registry: RpcPeer; host: RpcPeer } {
  let a: RpcPeer | null = null;
  let b: RpcPeer | null = null;
  const options = { maxMessageBytes: 1024 * 1024, logger };
  const deliver = (to: () => RpcPeer | null) => (text: string) => {
    setImmediate(() => to()?.receive(text));
    return true;
  };
  a = new RpcPeer({ ...options, send: deliver(() => b) });
  b = new RpcPeer({ ...options, send: deliver(() => a) });
  return { registry: a, host: b };
}

function call<T = Record<string, unknown>>(method: string, params: unknown, timeoutMs = 60_000): Promise<T> {
  return registry.request(method, params, { timeoutMs }) as Promise<T>;
}

/** The `data.reason` a request is refused with ("params" for invalid params; null when it succeeds). */
async function refusal(method: string, params: unknown): Promise<string | null> {
  const error = await call(method, params).then(
    () => null,
    (err: RpcError) => err,
  );
  if (error === null) return null;
  return error.code === -32602 ? "params" : (error.reason ?? String(error.code));
}

async function until(check: () => boolean, what: string, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const spec = (extra: Record<string, unknown> = {}) => ({ limits: { memory_mb: 256 }, ...extra });

async function startSession(session: string, project: string, workspace: string, projectSpec = spec()) {
  await call("session_start", {
    session_id: session,
    project_id: project,
    workspace_id: workspace,
    project: projectSpec,
    spec: { env: { SESSION_NOTE: workspace } },
  });
  await until(() => worker.outputs(session).some((d) => d.op === "ready"), `${session} ready`);
}

/** Runs one fs step in a session's agent and returns what it reported. */
async function fs(
  session: string,
  seq: number,
  step: Record<string, unknown>,
): Promise<Record<string, unknown>> {
  const id = `fs-${seq}`;
  await worker.message(session, seq, JSON.stringify({ id, steps: [{ op: "fs", ...step }] }));
  await until(() => worker.outputs(session).some((d) => d.op === "done" && d.id === id), `${session} ${id}`);
  const reports = worker.outputs(session).filter((d) => d.op === "fs");
  return reports.at(-1) ?? {};
}

async function containers(project: string): Promise<Dockerode.ContainerInfo[]> {
  return docker.listContainers({ all: true, filters: { label: [`${PROJECT_LABEL}=${project}`] } });
}

/** The host's git credential of the tests' git server (it must never reach a container). */
const GIT_TOKEN = "glpat-test-0123456789-secret";
let gitServer: GitServer;
/** A second server: where a hostile `insteadOf` would send the push and its credential. */
let decoy: GitServer;

const node = (script: string, ...args: string[]) => ["node", "-e", script, ...args];

beforeAll(async () => {
  gitServer = await GitServer.start({ auth: { username: "x-access-token", token: GIT_TOKEN } });
  decoy = await GitServer.start();
  const engine = await ensureDockerEngine({ install: true, log: () => {} });
  docker = engine.docker;
  // By id: another checkout on this engine may re-tag oubliette/droid:dev while we run.
  image = (await docker.getImage(dockerContext().droidImage ?? "oubliette/droid:dev").inspect()).Id;
  worker = await FakeWorker.start(logger);
  dataDir = mkdtempSync(join(tmpdir(), "oub-projects-data-"));
  socketDir = mkdtempSync(join(tmpdir(), "oub-projects-sock-"));
  manager = new ProjectManager({
    workerUrl: worker.url,
    hostToken: "test-host-token",
    hostId,
    runtime: new DockerRuntime({ docker, hostId, defaultImage: image, logger, stopTimeoutSeconds: 2 }),
    dataDir,
    socketRoot: socketDir,
    maxSessions: 8,
    maxProjects: 4,
    models: new ModelProxy({ keys: loadModelKeys({}), logger }),
    disk: TEST_DISK,
    logger,
    timing: { heartbeatMs: 5_000, maxReconnectDelayMs: 1_000 },
    // The clone below is a file:// remote on this machine (test/integration/git-clone.test.ts
    // checks the default, which refuses it).
    git: {
      policy: { allowLocal: true },
      credentials: new GitCredentials(
        new Map([["test-forge", { token: GIT_TOKEN, username: "x-access-token" }]]),
      ),
    },
  });
  const peers = linkedPeers();
  registry = peers.registry;
  serveHostRequests(peers.host, manager, logger);
}, 600_000);

afterAll(async () => {
  for (const n of [1, 2, 3, 4]) await call("project_remove", { project_id: projectId(n) }).catch(() => {});
  await worker?.close();
  await gitServer?.close();
  await decoy?.close();
  for (const dir of [dataDir, socketDir]) if (dir) rmSync(dir, { recursive: true, force: true });
}, 120_000);

describe("a project's container", () => {
  const P = projectId(1);

  it("starts once; two sessions run in it, each in its workspace; exec sees what an agent wrote", async () => {
    const first = await call<{ container_id: string; started: boolean }>("project_ensure", {
      project_id: P,
      spec: spec(),
    });
    expect(first.started).toBe(true);
    const again = await call<{ container_id: string; started: boolean }>("project_ensure", {
      project_id: P,
      spec: spec(),
    });
    expect(again).toEqual({ container_id: first.container_id, started: false });
    expect(await call("workspace_create", { project_id: P, workspace_id: "second" })).toEqual({
      path: "/workspace/second",
      git: null,
    });
    await startSession(sessionId(1), P, "default");
    await startSession(sessionId(2), P, "second");
    expect((await containers(P)).map((c) => c.Id)).toEqual([first.container_id]);
    const info = await docker.getContainer(first.container_id).inspect();
    expect(info.HostConfig).toMatchObject({
      NetworkMode: "none",
      CapDrop: ["ALL"],
      Memory: 256 * 1024 * 1024,
      PidsLimit: 256,
      NanoCpus: 1e9,
      CapAdd: ["SETUID", "SETGID", "KILL"],
      ReadonlyRootfs: true,
    });
    // The runner is root (with nothing but those capabilities); each session is a uid of its own,
    // in the project's group.
    expect(info.Config.User).toBe("0:0");
    const one = await fs(sessionId(1), 1, { action: "whoami" });
    const two = await fs(sessionId(2), 1, { action: "whoami" });
    expect(one).toMatchObject({ cwd: "/workspace/default", gid: 1000 });
    expect(two).toMatchObject({ cwd: "/workspace/second", gid: 1000 });
    expect(one.uid).toBeGreaterThanOrEqual(30_000);
    expect(two.uid).toBeGreaterThanOrEqual(30_000);
    expect(one.uid).not.toBe(two.uid);
    expect(
      await fs(sessionId(1), 2, { action: "write", path: "hello.txt", text: "from session one" }),
    ).toMatchObject({ ok: true });

    const read = await call("container_exec", {
      project_id: P,
      command: node("process.stdout.write(require('fs').readFileSync('hello.txt','utf8'))"),
      cwd: "/workspace/default",
    });
    expect(read).toMatchObject({
      exit_code: 0,
      stdout: "from session one",
      stderr: "",
      truncated: false,
      timed_out: false,
    });
    // The runner's secret is not for a user's command.
    const env = await call<{ stdout: string }>("container_exec", {
      project_id: P,
      command: node("process.stdout.write(process.env.OUBLIETTE_RUNNER_TOKEN ?? 'unset')"),
    });
    expect(env.stdout).toBe("");
  });

  it("exec: cwd, stderr and exit code, output cap, timeout that kills", async () => {
    const cwd = await call("container_exec", {
      project_id: P,
      command: node("process.stdout.write(process.cwd()); process.stderr.write('oops'); process.exit(7)"),
      cwd: "/workspace/second",
    });
    expect(cwd).toMatchObject({
      exit_code: 7,
      stdout: "/workspace/second",
      stderr: "oops",
      timed_out: false,
    });
    const big = await call<{ stdout: string; truncated: boolean }>("container_exec", {
      project_id: P,
      command: node("process.stdout.write('x'.repeat(200000))"),
      output_limit_bytes: 1000,
    });
    expect(big.stdout).toBe("x".repeat(1000));
    expect(big.truncated).toBe(true);
    const slow = await call<{ timed_out: boolean; exit_code: number | null; duration_ms: number }>(
      "container_exec",
      {
        project_id: P,
        command: node(
          "require('fs').writeFileSync('/tmp/slow.pid', String(process.pid)); setInterval(() => {}, 1000)",
        ),
        // Long enough for node to start and write its pid on a loaded machine.
        timeout_ms: 3_000,
      },
    );
    expect(slow).toMatchObject({ timed_out: true, exit_code: null });
    expect(slow.duration_ms).toBeLessThan(10_000);
    const alive = await call<{ stdout: string }>("container_exec", {
      project_id: P,
      command: node(
        "const fs = require('fs'); if (!fs.existsSync('/tmp/slow.pid')) { process.stdout.write('never started'); process.exit(0) } const p = fs.readFileSync('/tmp/slow.pid','utf8'); try { process.kill(Number(p), 0); process.stdout.write('alive') } catch { process.stdout.write('gone') }",
      ),
    });
    expect(alive.stdout).toBe("gone");
    // A bad argv never reaches a shell: it is one argument.
    const literal = await call<{ stdout: string }>("container_exec", {
      project_id: P,
      command: node("process.stdout.write(process.argv[1])", "$(id); `id`"),
    });
    expect(literal.stdout).toBe("$(id); `id`");
  });

  it("logs: both streams, with the agents' stderr prefixed by session, tail and since", async () => {
    const all = await call<{ lines: string[]; truncated: boolean }>("container_logs", {
      project_id: P,
      tail: 1000,
    });
    expect(all.lines.some((l) => l.includes(`[${sessionId(1)}] `))).toBe(true);
    expect(all.lines.some((l) => l.includes(`[${sessionId(2)}] `))).toBe(true);
    const tail = await call<{ lines: string[] }>("container_logs", { project_id: P, tail: 2 });
    expect(tail.lines).toHaveLength(2);
    expect(tail.lines).toEqual(all.lines.slice(-2));
    const future = await call<{ lines: string[] }>("container_logs", {
      project_id: P,
      since: Math.floor(Date.now() / 1000) + 3600,
    });
    expect(future.lines).toEqual([]);
  });

  it("refresh is refused while a session runs and recreates the container once none does", async () => {
    expect(await refusal("project_refresh", { project_id: P, spec: spec() })).toBe("busy");
    expect(await refusal("workspace_delete", { project_id: P, workspace_id: "second" })).toBe("busy");
    expect(await refusal("workspace_delete", { project_id: P, workspace_id: "default" })).toBe("invalid");
    const before = (await containers(P))[0]?.Id;
    await call("session_stop", { session_id: sessionId(1), reason: "test" });
    await call("session_stop", { session_id: sessionId(2), reason: "test" });
    expect(manager.running()).toEqual([]);
    // Stopping a session leaves the container for the project's others.
    expect((await containers(P)).map((c) => c.Id)).toEqual([before]);
    const refreshed = await call<{ container_id: string }>("project_refresh", {
      project_id: P,
      spec: spec(),
    });
    expect(refreshed.container_id).not.toBe(before);
    expect((await containers(P)).map((c) => c.Id)).toEqual([refreshed.container_id]);
    // The volume outlived the container.
    const read = await call("container_exec", {
      project_id: P,
      command: node(
        "process.stdout.write(require('fs').readFileSync('/workspace/default/hello.txt','utf8'))",
      ),
    });
    expect(read).toMatchObject({ stdout: "from session one" });
  });

  it("stop ends every session in it with the reason; remove takes container, socket dir and workspaces", async () => {
    await startSession(sessionId(3), P, "default");
    await call("project_stop", { project_id: P, reason: "the operator stopped it" });
    expect(worker.ended(sessionId(3))).toBe("the operator stopped it");
    expect(await containers(P)).toEqual([]);
    expect(await refusal("container_exec", { project_id: P, command: ["true"] })).toBe("not_running");
    await call("project_stop", { project_id: P, reason: "again" });
    expect(await call<{ started: boolean }>("project_ensure", { project_id: P, spec: spec() })).toMatchObject(
      { started: true },
    );
    expect(existsSync(join(socketDir, P, "runner", "relay.sock"))).toBe(true);
    await call("project_remove", { project_id: P });
    expect(await containers(P)).toEqual([]);
    expect(existsSync(join(socketDir, P))).toBe(false);
    expect(existsSync(join(dataDir, "projects", P))).toBe(false);
    await call("project_remove", { project_id: P });
  });
});

describe("workspace isolation", () => {
  const P = projectId(2);
  const iso = spec({ workspace_isolation: true });

  it("gives each workspace its group: one agent cannot see another's workspace, exec can", async () => {
    const ensured = await call<{ container_id: string }>("project_ensure", { project_id: P, spec: iso });
    const info = await docker.getContainer(ensured.container_id).inspect();
    expect(info.Config.User).toBe("0:0");
    expect(info.HostConfig.CapAdd).toEqual(["SETUID", "SETGID", "KILL"]);
    expect(info.HostConfig.SecurityOpt).toEqual(["no-new-privileges"]);
    await call("workspace_create", { project_id: P, workspace_id: "alpha" });
    await call("workspace_create", { project_id: P, workspace_id: "beta" });
    await startSession(sessionId(11), P, "alpha", iso);
    await startSession(sessionId(12), P, "beta", iso);
    const a = await fs(sessionId(11), 1, { action: "whoami" });
    const b = await fs(sessionId(12), 1, { action: "whoami" });
    expect(a).toMatchObject({ cwd: "/workspace/alpha" });
    expect(a.uid).toBeGreaterThanOrEqual(30_000);
    expect(b.uid).toBeGreaterThanOrEqual(30_000);
    expect(a.uid).not.toBe(b.uid);
    expect(a.gid).toBeGreaterThanOrEqual(20_000);
    expect(b.gid).toBeGreaterThanOrEqual(20_000);
    expect(a.gid).not.toBe(b.gid);
    const beta = statSync(join(dataDir, "projects", P, "volume", "workspaces", "beta"));
    expect({ uid: beta.uid, gid: beta.gid, mode: beta.mode & 0o7777 }).toEqual({
      uid: 0,
      gid: b.gid,
      mode: 0o2770,
    });
    expect(await fs(sessionId(12), 2, { action: "write", path: "secret.txt", text: "beta's" })).toMatchObject(
      { ok: true },
    );
    expect(await fs(sessionId(11), 2, { action: "list", path: "/workspace/beta" })).toMatchObject({
      ok: false,
      code: "EACCES",
    });
    expect(await fs(sessionId(11), 3, { action: "read", path: "/workspace/beta/secret.txt" })).toMatchObject({
      ok: false,
      code: "EACCES",
    });
    expect(await fs(sessionId(11), 4, { action: "list", path: "/workspace" })).toMatchObject({
      ok: false,
      code: "EACCES",
    });
    const exec = await call<{ stdout: string }>("container_exec", {
      project_id: P,
      command: node("process.stdout.write(require('fs').readdirSync('/workspace/beta').join(','))"),
    });
    expect(exec.stdout).toBe("secret.txt");
  });
});

describe("workspaces on the host", () => {
  const P = projectId(3);

  it("creates git workspaces: init, and a file:// clone, owned by the container's user", async () => {
    await call("project_ensure", { project_id: P, spec: spec() });
    expect(await call("workspace_create", { project_id: P, workspace_id: "repo", init_git: true })).toEqual({
      path: "/workspace/repo",
      git: "init",
    });
    const repo = join(dataDir, "projects", P, "volume", "workspaces", "repo");
    expect(statSync(join(repo, ".git")).uid).toBe(1000);
    expect(statSync(join(repo, ".git", "HEAD")).uid).toBe(1000);
    // Idempotent: an existing workspace is left alone.
    expect(await call("workspace_create", { project_id: P, workspace_id: "repo", init_git: true })).toEqual({
      path: "/workspace/repo",
      git: null,
    });

    const source = mkdtempSync(join(tmpdir(), "oub-clone-src-"));
    try {
      const git = (...args: string[]) =>
        execFileSync("git", ["-C", source, "-c", "user.name=t", "-c", "user.email=t@t", ...args]);
      git("init", "--quiet");
      writeFileSync(join(source, "README.md"), "cloned\n");
      git("add", "README.md");
      git("commit", "--quiet", "-m", "first");
      expect(
        await call("workspace_create", {
          project_id: P,
          workspace_id: "clone",
          remote_url: `file://${source}`,
        }),
      ).toEqual({ path: "/workspace/clone", git: "clone" });
      const read = await call("container_exec", {
        project_id: P,
        command: node("process.stdout.write(require('fs').readFileSync('README.md','utf8'))"),
        cwd: "/workspace/clone",
      });
      expect(read).toMatchObject({ stdout: "cloned\n" });
    } finally {
      rmSync(source, { recursive: true, force: true });
    }
    // Nothing that could be read as an option, no other scheme.
    for (const remote_url of ["--upload-pack=touch /tmp/x", "-u", "ext::sh -c id", "/tmp/repo"]) {
      expect(await refusal("workspace_create", { project_id: P, workspace_id: "bad", remote_url })).toBe(
        "params",
      );
    }
    expect(
      await refusal("workspace_create", {
        project_id: P,
        workspace_id: "nowhere",
        remote_url: "file:///does/not/exist",
      }),
    ).toBe("exec_failed");
    expect(existsSync(join(dataDir, "projects", P, "volume", "workspaces", "nowhere"))).toBe(false);
  });

  /** workspace_push of workspace "push" of P to the test server's repository "pushed". */
  const pushParams = (branch: string, credential: string | null = "test-forge") => ({
    project_id: P,
    workspace_id: "push",
    branch,
    remote_url: `${gitServer.url}/pushed.git`,
    ...(credential !== null ? { git_credential: credential } : {}),
  });

  it("pushes a workspace's branch through the project's own repository: hostile repository settings run nothing on the host, and the credential never enters the container", async () => {
    const url = gitServer.createRepo("pushed", { "README.md": "upstream\n" });
    decoy.createRepo("pushed", { "README.md": "decoy\n" });
    expect(
      await call("workspace_create", {
        project_id: P,
        workspace_id: "push",
        remote_url: url,
        git_credential: "test-forge",
      }),
    ).toEqual({ path: "/workspace/push", git: "clone" });
    const inWorkspace = (command: string[]) =>
      call<{ exit_code: number; stdout: string; stderr: string }>("container_exec", {
        project_id: P,
        command,
        cwd: "/workspace/push",
      });
    const gitIn = (...args: string[]) =>
      inWorkspace(["git", "-c", "user.name=t", "-c", "user.email=t@t", ...args]);
    expect((await gitIn("checkout", "-q", "-b", "feature/one")).exit_code).toBe(0);
    expect((await inWorkspace(node("require('fs').writeFileSync('one.txt', 'one\\n')"))).exit_code).toBe(0);
    expect((await gitIn("add", "-A")).exit_code).toBe(0);
    expect((await gitIn("commit", "-q", "-m", "one")).exit_code).toBe(0);
    const head = (await gitIn("rev-parse", "HEAD")).stdout.trim();
    // What an agent could plant for the host's git to run: each would write a marker on the host.
    const marker = join(tmpdir(), `oub-git-marker-${process.pid}-${Date.now()}`);
    const hostile = {
      "core.fsmonitor": `touch ${marker}-fsmonitor`,
      "core.hooksPath": "/workspace/push/.hooks",
      "core.sshCommand": `touch ${marker}-ssh`,
      "core.pager": `touch ${marker}-pager`,
      "credential.helper": `!touch ${marker}-credential`,
      [`url.${decoy.url}/.insteadOf`]: `${gitServer.url}/`,
      "include.path": "/workspace/push/.included",
      "gpg.program": `touch ${marker}-gpg`,
      "filter.evil.clean": `touch ${marker}-filter`,
      "filter.evil.smudge": `touch ${marker}-filter`,
      "diff.evil.textconv": `touch ${marker}-diff`,
    };
    for (const [key, value] of Object.entries(hostile))
      expect((await gitIn("config", key, value)).exit_code).toBe(0);
    const plant = `const fs = require('fs');
      fs.mkdirSync('.hooks', { recursive: true });
      for (const h of ['pre-push', 'reference-transaction', 'post-checkout', 'pre-commit']) {
        fs.writeFileSync('.hooks/' + h, '#!/bin/sh\\ntouch ${marker}-hook-' + h + '\\n', { mode: 0o755 });
        fs.writeFileSync('.git/hooks/' + h, '#!/bin/sh\\ntouch ${marker}-githook-' + h + '\\n', { mode: 0o755 });
      }
      fs.writeFileSync('.included', '[core]\\n\\tfsmonitor = touch ${marker}-included\\n');
      fs.writeFileSync('.gitattributes', '* filter=evil diff=evil\\n');`;
    expect((await inWorkspace(node(plant))).exit_code).toBe(0);

    expect(await call("workspace_push", pushParams("feature/one"))).toEqual({
      branch: "feature/one",
      commit: head,
      outcome: "created",
    });
    expect(gitServer.heads("pushed")["feature/one"]).toBe(head);
    const markers = readdirSync(tmpdir()).filter((name) => name.startsWith(`oub-git-marker-${process.pid}`));
    expect(markers).toEqual([]);
    expect(decoy.seen).toEqual([]);

    // The credential is nowhere in the container: its environment, the workspaces, the homes,
    // anywhere on its filesystem (looked for as root).
    const container = docker.getContainer((await containers(P))[0]?.Id ?? "");
    expect(JSON.stringify((await container.inspect()).Config.Env)).not.toContain(GIT_TOKEN);
    const basic = Buffer.from(`x-access-token:${GIT_TOKEN}`).toString("base64");
    for (const needle of [GIT_TOKEN, basic]) {
      const grep = await execAs(container, "0", [
        "grep",
        "-r",
        "-l",
        "-s",
        "-F",
        needle,
        "/workspace",
        "/home",
        "/tmp",
        "/etc",
      ]);
      expect(grep.out.trim(), `found in ${grep.out}`).toBe("");
      expect(grep.code).not.toBe(0);
    }

    // Pushed again unchanged: already there. A branch the workspace does not have: not found.
    expect(await call("workspace_push", pushParams("feature/one"))).toMatchObject({ outcome: "up_to_date" });
    expect(await refusal("workspace_push", pushParams("feature/none"))).toBe("not_found");
    // Without the credential the server refuses; an unknown credential is refused before git runs.
    expect(await refusal("workspace_push", pushParams("feature/one", null))).toBe("exec_failed");
    expect(await refusal("workspace_push", pushParams("feature/one", "nobody"))).toBe("invalid");
  }, 120_000);

  it("refuses a push the remote does not take as a fast-forward, saying so", async () => {
    const url = `${gitServer.url}/pushed.git`;
    // Someone else moves the remote's branch on.
    const other = join(tmpdir(), `oub-git-other-${process.pid}`);
    const auth = `http.extraHeader=Authorization: Basic ${Buffer.from(`x-access-token:${GIT_TOKEN}`).toString("base64")}`;
    await gitAsync(tmpdir(), "-c", auth, "clone", "-q", "--branch", "feature/one", url, other);
    writeFileSync(join(other, "theirs.txt"), "theirs\n");
    await gitAsync(other, "add", "-A");
    await gitAsync(other, "commit", "-q", "-m", "theirs");
    await gitAsync(other, "-c", auth, "push", "-q", "origin", "feature/one");
    rmSync(other, { recursive: true, force: true });
    const gitIn = (...args: string[]) =>
      call<{ exit_code: number }>("container_exec", {
        project_id: P,
        command: [
          "git",
          "-c",
          "user.name=t",
          "-c",
          "user.email=t@t",
          "-c",
          "core.hooksPath=/dev/null",
          ...args,
        ],
        cwd: "/workspace/push",
      });
    expect((await gitIn("commit", "-q", "--allow-empty", "-m", "ours")).exit_code).toBe(0);
    const error = await call("workspace_push", pushParams("feature/one")).then(
      () => null,
      (err: RpcError) => err,
    );
    expect(error?.reason).toBe("rejected");
    expect(error?.message).toMatch(/the remote refused the push of feature\/one/);
  }, 120_000);

  it("reads inside a workspace only: no '..', no absolute path, no symlink out", async () => {
    const ws = join(dataDir, "projects", P, "volume", "workspaces", "default");
    mkdirSync(join(ws, "changes", "add-thing"), { recursive: true });
    writeFileSync(join(ws, "changes", "add-thing", "proposal.md"), "# Add a thing\n");
    symlinkSync("/etc", join(ws, "escape"));
    symlinkSync("changes", join(ws, "inside"));
    const read = (path: string, kind: "dir" | "file", max_bytes?: number) =>
      call("workspace_read", {
        project_id: P,
        workspace_id: "default",
        path,
        kind,
        ...(max_bytes ? { max_bytes } : {}),
      });
    expect(await read("changes", "dir")).toEqual({ entries: [{ name: "add-thing", type: "dir" }] });
    expect(await read("changes/add-thing/proposal.md", "file")).toEqual({
      content: "# Add a thing\n",
      truncated: false,
    });
    expect(await read("changes/add-thing/proposal.md", "file", 5)).toEqual({
      content: "# Add",
      truncated: true,
    });
    expect(await read("inside/add-thing", "dir")).toMatchObject({
      entries: [{ name: "proposal.md", type: "file" }],
    });
    const reason = (path: string, kind: "dir" | "file") =>
      refusal("workspace_read", { project_id: P, workspace_id: "default", path, kind });
    expect(await reason("../..", "dir")).toBe("invalid");
    expect(await reason("changes/../../other", "dir")).toBe("invalid");
    expect(await reason("/etc", "dir")).toBe("invalid");
    expect(await reason("escape/passwd", "file")).toBe("invalid");
    expect(await reason("escape", "dir")).toBe("invalid");
    expect(await reason("missing.md", "file")).toBe("not_found");
    expect(lstatSync(join(ws, "escape")).isSymbolicLink()).toBe(true);
    expect(
      await refusal("workspace_read", { project_id: P, workspace_id: "nope", path: ".", kind: "dir" }),
    ).toBe("not_found");
  });

  it("reports its projects, refuses what it cannot hold, and a v2 session gets a project of its own", async () => {
    const projects = await manager.projects();
    expect(projects).toContainEqual({ project_id: P, running: true });
    expect(await refusal("project_ensure", { project_id: "not-a-project", spec: spec() })).toBe("params");
    const legacy = sessionId(21);
    await call("session_start", { session_id: legacy, spec: {} });
    await until(() => worker.outputs(legacy).some((d) => d.op === "ready"), "the v2 session's agent");
    const own = `prj_${legacy.slice(4)}`;
    expect(await containers(own)).toHaveLength(1);
    await call("session_stop", { session_id: legacy, reason: "done" });
    await until(() => existsSync(join(dataDir, "projects", own)) === false, "the v2 session's project to go");
    await until(() => !manager.running().includes(legacy), "the v2 session to end");
    expect(await containers(own)).toEqual([]);
  });
});

describe("a host-agent restart", () => {
  it("re-adopts the project's container by label, and its sessions from the runner's hello", async () => {
    const restartHost = `${hostId}-restart`;
    const P = projectId(4);
    const S = sessionId(31);
    const managerFor = () =>
      new ProjectManager({
        workerUrl: worker.url,
        hostToken: "test-host-token",
        hostId: restartHost,
        runtime: new DockerRuntime({
          docker,
          hostId: restartHost,
          defaultImage: image,
          logger,
          stopTimeoutSeconds: 2,
        }),
        dataDir,
        socketRoot: socketDir,
        maxSessions: 8,
        maxProjects: 4,
        disk: TEST_DISK,
        models: new ModelProxy({ keys: loadModelKeys({}), logger }),
        logger,
        timing: { heartbeatMs: 5_000, maxReconnectDelayMs: 1_000 },
      });
    const before = managerFor();
    await before.startSession({
      session_id: S,
      project_id: P,
      workspace_id: "default",
      project: { limits: {}, workspace_isolation: false },
      spec: {},
    });
    await until(() => worker.outputs(S).some((d) => d.op === "ready"), "the agent");
    const container = (await containers(P))[0]?.Id;
    await before.shutdown("restart");
    await until(() => !worker.connected(S), "the old tunnel to close");

    const after = managerFor();
    const runtime = new DockerRuntime({ docker, hostId: restartHost, defaultImage: image, logger });
    await after.adopt(await runtime.adopt());
    expect(after.running()).toEqual([S]);
    expect(await after.projects()).toContainEqual({ project_id: P, running: true });
    expect((await containers(P)).map((c) => c.Id)).toEqual([container]);
    await until(() => worker.connected(S), "the tunnel to come back");
    // The same agent, still working, and nothing said twice.
    await worker.message(S, 1, JSON.stringify({ id: "after", steps: [{ op: "print", data: "after" }] }));
    await until(
      () => worker.outputs(S).some((d) => d.op === "done" && d.id === "after"),
      "the message after",
    );
    expect(worker.outputs(S).filter((d) => d.op === "ready")).toHaveLength(1);
    const seqs = worker.events(S).map((e) => e.seq);
    expect(seqs).toEqual(seqs.map((_, i) => i + 1));
    await after.removeProject(P);
    expect(await containers(P)).toEqual([]);
  });
});
