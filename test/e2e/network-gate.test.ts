/**
 * The network gate end to end, with real containers: the Worker, a Docker host-agent whose gate
 * maps the fixture registry's name (and an echo service's) to this machine's loopback (its test
 * flag), the scripted droid running commands in its container as its agent's shell would. The
 * container has no network: every request goes through the runner's proxy to the host's gate,
 * which decides it by the project's and the session's policies, and refuses loopback and the
 * host's own addresses whatever they say. Asserted on the container's files, on what the registry was
 * asked, on the session's events and `session get`, on the audit log, and on what the droid's
 * commands printed. Nothing leaves loopback.
 */
import { existsSync, readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { networkInterfaces } from "node:os";
import Dockerode from "dockerode";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SessionEvent } from "../../protocol/events.js";
import { FIXTURE, type NpmRegistry, startNpmRegistry } from "../fixtures/npm-registry/index.js";
import { TestCaller } from "../support/caller.js";
import { dockerContext } from "../support/docker-context.js";
import { execAs, projectContainer } from "../support/docker-exec.js";
import { TestStack } from "../support/stack.js";
import { followUntilReady, runStep } from "./support.js";

const REGISTRY = "registry.oubliette.test";
const WEB = "web.oubliette.test";

let stack: TestStack;
let caller: TestCaller;
let registry: NpmRegistry;
let web: Server;
let webPort = 0;
const webSeen: { method: string; host: string; url: string }[] = [];
const docker = new Dockerode({ socketPath: dockerContext().dockerSocket });

beforeAll(async () => {
  registry = await startNpmRegistry();
  web = createServer((req, res) => {
    webSeen.push({ method: req.method ?? "", host: req.headers.host ?? "", url: req.url ?? "" });
    res.writeHead(200, { "content-type": "text/plain" });
    res.end("hello from the web\n");
  });
  await new Promise<void>((resolve) => web.listen(0, "127.0.0.1", resolve));
  webPort = (web.address() as { port: number }).port;
  stack = await TestStack.start();
  await stack.addHost({
    runtime: "docker",
    image: dockerContext().droidImage,
    extraEnv: { OUBLIETTE_EGRESS_TEST_RESOLVE: `${REGISTRY}=127.0.0.1,${WEB}=127.0.0.1` },
  });
  caller = await TestCaller.connect(stack.mcpUrl, stack.adminToken);
}, 180_000);

afterAll(async () => {
  await caller?.close();
  await stack?.stop();
  await registry?.close();
  web?.close();
});

async function project(extra: Record<string, unknown>): Promise<string> {
  const created = await caller.ok<{ project_id: string }>("project", {
    action: "create",
    name: `net-${crypto.randomUUID().slice(0, 12)}`,
    ...extra,
  });
  return created.project_id;
}

async function droid(projectId: string, extra: Record<string, unknown> = {}): Promise<string> {
  const { session_id } = await caller.ok<{ session_id: string }>("session", {
    action: "spawn",
    project_id: projectId,
    new_session: true,
    ...extra,
  });
  await followUntilReady(caller, session_id, "ant", []);
  return session_id;
}

/** Runs an argv as the session's agent (its uid, its environment, in its workspace). */
async function sh(sessionId: string, command: string, timeoutMs = 90_000) {
  const out = await runStep(
    caller,
    sessionId,
    { op: "exec", argv: ["sh", "-c", command], timeout_ms: timeoutMs - 5_000 },
    timeoutMs,
  );
  return {
    code: out.exit_code as number | null,
    stdout: String(out.stdout ?? ""),
    stderr: String(out.stderr ?? ""),
  };
}

const npmInstall = `npm install --no-audit --no-fund --fetch-retries=0 --registry http://${REGISTRY}:PORT/ ${FIXTURE.greeter}`;

function eventsOf(sessionId: string, type: SessionEvent["type"]) {
  return caller.events.filter((e) => e.session_id === sessionId && e.type === type);
}

describe("an allowlist naming the registry", () => {
  let projectId: string;
  let sessionId: string;

  beforeAll(async () => {
    projectId = await project({ network: { mode: "allowlist", allow: [`${REGISTRY}:${registry.port}`] } });
    sessionId = await droid(projectId);
  }, 120_000);

  it("npm install by name works in the container, through the host, and its bytes are counted", async () => {
    const before = registry.requests.length;
    const run = await sh(sessionId, npmInstall.replace("PORT", String(registry.port)));
    expect(run.code, run.stderr).toBe(0);
    // The package is in the workspace, and runs there.
    const container = await projectContainer(docker, projectId);
    const greeting = await execAs(container, "1000", [
      "sh",
      "-c",
      `cd /workspace/default && node -e 'process.stdout.write(require("${FIXTURE.greeter}").greet("gate"))'`,
    ]);
    expect(greeting.out).toBe("hello, gate!");
    // The registry was asked by its name: the request came through the host's gate.
    const asked = registry.requests.slice(before);
    // Two packuments and two tarballs (npm may ask a packument twice, as it does without a proxy).
    expect(asked.filter((r) => r.path.endsWith(".tgz")).length).toBe(2);
    for (const r of asked) expect(r.host).toBe(`${REGISTRY}:${registry.port}`);
    await expect
      .poll(
        async () => {
          const info = await caller.ok<{
            network: { hosts: { host: string; bytes_in: number; connections: number }[] };
          }>("session", { action: "get", session_id: sessionId });
          return info.network.hosts.find((h) => h.host === REGISTRY)?.bytes_in ?? 0;
        },
        { timeout: 15_000 },
      )
      .toBeGreaterThan(1_000);
  });

  it("the socket table the runner reads stays short: closed connections keep no TIME_WAIT, the hash is the namespace's own", async () => {
    // Twenty proxied requests, each a connection the client closes first (curl): each would wait out
    // TIME_WAIT in the container's table, which the runner reads on every proxy connection.
    const url = `http://${REGISTRY}:${registry.port}/${FIXTURE.greeter}`;
    const run = await sh(sessionId, `for i in $(seq 20); do curl -sS -o /dev/null "${url}" || exit 1; done`);
    expect(run.code, run.stderr).toBe(0);
    const container = await projectContainer(docker, projectId);
    const table = await execAs(container, "0", ["cat", "/proc/net/tcp", "/proc/net/tcp6"]);
    const states = table.out
      .split("\n")
      .map((line) => line.trim().split(/\s+/))
      .filter((fields) => /^\d+:$/.test(fields[0] ?? ""))
      .map((fields) => fields[3]);
    expect(states.length).toBeGreaterThan(0);
    // 06: TIME_WAIT.
    expect(states.filter((state) => state === "06")).toEqual([]);
    // Where the host-agent could set the size namespaces get (root, Linux 6.1 and later), the
    // container's hash is its own (positive), not the host's (negative).
    const childPath = "/proc/sys/net/ipv4/tcp_child_ehash_entries";
    // Before Linux 6.1 every namespace shares the host's hash: nothing more to check.
    if (!existsSync(childPath)) return;
    const child = Number(readFileSync(childPath, "utf8").trim());
    const own = await execAs(container, "0", ["cat", "/proc/sys/net/ipv4/tcp_ehash_entries"]);
    if (child > 0) expect(Number(own.out.trim())).toBe(child);
    else expect(Number(own.out.trim())).toBeLessThan(0);
  });

  it("a host it does not list is refused with the gate's reason, as an event and an audit entry", async () => {
    const run = await sh(sessionId, `curl -sS -o /dev/null -w '%{http_code}' http://${WEB}:${webPort}/`);
    expect(run.stdout).toBe("403");
    const blocked = await caller.waitFor(
      (e) => e.session_id === sessionId && e.type === "network_blocked" && e.host === WEB,
      20_000,
      "network_blocked",
    );
    expect(blocked).toMatchObject({ port: webPort, method: "GET", code: "not_listed", source: "project" });
    expect(webSeen.length).toBe(0);
    await expect
      .poll(async () => {
        const log = await caller.ok<{ entries: { action: string; target: string; outcome: string }[] }>(
          "audit",
          {
            action_prefix: "network.",
          },
        );
        return log.entries.some(
          (e) => e.action === "network.blocked" && e.target.includes(`${WEB}:${webPort}`),
        );
      })
      .toBe(true);
  });
});

describe("the default network (off)", () => {
  it("npm install fails within seconds with the gate's reason", async () => {
    const projectId = await project({});
    const sessionId = await droid(projectId);
    const started = Date.now();
    const run = await sh(sessionId, npmInstall.replace("PORT", String(registry.port)));
    expect(Date.now() - started).toBeLessThan(30_000);
    expect(run.code).not.toBe(0);
    expect(run.stdout + run.stderr).toContain("Oubliette gate: the project's network policy is off");
    const blocked = await caller.waitFor(
      (e) => e.session_id === sessionId && e.type === "network_blocked",
      20_000,
      "network_blocked",
    );
    expect(blocked).toMatchObject({ host: REGISTRY, port: registry.port, code: "off" });
  });
});

describe("open", () => {
  let sessionId: string;
  beforeAll(async () => {
    sessionId = await droid(await project({ network: { mode: "open" } }));
  }, 120_000);

  it("refuses loopback, localhost, [::1] and the host's own addresses, plain and tunnelled", async () => {
    const workerPort = new URL(stack.url).port;
    // The host's own (non-loopback) address: the gate refuses it before it would connect.
    const own = Object.values(networkInterfaces())
      .flatMap((list) => list ?? [])
      .filter((a) => !a.internal && a.family === "IPv4")
      .map((a) => `http://${a.address}:${workerPort}/`);
    const targets = [
      `http://127.0.0.1:${workerPort}/`,
      `http://localhost:${workerPort}/`,
      `http://[::1]:${workerPort}/`,
      `http://127.0.0.1:${registry.port}/`,
      `https://127.0.0.1:${workerPort}/`,
      `https://localhost:${webPort}/`,
      ...own.slice(0, 1),
    ];
    for (const target of targets) {
      // Sent to the gate even for loopback (--noproxy ''): NO_PROXY keeps the container's own
      // loopback out of the proxy, and that loopback is the container's, where nothing listens.
      const run = await sh(
        sessionId,
        `curl -sS -g --noproxy '' -o /dev/null -w '%{http_code}' '${target}' 2>&1; echo " exit=$?"`,
      );
      // Plain HTTP: the gate's 403. HTTPS: curl's "CONNECT tunnel failed, response 403".
      expect(run.stdout, target).toMatch(/403/);
    }
    expect(webSeen.length).toBe(0);
    const blocked = eventsOf(sessionId, "network_blocked");
    expect(blocked.every((e) => e.type === "network_blocked" && e.code === "address")).toBe(true);
  });

  it("a program that ignores the proxy settings reaches nothing: the container has no network", async () => {
    const workerPort = Number(new URL(stack.url).port);
    const probe =
      `const s = require("net").connect(${workerPort}, "127.0.0.1");` +
      `s.on("connect", () => { console.log("connected"); process.exit(0); });` +
      `s.on("error", (e) => { console.log(e.code); process.exit(0); });`;
    const run = await sh(sessionId, `node -e '${probe}'`);
    // The container's loopback is its own: the Worker listening on the host's is not there.
    expect(run.stdout.trim()).toBe("ECONNREFUSED");
    const container = await projectContainer(
      docker,
      (await caller.ok<{ project_id: string }>("session", { action: "get", session_id: sessionId }))
        .project_id,
    );
    const info = await container.inspect();
    expect(info.HostConfig.NetworkMode).toBe("none");
  });
});

describe("who a request is", () => {
  it("one session's proxy credential is refused on another session's requests; the exec identity counts as the project", async () => {
    const projectId = await project({ network: { mode: "allowlist", allow: [`${WEB}:${webPort}`] } });
    const a = await droid(projectId);
    const b = await droid(projectId);
    // A's proxy URL, read from outside (no process of B can read A's environment).
    const container = await projectContainer(docker, projectId);
    const top = await container.top();
    const pidAt = top.Titles.indexOf("PID");
    let proxyOfA = "";
    for (const row of top.Processes) {
      const environ = (() => {
        try {
          return readFileSync(`/proc/${row[pidAt]}/environ`, "latin1").split("\0");
        } catch {
          return [];
        }
      })();
      if (environ.includes(`OUBLIETTE_SESSION_ID=${a}`))
        proxyOfA =
          environ.find((kv) => kv.startsWith("HTTP_PROXY="))?.slice("HTTP_PROXY=".length) ?? proxyOfA;
    }
    expect(proxyOfA).toMatch(/^http:\/\/oubliette:oubp_[0-9a-f]{48}@127\.0\.0\.1:\d+$/);
    const own = await sh(b, `curl -sS -o /dev/null -w '%{http_code}' http://${WEB}:${webPort}/own`);
    expect(own.stdout).toBe("200");
    const stolen = await sh(b, `curl -sS -x '${proxyOfA}' http://${WEB}:${webPort}/stolen`);
    expect(stolen.stdout).toContain("belongs to another session");
    expect(webSeen.map((s) => s.url)).toContain("/own");
    expect(webSeen.map((s) => s.url)).not.toContain("/stolen");
    // A user's command counts as the project: allowed when listed, refused (and audited) when not.
    const listed = await caller.ok<{ stdout: string }>("container", {
      action: "exec",
      project_id: projectId,
      command: ["curl", "-sS", `http://${WEB}:${webPort}/exec`],
    });
    expect(listed.stdout).toBe("hello from the web\n");
    const refused = await caller.ok<{ stdout: string }>("container", {
      action: "exec",
      project_id: projectId,
      command: [
        "curl",
        "-sS",
        "-o",
        "/dev/null",
        "-w",
        "%{http_code}",
        `http://${REGISTRY}:${registry.port}/`,
      ],
    });
    expect(refused.stdout).toBe("403");
    await expect
      .poll(async () => {
        const log = await caller.ok<{ entries: { action: string; target: string }[] }>("audit", {
          action_prefix: "network.",
        });
        return log.entries.some((e) => e.action === "network.blocked.exec" && e.target.startsWith(projectId));
      })
      .toBe(true);
  });
});

describe("a host the allowlist does not list, put to a person", () => {
  let projectId: string;
  let sessionId: string;
  type Asked = Extract<SessionEvent, { type: "approval_request" }>;

  beforeAll(async () => {
    projectId = await project({
      network: { mode: "allowlist", allow: [] },
      approval_policy: { rules: [{ kind: "network", action: "ask" }], default: "allow" },
    });
    sessionId = await droid(projectId);
  }, 120_000);

  /** The droid fetches `path` from the web service; resolves with curl's status line and the request it caused. */
  function fetchAsked(path: string) {
    const before = caller.events.length;
    const run = sh(sessionId, `curl -sS -o /dev/null -w '%{http_code}' http://${WEB}:${webPort}${path}`);
    const asked = () =>
      caller.waitFor(
        (e) =>
          e.session_id === sessionId && e.type === "approval_request" && caller.events.indexOf(e) >= before,
        30_000,
        "the network approval request",
      ) as Promise<Asked>;
    return { run, asked };
  }

  function answer(requestId: string, decision: string, message?: string) {
    return caller.ok("approval_response", {
      session_id: sessionId,
      request_id: requestId,
      decision,
      ...(message ? { message } : {}),
    });
  }

  it("allow once: the person sees the host and port, this request passes, the next one asks again", async () => {
    const first = fetchAsked("/once");
    const asked = await first.asked();
    expect(asked).toMatchObject({ kind: "network", host: WEB, port: webPort, method: "GET" });
    await answer(asked.request_id, "allow");
    expect((await first.run).stdout).toBe("200");
    expect(webSeen.map((s) => s.url)).toContain("/once");
    const second = fetchAsked("/again");
    const again = await second.asked();
    await answer(again.request_id, "deny", "not twice");
    expect((await second.run).stdout).toBe("403");
    expect(webSeen.map((s) => s.url)).not.toContain("/again");
    const blocked = await caller.waitFor(
      (e) => e.session_id === sessionId && e.type === "network_blocked" && e.code === "approval",
    );
    expect(blocked).toMatchObject({ host: WEB, port: webPort });
    if (blocked.type === "network_blocked") expect(blocked.reason).toContain("not twice");
  });

  it("allow for the session: later requests to that host pass unasked", async () => {
    const first = fetchAsked("/session-1");
    await answer((await first.asked()).request_id, "allow_session");
    expect((await first.run).stdout).toBe("200");
    const asksBefore = eventsOf(sessionId, "approval_request").length;
    const run = await sh(
      sessionId,
      `curl -sS -o /dev/null -w '%{http_code}' http://${WEB}:${webPort}/session-2`,
    );
    expect(run.stdout).toBe("200");
    expect(eventsOf(sessionId, "approval_request").length).toBe(asksBefore);
  });

  it("allow for the project: the host joins the project's allowlist (audited), and other sessions pass unasked", async () => {
    const other = await project({
      network: { mode: "allowlist", allow: [] },
      approval_policy: { rules: [{ kind: "network", action: "ask" }], default: "allow" },
    });
    const first = await droid(other);
    const before = caller.events.length;
    const run = sh(first, `curl -sS -o /dev/null -w '%{http_code}' http://${WEB}:${webPort}/project-1`);
    const asked = (await caller.waitFor(
      (e) => e.session_id === first && e.type === "approval_request" && caller.events.indexOf(e) >= before,
      30_000,
    )) as Asked;
    await caller.ok("approval_response", {
      session_id: first,
      request_id: asked.request_id,
      decision: "allow_project",
    });
    expect((await run).stdout).toBe("200");
    await expect
      .poll(async () => {
        const info = await caller.ok<{ network: { allow: string[] } }>("project", {
          action: "get",
          project_id: other,
        });
        return info.network.allow;
      })
      .toEqual([`${WEB}:${webPort}`]);
    await expect
      .poll(async () => {
        const log = await caller.ok<{ entries: { action: string; target: string; outcome: string }[] }>(
          "audit",
          {
            action_prefix: "project.network_allow",
          },
        );
        return log.entries.some((e) => e.target === `${other} ${WEB}:${webPort}` && e.outcome === "ok");
      })
      .toBe(true);
    const second = await droid(other);
    const asksBefore = caller.events.filter((e) => e.type === "approval_request").length;
    const passed = await sh(
      second,
      `curl -sS -o /dev/null -w '%{http_code}' http://${WEB}:${webPort}/project-2`,
    );
    expect(passed.stdout).toBe("200");
    expect(caller.events.filter((e) => e.type === "approval_request").length).toBe(asksBefore);
  });

  it("nobody answers: the request is refused at its deadline", async () => {
    const quick = await droid(projectId, { approval_timeout_seconds: 2 });
    const run = await sh(quick, `curl -sS -o /dev/null -w '%{http_code}' http://${WEB}:${webPort}/late`);
    expect(run.stdout).toBe("403");
    await caller.waitFor((e) => e.session_id === quick && e.type === "approval_expired");
    expect(webSeen.map((s) => s.url)).not.toContain("/late");
  });
});

describe("setup", () => {
  it("runs before the first agent under the setup network, streams its output, and leaves its install in the workspace", async () => {
    const install = `npm install --no-audit --no-fund --fetch-retries=0 --registry http://${REGISTRY}:${registry.port}/ ${FIXTURE.greeter}`;
    const projectId = await project({
      // The agents get no network; the setup reaches the registry.
      setup: ["echo setting up", install],
      setup_network: { mode: "allowlist", allow: [`${REGISTRY}:${registry.port}`] },
    });
    const sessionId = await droid(projectId);
    const started = eventsOf(sessionId, "setup_started")[0];
    expect(started).toMatchObject({ workspace_id: "default", steps: ["echo setting up", install] });
    const finished = eventsOf(sessionId, "setup_finished")[0];
    expect(finished).toMatchObject({ status: "ok", message: "2 step(s) done" });
    const output = eventsOf(sessionId, "setup_output")
      .map((e) => (e.type === "setup_output" ? e.text : ""))
      .join("");
    expect(output).toContain("setting up");
    expect(output).toMatch(/added 2 packages/);
    // The setup ended before the agent began: its events come first.
    const all = caller.events.filter((e) => e.session_id === sessionId);
    expect(all.findIndex((e) => e.type === "setup_finished")).toBeLessThan(
      all.findIndex((e) => e.type === "droid_status"),
    );
    // The agent finds the package installed (it has no network of its own here).
    const run = await sh(
      sessionId,
      `node -e 'process.stdout.write(require("${FIXTURE.greeter}").greet("setup"))'`,
    );
    expect(run.stdout).toBe("hello, setup!");
    const own = await sh(
      sessionId,
      `curl -sS -o /dev/null -w '%{http_code}' http://${REGISTRY}:${registry.port}/`,
    );
    expect(own.stdout).toBe("403");
    // Made by the exec identity, group-writable for the workspace's agents.
    const container = await projectContainer(docker, projectId);
    const stat = await execAs(container, "0", [
      "stat",
      "-c",
      "%u %A",
      `/workspace/default/node_modules/${FIXTURE.greeter}`,
    ]);
    expect(stat.out.trim()).toMatch(/^1000 drwxrwsr-x$|^1000 drwxrwxr-x$/);
    // A second session of the workspace does not run it again.
    const second = await droid(projectId);
    expect(eventsOf(second, "setup_started")).toEqual([]);
  });

  it("a failure names the step and its exit code; new sessions are refused until workspace setup succeeds", async () => {
    const projectId = await project({ setup: ["echo preparing", "exit 3"] });
    const { session_id } = await caller.ok<{ session_id: string }>("session", {
      action: "spawn",
      project_id: projectId,
      new_session: true,
    });
    const ended = await caller.waitFor(
      (e) => e.session_id === session_id && e.type === "session_ended",
      60_000,
      "the session's end",
    );
    if (ended.type === "session_ended") expect(ended.reason).toContain("step 2 (exit 3) exited with code 3");
    expect(eventsOf(session_id, "setup_finished")[0]).toMatchObject({
      status: "failed",
      step: 1,
      command: "exit 3",
      exit_code: 3,
    });
    // Refused with that reason, without running anything again.
    const refused = await caller.call("session", {
      action: "spawn",
      project_id: projectId,
      new_session: true,
    });
    expect(refused.isError).toBe(true);
    expect(JSON.stringify(refused.content)).toContain("exited with code 3");
    // Fixed, and run on demand: each step's exit code and output; then sessions start again.
    await caller.ok("project", {
      action: "update",
      project_id: projectId,
      setup: ["echo preparing", "echo fixed"],
    });
    const again = await caller.ok<{
      job_id?: string;
      status: string;
      steps?: { exit_code: number; output: string }[];
    }>("workspace", { action: "setup", project_id: projectId });
    const result =
      again.job_id !== undefined
        ? (
            await caller.ok<{ result: { status: string; steps: { exit_code: number; output: string }[] } }>(
              "job",
              {
                action: "wait",
                job_id: again.job_id,
                wait_seconds: 60,
              },
            )
          ).result
        : again;
    expect(result).toMatchObject({
      status: "ok",
      steps: [
        { exit_code: 0, output: "preparing\n" },
        { exit_code: 0, output: "fixed\n" },
      ],
    });
    const sessionId = await droid(projectId);
    expect(
      await caller.ok<{ status: string }>("session", { action: "get", session_id: sessionId }),
    ).toMatchObject({
      status: "running",
    });
  });
});
