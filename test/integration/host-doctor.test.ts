/**
 * `host-agent doctor` against real sockets on this machine: a loopback stand-in for the Worker
 * (`/healthz` and `/v1/hosts/self`), servers that are not one (a stranger, a redirect, a silent
 * one, TLS with an untrusted certificate), a closed port, a name that does not resolve; a Docker
 * client pointed at no socket and a stand-in engine on a Unix socket; directories with wrong
 * modes; secret files, whose secrets never show. No Docker is needed.
 */
import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer as createHttpServer, type RequestListener, type Server } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo } from "node:net";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import Dockerode from "dockerode";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type DoctorFinding,
  type DoctorInput,
  formatFindings,
  runDoctor,
} from "../../host-agent/src/cli/doctor.js";
import { loopbackTls } from "../support/tls-cert.js";

const SHARED = `oub_${"1".repeat(64)}`;
const BOUND = `oub_${"2".repeat(64)}`;
const OTHER_HOST = `oub_${"3".repeat(64)}`;
const CALLER = `oub_${"4".repeat(64)}`;
const SECRET = "sk-ant-doctor-never-prints-this";

/** The Worker's answers, as worker/src/http/host-self-route.ts gives them. */
const worker: RequestListener = (req, res) => {
  const json = (status: number, body: unknown) => {
    res.writeHead(status, { "content-type": "application/json" });
    res.end(JSON.stringify(body));
  };
  if (req.url === "/healthz") return json(200, { ok: true });
  if (req.url !== "/v1/hosts/self") return json(404, { error: { code: "not_found", message: "no route" } });
  const token = /^Bearer (\S+)$/.exec(req.headers.authorization ?? "")?.[1];
  if (token === SHARED) return json(200, { host_id: null });
  if (token === BOUND) return json(200, { host_id: "builder-1" });
  if (token === OTHER_HOST) return json(200, { host_id: "builder-2" });
  if (token === CALLER)
    return json(403, { error: { code: "forbidden", message: "this is a caller's token, not a host token" } });
  return json(401, { error: { code: "unauthorized", message: "this token is not valid here" } });
};

const servers: Server[] = [];
async function listen(server: Server, at: string | number = 0): Promise<string> {
  servers.push(server);
  await new Promise<void>((resolve) =>
    typeof at === "string" ? server.listen(at, resolve) : server.listen(at, "127.0.0.1", resolve),
  );
  return typeof at === "string" ? at : `127.0.0.1:${(server.address() as AddressInfo).port}`;
}

let dir: string;
/** Outside the temporary directory: the data directory check refuses anything under it. */
let lasting: string;
let workerUrl: string;
let strangerUrl: string;
let redirectUrl: string;
let silentUrl: string;
let tlsUrl: string;
let closedUrl: string;
let removeTls: () => Promise<void>;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "host-doctor-"));
  mkdirSync(join(process.cwd(), ".oubliette"), { recursive: true });
  // Not under a temporary directory (doctor flags those), wherever the checkout is: the home.
  lasting = mkdtempSync(join(homedir(), ".oubliette-host-doctor-"));
  workerUrl = `http://${await listen(createHttpServer(worker))}`;
  strangerUrl = `http://${await listen(createHttpServer((_req, res) => res.end("<html>hello</html>")))}`;
  redirectUrl = `http://${await listen(
    createHttpServer((_req, res) => {
      res.writeHead(301, { location: "https://oubliette.example/healthz" });
      res.end();
    }),
  )}`;
  // Accepts connections and never answers.
  silentUrl = `http://${await listen(createHttpServer(() => {}))}`;
  const tls = await loopbackTls();
  removeTls = tls.remove;
  tlsUrl = `https://${await listen(createHttpsServer({ key: tls.key, cert: tls.cert }, worker))}`;
  const closed = createHttpServer();
  const address = await listen(closed);
  await new Promise<void>((resolve) => closed.close(() => resolve()));
  closedUrl = `http://${address}`;
});

afterAll(async () => {
  for (const server of servers) {
    server.closeAllConnections?.();
    server.close();
  }
  await removeTls?.();
  rmSync(dir, { recursive: true, force: true });
  rmSync(lasting, { recursive: true, force: true });
});

let made = 0;
/** A fresh directory with `mode` (under `parent`). */
function dirWithMode(mode: number, parent = dir): string {
  const path = join(parent, `d${made++}`);
  mkdirSync(path);
  chmodSync(path, mode);
  return path;
}

/** A Docker client whose socket does not exist: doctor must say so, not hang or crash. */
const nowhere = join(tmpdir(), "host-doctor-no-such-dir", "docker.sock");
function input(overrides: Partial<DoctorInput> = {}): DoctorInput {
  return {
    workerUrl,
    hostToken: SHARED,
    hostId: "builder-1",
    socketDir: dirWithMode(0o711),
    dataDir: dirWithMode(0o700, lasting),
    // No dockerSocket: the messages name the client's own socket.
    docker: () => new Dockerode({ socketPath: nowhere }),
    env: {},
    timeoutMs: 3_000,
    ...overrides,
  };
}

function finding(findings: DoctorFinding[], check: string): DoctorFinding {
  const found = findings.find((f) => f.check === check);
  if (!found) throw new Error(`no ${check} finding in ${JSON.stringify(findings)}`);
  return found;
}

describe("the Worker and the host token", () => {
  it("passes a Worker that takes the shared token, and a token bound to this host", async () => {
    for (const hostToken of [SHARED, BOUND]) {
      const findings = await runDoctor(input({ hostToken }));
      expect(finding(findings, "worker")).toMatchObject({ ok: true });
      expect(finding(findings, "worker").detail).toContain(`${workerUrl}/healthz answers in`);
      expect(finding(findings, "host-token")).toMatchObject({ ok: true });
    }
    const bound = finding(await runDoctor(input({ hostToken: BOUND })), "host-token");
    expect(bound.detail).toBe("the Worker takes this token for host builder-1");
  });

  it("fails a token bound to another host id, saying which", async () => {
    const found = finding(await runDoctor(input({ hostToken: OTHER_HOST })), "host-token");
    expect(found.ok).toBe(false);
    expect(found.detail).toContain("bound to host builder-2, not builder-1");
    expect(found.fix).toContain("--host-id builder-2");
  });

  it("fails a token the Worker refuses, and a caller's token, without showing either", async () => {
    const refused = await runDoctor(input({ hostToken: `oub_${"9".repeat(64)}` }));
    expect(finding(refused, "host-token")).toMatchObject({ ok: false });
    expect(finding(refused, "host-token").detail).toContain("the Worker refuses this token");
    const caller = await runDoctor(input({ hostToken: CALLER }));
    expect(finding(caller, "host-token").detail).toContain("403: this is a caller's token, not a host token");
    for (const text of [formatFindings(refused), formatFindings(caller)]) {
      expect(text).not.toContain("9".repeat(64));
      expect(text).not.toContain(CALLER);
    }
  });

  it("says what is wrong with a server that is not the Worker", async () => {
    const stranger = finding(await runDoctor(input({ workerUrl: strangerUrl })), "worker");
    expect(stranger).toMatchObject({ ok: false });
    expect(stranger.detail).toContain("not as an Oubliette Worker does");
    const redirect = finding(await runDoctor(input({ workerUrl: redirectUrl })), "worker");
    expect(redirect.detail).toContain("answers 301, a redirect to https://oubliette.example/healthz");
    // The token is not sent to what is not the Worker's health answer.
    expect(finding(await runDoctor(input({ workerUrl: redirectUrl })), "host-token")).toMatchObject({
      ok: false,
      detail: "not checked: the Worker is not reachable",
    });
  });

  it("tells a closed port, an unknown name, untrusted TLS and silence apart", async () => {
    const closed = finding(await runDoctor(input({ workerUrl: closedUrl })), "worker");
    expect(closed).toMatchObject({ ok: false });
    expect(closed.detail).toContain("refuses connections");
    const dns = finding(await runDoctor(input({ workerUrl: "http://oubliette-doctor.invalid" })), "worker");
    expect(dns.detail).toContain("does not resolve");
    const tls = finding(await runDoctor(input({ workerUrl: tlsUrl })), "worker");
    expect(tls.detail).toMatch(/^TLS with https:\/\/127\.0\.0\.1:\d+ fails \(/);
    const started = Date.now();
    const silent = finding(await runDoctor(input({ workerUrl: silentUrl, timeoutMs: 500 })), "worker");
    expect(silent).toMatchObject({ ok: false, detail: "the Worker did not answer within 500 ms" });
    expect(Date.now() - started).toBeLessThan(3_000);
  });
});

describe("the Docker Engine", () => {
  it("fails clearly when the engine's socket is not there", async () => {
    const findings = await runDoctor(input());
    expect(finding(findings, "docker")).toMatchObject({
      ok: false,
      detail: `no Docker Engine socket at ${nowhere}`,
    });
    expect(finding(findings, "docker").fix).toContain("systemctl start docker");
    expect(finding(findings, "docker-network")).toMatchObject({ ok: false });
  });

  /** A stand-in engine on a Unix socket, answering as the Engine API does. */
  async function engine(networks: string[] | null): Promise<string> {
    const socket = join(dir, `engine-${made++}.sock`);
    await listen(
      createHttpServer((req, res) => {
        const path = (req.url ?? "").replace(/^\/v[\d.]+/, "").split("?")[0];
        const json = (body: unknown) => {
          res.writeHead(200, { "content-type": "application/json" });
          res.end(JSON.stringify(body));
        };
        if (path === "/_ping") return res.end("OK");
        if (path === "/version") return json({ Version: "27.5.1", ApiVersion: "1.47" });
        if (path === "/info")
          return json({
            ServerVersion: "27.5.1",
            OperatingSystem: "Debian GNU/Linux 12 (bookworm)",
            Plugins: networks === null ? {} : { Network: networks },
          });
        res.writeHead(404);
        res.end();
      }),
      socket,
    );
    return socket;
  }

  it("reports the engine's version and that containers can start with no network", async () => {
    const socket = await engine(["bridge", "host", "ipvlan", "macvlan", "null", "overlay"]);
    const findings = await runDoctor(
      input({ docker: new Dockerode({ socketPath: socket }), dockerSocket: socket }),
    );
    expect(finding(findings, "docker")).toEqual({
      check: "docker",
      ok: true,
      detail: `Docker Engine 27.5.1 (API 1.47) answers on ${socket}`,
    });
    expect(finding(findings, "docker-network").ok).toBe(true);
    expect(finding(findings, "docker-network").detail).toContain("Docker 27.5.1 on Debian GNU/Linux 12");
  });

  it("fails an engine without the null network driver, and passes one that lists none", async () => {
    const without = await engine(["bridge"]);
    const bad = finding(
      await runDoctor(input({ docker: new Dockerode({ socketPath: without }), dockerSocket: without })),
      "docker-network",
    );
    expect(bad).toMatchObject({ ok: false });
    expect(bad.detail).toContain('no "null" network driver');
    const silent = await engine(null);
    const unlisted = finding(
      await runDoctor(input({ docker: new Dockerode({ socketPath: silent }), dockerSocket: silent })),
      "docker-network",
    );
    expect(unlisted.ok).toBe(true);
  });

  it("does not hang on an engine that never answers", async () => {
    const socket = join(dir, "silent-engine.sock");
    await listen(
      createHttpServer(() => {}),
      socket,
    );
    const started = Date.now();
    const found = finding(
      await runDoctor(
        input({ docker: new Dockerode({ socketPath: socket }), dockerSocket: socket, timeoutMs: 500 }),
      ),
      "docker",
    );
    expect(found).toMatchObject({
      ok: false,
      detail: `the Docker Engine on ${socket} did not answer within 500 ms`,
    });
    expect(Date.now() - started).toBeLessThan(3_000);
  });

  it("checks no Docker under the process runtime", async () => {
    const findings = await runDoctor(input({ runtime: "process" }));
    expect(finding(findings, "docker")).toMatchObject({ ok: true });
    expect(finding(findings, "docker").detail).toContain("not checked");
  });
});

describe("the directories", () => {
  it("passes the modes the host-agent makes them with, and directories it can make", async () => {
    const findings = await runDoctor(input({ socketDir: join(dir, "to-be-made", "sockets") }));
    expect(finding(findings, "socket-dir")).toMatchObject({ ok: true });
    expect(finding(findings, "socket-dir").detail).toContain("makes it (mode 0711) at start");
    expect(finding(findings, "data-dir")).toMatchObject({ ok: true });
    expect(finding(findings, "data-dir").detail).toContain("mode 0700");
  });

  it("fails a socket directory others can write to, and a data directory others can read", async () => {
    const findings = await runDoctor(
      input({ socketDir: dirWithMode(0o777), dataDir: dirWithMode(0o755, lasting) }),
    );
    const sockets = finding(findings, "socket-dir");
    expect(sockets).toMatchObject({ ok: false });
    expect(sockets.detail).toContain("mode 0777: other users could replace the projects' socket directories");
    expect(sockets.fix).toMatch(/^chmod 711 /);
    const data = finding(findings, "data-dir");
    expect(data.detail).toContain("mode 0755");
    expect(data.fix).toMatch(/^chmod 700 /);
  });

  it("fails a file where a directory should be, a data directory under /tmp, and one that cannot be made", async () => {
    const file = join(dir, "a-file");
    writeFileSync(file, "");
    const locked = dirWithMode(0o500);
    const findings = await runDoctor(input({ socketDir: file, dataDir: join(dir, "data") }));
    expect(finding(findings, "socket-dir")).toMatchObject({
      ok: false,
      detail: `${file} is not a directory`,
    });
    expect(finding(findings, "data-dir").detail).toContain("which is emptied at boot or by age");
    if (process.geteuid?.() !== 0) {
      // Root may write anywhere; only another user sees this one.
      const cannot = finding(await runDoctor(input({ socketDir: join(locked, "sockets") })), "socket-dir");
      expect(cannot.detail).toContain("cannot be made");
    }
  });

  it.skipIf(process.geteuid?.() !== 0)("fails a directory that belongs to another user", async () => {
    const theirs = dirWithMode(0o711);
    chownSync(theirs, 12_345, 12_345);
    const found = finding(await runDoctor(input({ socketDir: theirs })), "socket-dir");
    expect(found).toMatchObject({ ok: false });
    expect(found.detail).toContain("belongs to uid 12345");
  });
});

describe("the secret files", () => {
  function secretFile(name: string, text: string, mode = 0o600): string {
    const path = join(dir, name);
    writeFileSync(path, text, { mode });
    chmodSync(path, mode);
    return path;
  }

  it("names providers and credentials, never their secrets", async () => {
    const modelKeys = secretFile("keys.json", JSON.stringify({ anthropic: { api_key: SECRET } }));
    const gitCredentials = secretFile("git.json", JSON.stringify({ "github-acme": { token: SECRET } }));
    const findings = await runDoctor(
      input({ modelKeys, gitCredentials, env: { OUBLIETTE_OPENAI_API_KEY: SECRET } }),
    );
    expect(finding(findings, "model-keys")).toMatchObject({ ok: true });
    expect(finding(findings, "model-keys").detail).toContain("keys for anthropic, openai");
    expect(finding(findings, "git-credentials")).toMatchObject({ ok: true });
    expect(finding(findings, "git-credentials").detail).toContain("credentials github-acme");
    expect(formatFindings(findings)).not.toContain(SECRET);
  });

  it("fails broken files without quoting them", async () => {
    // Node's JSON.parse error quotes the text near the fault: here, the token.
    const modelKeys = secretFile("bad-keys.json", `{"anthropic": {"api_key": ${SECRET}}}`);
    const gitCredentials = secretFile("bad-git.json", `{"github-acme": {"token": ${SECRET}}}`);
    const findings = await runDoctor(input({ modelKeys, gitCredentials }));
    expect(finding(findings, "model-keys")).toMatchObject({ ok: false });
    expect(finding(findings, "git-credentials")).toMatchObject({
      ok: false,
      detail: `${gitCredentials} is not JSON`,
    });
    const invalid = secretFile(
      "invalid-git.json",
      JSON.stringify({ "github-acme": { token: 42, tokn: SECRET } }),
    );
    const wrong = finding(await runDoctor(input({ gitCredentials: invalid })), "git-credentials");
    expect(wrong).toMatchObject({ ok: false });
    for (const text of [formatFindings(findings), wrong.detail]) expect(text).not.toContain(SECRET);
  });

  it("fails secret files other users can read", async () => {
    const gitCredentials = secretFile("open-git.json", JSON.stringify({ deploy: { token: SECRET } }), 0o644);
    const found = finding(await runDoctor(input({ gitCredentials })), "git-credentials");
    expect(found).toMatchObject({ ok: false, fix: `chmod 600 ${gitCredentials}` });
    expect(found.detail).toContain("mode 0644");
  });

  it("passes when nothing is configured", async () => {
    const findings = await runDoctor(input());
    expect(finding(findings, "model-keys").ok).toBe(true);
    expect(finding(findings, "git-credentials")).toMatchObject({ ok: true });
  });
});

describe("formatFindings", () => {
  it("prints one line per finding and the fix indented under a failure", async () => {
    const text = formatFindings([
      { check: "worker", ok: true, detail: "answers", fix: "never shown" },
      { check: "docker", ok: false, detail: "no socket\u001b[31m", fix: "start it\nor install it" },
    ]);
    expect(text).toBe(
      ["✓ worker: answers", "✗ docker: no socket [31m", "    start it", "    or install it"].join("\n"),
    );
  });

  it("reports every check, in a fixed order, within the time bound", async () => {
    const findings = await runDoctor(input());
    expect(findings.map((f) => f.check)).toEqual([
      "node",
      "docker",
      "docker-network",
      "worker",
      "host-token",
      "socket-dir",
      "data-dir",
      "model-keys",
      "git-credentials",
    ]);
  });
});
