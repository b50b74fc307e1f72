/**
 * The egress gate end to end on this machine, with real sockets: the runner's proxy
 * (container-client's EgressForwarder) carries each connection over the egress socket to the
 * host-agent's gate (EgressGate), which decides it against the project's and the session's
 * policies and the address rules. The real npm installs through it by name from the fixture
 * registry (mapped to loopback by the gate's test flag), over plain HTTP and through a CONNECT
 * tunnel; refusals come back at once with the gate's reason; a host the allowlist does not list
 * is put to the session when its approvals ask. Nothing here connects outside loopback: the
 * gate's dialer is wrapped to fail the test if it is ever asked to.
 */
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { type IncomingMessage, request } from "node:http";
import { connect, createServer, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { EgressForwarder } from "../../container-client/src/runner/egress-forwarder.js";
import { EgressGate, tcpDial } from "../../host-agent/src/egress/egress-gate.js";
import { ProjectNetwork, type SessionNetworkLink } from "../../host-agent/src/egress/project-network.js";
import { createLogger } from "../../lib/log.js";
import type { ApprovalDecision, ApprovalRequest } from "../../protocol/approvals.js";
import type { EgressPeer } from "../../protocol/egress.js";
import { PROXY_USER, proxyEnvironment } from "../../protocol/egress.js";
import { type NetworkPolicyInput, NetworkPolicySchema } from "../../protocol/network.js";
import type { NetworkBlocked } from "../../protocol/network-activity.js";
import { FIXTURE, type NpmRegistry, startNpmRegistry } from "../fixtures/npm-registry/index.js";
import { type LoopbackTls, loopbackTls } from "../support/tls-cert.js";

const REGISTRY = "registry.oubliette.test";
const ECHO = "echo.oubliette.test";
const RUNNER_TOKEN = "runner-secret-0123456789abcdef";
const SESSION_A = "ses_aaaaaaaaaaaaaaaaaaaaaaaa";
const SESSION_B = "ses_bbbbbbbbbbbbbbbbbbbbbbbb";
const logger = createLogger({ name: "egress-test", level: "warn", fd: 2 });

let scratch: string;
let tls: LoopbackTls;
let plain: NpmRegistry;
let secure: NpmRegistry;
let echo: Server;
let echoPort: number;
let project: ProjectNetwork;
let forwarder: EgressForwarder;
let closeGate: () => Promise<void>;
/** Who the runner says made the next connection (its uid's session, in a container). */
let peer: EgressPeer = { kind: "session", session_id: SESSION_A };
/** Every address the gate dialled. */
const dialled: string[] = [];
const blockedProject: NetworkBlocked[] = [];

/** What the gate told each session, and how the session answers its network questions. */
class FakeSessionLink implements SessionNetworkLink {
  readonly asked: ApprovalRequest[] = [];
  readonly blockedEvents: NetworkBlocked[] = [];
  answer: (request: ApprovalRequest) => Promise<ApprovalDecision> = async () => ({
    decision: "deny",
    scope: "once",
    by: "answer",
  });
  ask(request: ApprovalRequest): Promise<ApprovalDecision> {
    this.asked.push(request);
    return this.answer(request);
  }
  blocked(event: NetworkBlocked): void {
    this.blockedEvents.push(event);
  }
  usage(): void {}
}
const linkA = new FakeSessionLink();
const linkB = new FakeSessionLink();
let tokenA = "";
let tokenB = "";

function setProject(policy: NetworkPolicyInput): void {
  project.setPolicies({ network: NetworkPolicySchema.parse(policy) });
}

beforeAll(async () => {
  scratch = mkdtempSync(join(tmpdir(), "oub-egress-"));
  writeFileSync(join(scratch, "user-npmrc"), "");
  writeFileSync(join(scratch, "global-npmrc"), "");
  tls = await loopbackTls({ dnsNames: [REGISTRY] });
  [plain, secure] = await Promise.all([
    startNpmRegistry(),
    startNpmRegistry({ tls: { key: tls.key, cert: tls.cert } }),
  ]);
  echo = createServer((socket) => socket.pipe(socket));
  await new Promise<void>((resolve) => echo.listen(0, "127.0.0.1", resolve));
  echoPort = (echo.address() as { port: number }).port;
  project = new ProjectNetwork({
    projectId: "prj_000000000000000000000001",
    separate: true,
    logger,
    onProjectBlocked: (_who, event) => blockedProject.push(event),
  });
  tokenA = project.addSession(SESSION_A, { policies: [], approvals: "ask" }, linkA);
  tokenB = project.addSession(SESSION_B, { policies: [], approvals: "auto" }, linkB);
  const gate = new EgressGate({
    addresses: {
      // No name is ever looked up for real: an unmapped name fails like a missing one.
      resolve: async (host) => {
        throw new Error(`getaddrinfo ENOTFOUND ${host}`);
      },
      testNames: new Map([
        [REGISTRY, "127.0.0.1"],
        [ECHO, "127.0.0.1"],
      ]),
      ownAddresses: () => new Set(),
      lookupTimeoutMs: 1_000,
    },
    logger,
    dial: (address, port, timeoutMs, onread) => {
      dialled.push(`${address}:${port}`);
      if (!/^127\./.test(address)) throw new Error(`the test gate never dials ${address}`);
      return tcpDial(address, port, timeoutMs, onread);
    },
  });
  const socketPath = join(scratch, "egress.sock");
  closeGate = await gate.listen(socketPath, project, RUNNER_TOKEN);
  forwarder = await EgressForwarder.start({
    socketPath,
    runnerToken: RUNNER_TOKEN,
    peerOf: () => peer,
    byUid: false,
    logger,
  });
}, 60_000);

afterAll(async () => {
  await forwarder?.close();
  await closeGate?.();
  await Promise.all([plain?.close(), secure?.close()]);
  echo?.close();
  await tls?.remove();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

afterEach(() => {
  peer = { kind: "session", session_id: SESSION_A };
  linkA.asked.length = 0;
  linkA.blockedEvents.length = 0;
});

function basic(credential: string): string {
  return `Basic ${Buffer.from(`${PROXY_USER}:${credential}`).toString("base64")}`;
}

/** A CONNECT through the container's proxy: the status and, when 200, the tunnel's socket. */
function connectThrough(
  target: string,
  credential?: string,
): Promise<{ status: number; headers: IncomingMessage["headers"]; body: string; socket: Socket | null }> {
  return new Promise((resolve, reject) => {
    const req = request({
      host: "127.0.0.1",
      port: forwarder.port,
      method: "CONNECT",
      path: target,
      // A connection of its own: who it is was decided when it was accepted.
      agent: false,
      headers: credential !== undefined ? { "proxy-authorization": basic(credential) } : {},
    });
    req.once("connect", (res, socket, head) => {
      if (res.statusCode === 200) return resolve({ status: 200, headers: res.headers, body: "", socket });
      let body = head.toString();
      socket.on("data", (chunk: Buffer) => {
        body += chunk.toString();
      });
      socket.once("close", () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body, socket: null }),
      );
    });
    req.once("error", reject);
    req.end();
  });
}

/** A plain-HTTP request through the proxy (absolute form). */
function getThrough(
  url: string,
  method = "GET",
): Promise<{ status: number; headers: IncomingMessage["headers"]; body: string }> {
  return new Promise((resolve, reject) => {
    const target = new URL(url);
    const req = request(
      {
        host: "127.0.0.1",
        port: forwarder.port,
        method,
        path: url,
        agent: false,
        headers: { host: target.host },
      },
      (res) => {
        let body = "";
        res.on("data", (chunk: Buffer) => {
          body += chunk.toString();
        });
        res.once("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      },
    );
    req.once("error", reject);
    req.end(method === "POST" ? "{}" : undefined);
  });
}

function echoOnce(socket: Socket, text: string): Promise<string> {
  return new Promise((resolve) => {
    socket.once("data", (chunk: Buffer) => resolve(chunk.toString()));
    socket.write(text);
  });
}

function npm(
  args: string[],
  cwd: string,
  env: Record<string, string>,
): Promise<{ code: number; out: string }> {
  const base: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env))
    if (!/^(npm_|https?_proxy$|no_proxy$|all_proxy$)/i.test(key)) base[key] = value;
  return new Promise((resolve) => {
    execFile(
      "npm",
      args,
      {
        cwd,
        encoding: "utf8",
        timeout: 60_000,
        env: {
          ...base,
          npm_config_userconfig: join(scratch, "user-npmrc"),
          npm_config_globalconfig: join(scratch, "global-npmrc"),
          npm_config_update_notifier: "false",
          npm_config_fetch_retries: "0",
          ...env,
        },
      },
      (error, stdout, stderr) =>
        resolve({ code: error ? Number(error.code ?? 1) : 0, out: `${stdout}${stderr}` }),
    );
  });
}

async function npmInstall(label: string, registry: string, extra: Record<string, string> = {}) {
  const dir = join(scratch, label);
  mkdirSync(dir);
  writeFileSync(join(dir, "package.json"), `${JSON.stringify({ name: label, private: true })}\n`);
  const env = {
    ...proxyEnvironment(forwarder.port, tokenA),
    npm_config_cache: join(scratch, `${label}-cache`),
    ...extra,
  };
  const startedAt = Date.now();
  const result = await npm(
    ["install", "--no-audit", "--no-fund", "--registry", registry, FIXTURE.greeter],
    dir,
    env,
  );
  return { ...result, dir, ms: Date.now() - startedAt };
}

describe("npm through the gate, by name", () => {
  it("installs over plain HTTP: the registry is asked by its name, the bytes are counted", async () => {
    setProject({ mode: "allowlist", allow: [REGISTRY] });
    const before = plain.requests.length;
    const run = await npmInstall("http", `http://${REGISTRY}:${plain.port}/`);
    expect(run.code, run.out).toBe(0);
    const pkg = JSON.parse(
      readFileSync(join(run.dir, "node_modules", FIXTURE.greeter, "package.json"), "utf8"),
    );
    expect(pkg.version).toBe("2.1.0");
    const mine = plain.requests.slice(before);
    expect(mine.length).toBe(4);
    // The gate forwards in origin form, with the name the client asked for (not the address it dialled).
    for (const r of mine) expect(r).toMatchObject({ absoluteForm: false, host: `${REGISTRY}:${plain.port}` });
    const totals = project.meter({ kind: "session", sessionId: SESSION_A }).totals();
    const entry = totals.hosts.find((h) => h.host === REGISTRY && h.port === plain.port);
    expect(entry?.connections).toBeGreaterThanOrEqual(4);
    expect(entry?.bytes_in).toBeGreaterThan(1_000);
  });

  it("installs over HTTPS through a CONNECT tunnel the gate does not open", async () => {
    setProject({ mode: "allowlist", allow: [`${REGISTRY}:${secure.port}`] });
    const run = await npmInstall("https", `https://${REGISTRY}:${secure.port}/`, {
      npm_config_cafile: tls.caFile,
    });
    expect(run.code, run.out).toBe(0);
    // A tunnel's bytes are counted once a second and when it closes, which may be just after npm
    // exits (its connections close as it does).
    const entry = () =>
      project
        .meter({ kind: "session", sessionId: SESSION_A })
        .totals()
        .hosts.find((h) => h.host === REGISTRY && h.port === secure.port);
    await expect.poll(() => entry()?.bytes_in ?? 0, { timeout: 5_000 }).toBeGreaterThan(1_000);
    expect(entry()?.bytes_out).toBeGreaterThan(100);
  });

  it("off: the install fails within seconds with the gate's reason, and the session hears of it", async () => {
    setProject({ mode: "off" });
    const run = await npmInstall("off", `http://${REGISTRY}:${plain.port}/`);
    expect(run.code).not.toBe(0);
    expect(run.ms).toBeLessThan(15_000);
    expect(run.out).toContain("Oubliette gate: the project's network policy is off");
    expect(linkA.blockedEvents[0]).toMatchObject({
      host: REGISTRY,
      port: plain.port,
      method: "GET",
      code: "off",
    });
  });
});

describe("the policy at the gate", () => {
  it("an unlisted host is refused; a listed one passes; *. opens subdomains only", async () => {
    setProject({ mode: "allowlist", allow: [`*.oubliette.test:${echoPort}`] });
    const listed = await connectThrough(`${ECHO}:${echoPort}`);
    expect(listed.status).toBe(200);
    expect(await echoOnce(listed.socket as Socket, "ping")).toBe("ping");
    listed.socket?.destroy();
    peer = { kind: "session", session_id: SESSION_B };
    const other = await connectThrough(`other.example:${echoPort}`);
    expect(other.status).toBe(403);
    expect(other.headers["x-oubliette-refusal"]).toBe("not_listed");
    expect(other.body).toContain(`other.example:${echoPort} is not in the project's network allowlist`);
    const apex = await connectThrough(`oubliette.test:${echoPort}`);
    expect(apex.status).toBe(403);
  });

  it("a methods limit refuses a POST over plain HTTP, and passes a GET", async () => {
    setProject({ mode: "allowlist", allow: [REGISTRY], methods: ["GET", "HEAD"] });
    const get = await getThrough(`http://${REGISTRY}:${plain.port}/${FIXTURE.hello}`);
    expect(get.status).toBe(200);
    const post = await getThrough(`http://${REGISTRY}:${plain.port}/${FIXTURE.hello}`, "POST");
    expect(post.status).toBe(403);
    expect(post.headers["x-oubliette-refusal"]).toBe("method");
    expect(JSON.parse(post.body).error).toContain("allows only GET, HEAD");
  });

  it("open still refuses loopback, localhost and [::1], before anything is dialled", async () => {
    setProject({ mode: "open" });
    const before = dialled.length;
    for (const target of [
      `127.0.0.1:${echoPort}`,
      `localhost:${echoPort}`,
      `[::1]:${echoPort}`,
      "169.254.169.254:80",
    ]) {
      const refused = await connectThrough(target);
      expect(refused.status, target).toBe(403);
      expect(refused.headers["x-oubliette-refusal"], target).toBe("address");
    }
    const get = await getThrough(`http://127.0.0.1:${plain.port}/`);
    expect(get.status).toBe(403);
    expect(dialled.length).toBe(before);
  });
});

describe("the bytes a client sends at once", () => {
  it("a CONNECT and the tunnel's first bytes in one write reach the host in order, every time", async () => {
    setProject({ mode: "allowlist", allow: [`${ECHO}:${echoPort}`] });
    for (let i = 0; i < 50; i++) {
      const payload = `payload-${i}-${"x".repeat(i * 37)}`;
      const answer = await new Promise<string>((resolve, reject) => {
        const socket = connect(forwarder.port, "127.0.0.1");
        let text = "";
        socket.on("data", (chunk: Buffer) => {
          text += chunk.toString();
          if (text.endsWith(payload)) {
            socket.destroy();
            resolve(text);
          }
        });
        socket.once("error", reject);
        socket.write(`CONNECT ${ECHO}:${echoPort} HTTP/1.1\r\nHost: ${ECHO}:${echoPort}\r\n\r\n${payload}`);
      });
      expect(answer).toBe(`HTTP/1.1 200 Connection Established\r\n\r\n${payload}`);
    }
  });
});

describe("who a connection is", () => {
  it("one session's credential is refused on another session's connection", async () => {
    setProject({ mode: "allowlist", allow: [`${ECHO}:${echoPort}`] });
    peer = { kind: "session", session_id: SESSION_B };
    const stolen = await connectThrough(`${ECHO}:${echoPort}`, tokenA);
    expect(stolen.status).toBe(403);
    expect(stolen.headers["x-oubliette-refusal"]).toBe("credential");
    expect(stolen.body).toContain("belongs to another session");
    const own = await connectThrough(`${ECHO}:${echoPort}`, tokenB);
    expect(own.status).toBe(200);
    own.socket?.destroy();
  });

  it("a process of no session gets nothing; the exec identity counts as the project", async () => {
    setProject({ mode: "allowlist", allow: [`${ECHO}:${echoPort}`] });
    peer = { kind: "unknown", uid: 4242 };
    const nobody = await connectThrough(`${ECHO}:${echoPort}`);
    expect(nobody.status).toBe(403);
    expect(nobody.body).toContain("a process of no session (uid 4242)");
    peer = { kind: "exec" };
    const exec = await connectThrough(`${ECHO}:${echoPort}`, project.execToken);
    expect(exec.status).toBe(200);
    exec.socket?.destroy();
    const refused = await connectThrough(`unlisted.example:${echoPort}`, project.execToken);
    expect(refused.status).toBe(403);
    expect(blockedProject.at(-1)).toMatchObject({ host: "unlisted.example", code: "not_listed" });
  });

  it("a runner without the container's secret gets no gate", async () => {
    const socketPath = join(scratch, "egress.sock");
    const impostor = await EgressForwarder.start({
      socketPath,
      runnerToken: "not-the-runner-secret",
      peerOf: () => ({ kind: "session", session_id: SESSION_A }),
      byUid: false,
      logger,
    });
    try {
      const res = await new Promise<{ status: number }>((resolve, reject) => {
        const req = request({
          host: "127.0.0.1",
          port: impostor.port,
          method: "CONNECT",
          path: `${ECHO}:${echoPort}`,
        });
        req.once("connect", (r, s) => {
          s.destroy();
          resolve({ status: r.statusCode ?? 0 });
        });
        req.once("error", reject);
        req.end();
      });
      expect(res.status).toBe(502);
    } finally {
      await impostor.close();
    }
  });
});

describe("a host the allowlist does not list, put to the session", () => {
  const decision = (d: Partial<ApprovalDecision>): ApprovalDecision => ({
    decision: "allow",
    scope: "once",
    by: "answer",
    ...d,
  });

  it("allow once lets this connection through and asks again for the next", async () => {
    setProject({ mode: "allowlist", allow: [] });
    linkA.answer = async () => decision({});
    const first = await connectThrough(`${ECHO}:${echoPort}`);
    expect(first.status).toBe(200);
    first.socket?.destroy();
    expect(linkA.asked).toEqual([
      expect.objectContaining({
        kind: "network",
        host: ECHO,
        port: echoPort,
        summary: `Connect to ${ECHO}:${echoPort}`,
      }),
    ]);
    const second = await connectThrough(`${ECHO}:${echoPort}`);
    second.socket?.destroy();
    expect(linkA.asked.length).toBe(2);
  });

  it("parallel connections to one host ask once; allow for the session stops further questions", async () => {
    setProject({ mode: "allowlist", allow: [] });
    let release: (d: ApprovalDecision) => void = () => {};
    linkA.answer = () => new Promise((resolve) => (release = resolve));
    const three = [1, 2, 3].map(() => connectThrough(`${ECHO}:${echoPort}`));
    await expect.poll(() => linkA.asked.length).toBe(1);
    await new Promise((r) => setTimeout(r, 100));
    expect(linkA.asked.length).toBe(1);
    release(decision({ scope: "session" }));
    for (const result of await Promise.all(three)) {
      expect(result.status).toBe(200);
      result.socket?.destroy();
    }
    const later = await connectThrough(`${ECHO}:${echoPort}`);
    expect(later.status).toBe(200);
    later.socket?.destroy();
    expect(linkA.asked.length).toBe(1);
  });

  it("a deny refuses the connection with the person's message", async () => {
    setProject({ mode: "allowlist", allow: [] });
    linkA.answer = async () => ({ decision: "deny", scope: "once", by: "answer", message: "not that one" });
    const refused = await connectThrough(`denied.oubliette.test:${echoPort}`);
    expect(refused.status).toBe(403);
    expect(refused.headers["x-oubliette-refusal"]).toBe("approval");
    expect(refused.body).toContain("not that one");
    expect(linkA.blockedEvents.at(-1)).toMatchObject({ code: "approval", host: "denied.oubliette.test" });
  });

  it("off is never asked about; a session whose approvals do not ask is refused at once", async () => {
    setProject({ mode: "off" });
    const off = await connectThrough(`${ECHO}:${echoPort}`);
    expect(off.status).toBe(403);
    expect(linkA.asked).toEqual([]);
    setProject({ mode: "allowlist", allow: [] });
    peer = { kind: "session", session_id: SESSION_B };
    const auto = await connectThrough(`${ECHO}:${echoPort}`);
    expect(auto.status).toBe(403);
    expect(linkB.asked).toEqual([]);
  });
});
