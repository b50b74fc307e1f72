/**
 * A host from the one built file: dist/host-agent.mjs copied alone into an empty directory
 * outside the repository (no node_modules, no dist/, no sources) answers `--help` and
 * `--version`, builds the images with `images` (the same images as the repository's own setup:
 * the bundles it carries are the same bytes), and `start`s with a token from `host enrol`;
 * a session spawned on it completes a caller tool relay round trip; `doctor` and `service` do
 * what README "Deploy" says; and an upgrade (a new file in place, a restart) keeps the session.
 * Real wrangler dev, real Docker, the official MCP SDK caller.
 */
import { execFile } from "node:child_process";
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { type AddressInfo, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SessionEvent } from "../../protocol/events.js";
import { buildHostAgent, bundles } from "../../scripts/build.js";
import { type HostAgent, startHostAgent } from "../../scripts/stack/host-agent-process.js";
import { unmountUnder } from "../../scripts/stack/mounts.js";
import { removeHostContainers } from "../../scripts/stack/remove-containers.js";
import { TestCaller } from "../support/caller.js";
import { dockerContext } from "../support/docker-context.js";
import { TestStack } from "../support/stack.js";
import { followUntilReady, runStep, SEND_RESPONSE, text } from "./support.js";

const run = promisify(execFile);
type RequestEvent = Extract<SessionEvent, { type: "caller_tool_request" }>;

let dir: string;
let artefact: string;
let stack: TestStack;
let caller: TestCaller;
let host: HostAgent | undefined;

/** Runs the artefact from its empty directory with nothing of this repository's environment. */
function artefactRun(args: string[], env: Record<string, string> = {}) {
  return run(process.execPath, [artefact, ...args], {
    cwd: dir,
    env: {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: dir,
      DOCKER_HOST: `unix://${dockerContext().dockerSocket}`,
      ...env,
    },
    timeout: 300_000,
    maxBuffer: 16 * 1024 * 1024,
  });
}

/** The artefact started as a host: from its own directory, with its data and sockets there. */
function hostOptions(hostId: string, hostToken: string) {
  return {
    bundle: artefact,
    cwd: dir,
    workerUrl: stack.url,
    hostToken,
    hostId,
    runtime: "docker" as const,
    image: dockerContext().droidImage,
    socketDir: join(dir, "sockets"),
    logFile: join(dir, "host-agent.log"),
    extraEnv: {
      OUBLIETTE_DATA_DIR: join(dir, "data"),
      DOCKER_HOST: `unix://${dockerContext().dockerSocket}`,
    },
  };
}

/** The host the relay test started, for the upgrade test. */
let upgradeTarget: { hostId: string; token: string; sessionId: string } | undefined;

/** A loopback port nothing listens on (it was free a moment ago). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "oub-artefact-"));
  artefact = join(dir, "host-agent.mjs");
  copyFileSync(bundles.hostAgent, artefact);
  stack = await TestStack.start();
  caller = await TestCaller.connect(stack.mcpUrl, stack.adminToken);
}, 120_000);

afterAll(async () => {
  await host?.stop();
  await caller?.close();
  await stack?.stop();
  // Its containers and loop-mounted volumes outlive it by design; this test has no next start.
  if (host) await removeHostContainers([host.hostId]);
  await unmountUnder(dir);
  rmSync(dir, { recursive: true, force: true });
});

describe("the host-agent as one file", () => {
  it("is alone in its directory, and says what it does", async () => {
    expect(readdirSync(dir)).toEqual(["host-agent.mjs"]);
    const help = await artefactRun(["--help"]);
    for (const command of ["start", "images", "doctor", "service"])
      expect(help.stdout).toMatch(new RegExp(`^  ${command} `, "m"));
    const version = await artefactRun(["--version"]);
    expect(version.stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
    // The daemon's own command for writing its bundles is not offered.
    expect(help.stdout).not.toContain("unpack-bundles");
    const startHelp = await artefactRun(["start", "--help"]);
    expect(startHelp.stdout).toContain("--worker-url <url>");
  });

  it("is ASCII, so its source takes one byte a character in the host-agent's memory", () => {
    const text = readFileSync(artefact, "utf8");
    expect(text.length).toBeGreaterThan(1_000_000);
    expect(text.match(/[\u0080-\uffff]/g) ?? []).toEqual([]);
  });

  it("carries zod's English messages alone, none of the other ~60 languages it ships", () => {
    const text = readFileSync(artefact, "utf8");
    expect(text).toContain("Invalid input: expected");
    // German's word for a credit card number: in zod's de locale, and nowhere else.
    expect(text).not.toContain("Kreditkartennummer");
  });

  it("leaves Node's fetch (undici) unloaded: nothing it runs uses it, and once loaded it stays in memory", async () => {
    // Node's own record of the built-in modules the file loaded, written as the process exits.
    const report = `data:text/javascript,process.on("exit",()=>process.stderr.write(JSON.stringify(process.moduleLoadList)))`;
    const out = await run(process.execPath, ["--import", report, artefact, "--help"], {
      cwd: dir,
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: dir },
    });
    const loaded = JSON.parse(out.stderr) as string[];
    // Its own imports are in the record (node:https, the model proxy's upstream)...
    expect(loaded).toContain("NativeModule https");
    // ...and undici is not, with what it brings (http2, the web streams).
    expect(loaded.filter((name) => /undici|http2/.test(name))).toEqual([]);
  });

  it("builds the droid image from the bundles it carries: the same image the repository's setup built", async () => {
    const built = await artefactRun(["images", "--agents", "none", "--data-dir", join(dir, "data")]);
    expect(JSON.parse(built.stdout)).toEqual({ images: { scripted: dockerContext().droidImage } });
    expect(built.stderr).toContain(`${dockerContext().droidImage} is up to date`);
    // It wrote its bundles under its data directory, nowhere else.
    expect(readdirSync(dir).sort()).toEqual(["data", "host-agent.mjs"]);
    // Read back from the file's end (by its unpack-bundles child): the same bytes as the bundles
    // it was built from.
    const [written] = readdirSync(join(dir, "data", "bundles"));
    for (const name of ["container-client.mjs", "scripted-droid.mjs", "container-client.mjs.map"]) {
      expect(readFileSync(join(dir, "data", "bundles", written ?? "", name))).toEqual(
        readFileSync(join(bundles.containerClient, "..", name)),
      );
    }
  }, 300_000);

  it("refuses an agent it does not know, saying which it knows", async () => {
    const refused = artefactRun(["images", "--agents", "claude,cobol", "--data-dir", join(dir, "data")]);
    await expect(refused).rejects.toMatchObject({ code: 2 });
    await expect(refused).rejects.toThrow(/--agents names no such runtime: cobol \(known: .*claude/);
  });

  it("doctor checks the Worker and the token: a good one passes, a wrong one and an unreachable Worker are said clearly", async () => {
    const hostId = `doctor-${process.pid}`;
    const { token } = await caller.ok<{ token: string }>("host", { action: "enrol", host_id: hostId });
    const doctor = (workerUrl: string, hostToken: string) =>
      artefactRun(
        ["doctor", "--worker-url", workerUrl, "--host-id", hostId, "--data-dir", join(dir, "data")],
        { OUBLIETTE_HOST_TOKEN: hostToken },
      ).catch((failed: { code: number; stdout: string }) => failed);
    const lines = (out: { stdout: string }) => out.stdout.split("\n");
    const good = await doctor(stack.url, token);
    expect(lines(good)).toContainEqual(expect.stringMatching(/^✓ worker: /));
    expect(lines(good)).toContainEqual(expect.stringMatching(new RegExp(`^✓ host-token: .*${hostId}`)));
    expect(lines(good)).toContainEqual(expect.stringMatching(/^✓ docker: /));

    const wrong = await doctor(stack.url, `oub_${"0".repeat(64)}`);
    expect(wrong).toMatchObject({ code: 1 });
    expect(lines(wrong)).toContainEqual(
      expect.stringMatching(/^✗ host-token: the Worker refuses this token/),
    );

    const other = await caller.ok<{ token: string }>("host", { action: "enrol", host_id: `${hostId}-other` });
    const misbound = await doctor(stack.url, other.token);
    expect(lines(misbound)).toContainEqual(
      expect.stringMatching(new RegExp(`^✗ host-token: .*${hostId}-other`)),
    );

    const closed = await closedPort();
    const unreachable = await doctor(`http://127.0.0.1:${closed}`, token);
    expect(unreachable).toMatchObject({ code: 1 });
    expect(lines(unreachable)).toContainEqual(
      expect.stringMatching(new RegExp(`^✗ worker: .*127\\.0\\.0\\.1:${closed} refuses connections`)),
    );
    expect(lines(unreachable)).toContainEqual("✗ host-token: not checked: the Worker is not reachable");
    // The token is never printed.
    for (const out of [good, wrong, misbound, unreachable]) expect(out.stdout).not.toContain(token);
  }, 120_000);

  it("service writes a unit systemd accepts and an environment file only root reads, holding the token", async () => {
    const token = `oub_${"c".repeat(64)}`;
    const unit = join(dir, "unit", "oubliette-host-agent.service");
    const envFile = join(dir, "etc", "host-agent.env");
    const written = await artefactRun(
      [
        "service",
        "--worker-url",
        "https://oubliette.example",
        "--host-id",
        "builder-1",
        "--unit",
        unit,
        "--environment-file",
        envFile,
        "--data-dir",
        join(dir, "service-data"),
        "--socket-dir",
        join(dir, "service-sockets"),
      ],
      { OUBLIETTE_HOST_TOKEN: token },
    ).catch((failed: { stderr: string }) => failed);
    // A data directory under /tmp would be emptied: the service refuses it.
    expect((written as { stderr: string }).stderr).toMatch(/under \/tmp.*choose a lasting one/);
    const lasting = mkdtempSync("/var/lib/oub-artefact-");
    try {
      const ok = await artefactRun(
        [
          "service",
          "--worker-url",
          "https://oubliette.example",
          "--host-id",
          "builder-1",
          "--unit",
          unit,
          "--environment-file",
          envFile,
          "--data-dir",
          join(lasting, "data"),
          "--socket-dir",
          join(lasting, "sockets"),
        ],
        { OUBLIETTE_HOST_TOKEN: token },
      );
      expect(ok.stdout).toContain("systemctl daemon-reload");
      const unitText = readFileSync(unit, "utf8");
      expect(unitText).toContain(
        `ExecStart=${process.execPath} --max-semi-space-size=1 --optimize-for-size --no-opt --no-maglev ${artefact} start`,
      );
      expect(unitText).toContain("Restart=always");
      expect(unitText).not.toContain(token);
      expect(statSync(envFile).mode & 0o777).toBe(0o600);
      expect(readFileSync(envFile, "utf8")).toContain(`OUBLIETTE_HOST_TOKEN="${token}"`);
      // --now reloads systemd and starts the unit (a recording systemctl stands in for systemd here).
      const bin = join(lasting, "bin");
      mkdirSync(bin);
      const calls = join(lasting, "systemctl-calls");
      writeFileSync(join(bin, "systemctl"), `#!/bin/sh\necho "$*" >> ${calls}\n`, { mode: 0o755 });
      const started = await artefactRun(
        [
          "service",
          "--worker-url",
          "https://oubliette.example",
          "--host-id",
          "builder-1",
          "--unit",
          unit,
          "--environment-file",
          envFile,
          "--data-dir",
          join(lasting, "data"),
          "--socket-dir",
          join(lasting, "sockets"),
          "--force",
          "--images",
          "none",
          "--now",
        ],
        { OUBLIETTE_HOST_TOKEN: token, PATH: `${bin}:${process.env.PATH ?? ""}` },
      );
      expect(started.stdout).toContain(`images: ${dockerContext().droidImage}`);
      expect(started.stdout).toContain("started oubliette-host-agent.service");
      expect(readFileSync(calls, "utf8")).toBe("daemon-reload\nenable --now oubliette-host-agent.service\n");
      if (existsSync("/usr/bin/systemd-analyze")) {
        const verified = await run("systemd-analyze", ["verify", unit]).catch((e: { stderr: string }) => e);
        expect((verified as { stderr: string }).stderr.trim()).toBe("");
      }
    } finally {
      rmSync(lasting, { recursive: true, force: true });
    }
  });

  it("starts with a token from host enrol and serves a session's relay round trip", async () => {
    const hostId = `artefact-${process.pid}`;
    const enrolled = await caller.ok<{ token: string }>("host", { action: "enrol", host_id: hostId });
    host = await startHostAgent(hostOptions(hostId, enrolled.token));
    const listed = await caller.ok<{
      hosts: { host_id: string; connected: boolean; version: string | null }[];
    }>("host", { action: "list" });
    expect(listed.hosts.find((h) => h.host_id === hostId)).toMatchObject({
      connected: true,
      version: "0.1.0",
    });

    const spawned = await caller.ok<{ session_id: string }>("session", {
      action: "spawn",
      project_id: await caller.newProject(),
      new_session: true,
      caller_id: "ant",
      caller_tools: [SEND_RESPONSE],
    });
    const sessionId = spawned.session_id;
    await followUntilReady(caller, sessionId, "ant", [SEND_RESPONSE]);
    expect(
      (await caller.ok<{ host_id: string }>("session", { action: "get", session_id: sessionId })).host_id,
    ).toBe(hostId);
    const before = caller.events.length;
    const call = runStep(caller, sessionId, {
      op: "call",
      id: "round-trip",
      name: "ant_send_response",
      arguments: { message: "from the artefact's droid" },
    });
    const request = (await caller.waitFor(
      (e) =>
        e.type === "caller_tool_request" && e.session_id === sessionId && caller.events.indexOf(e) >= before,
    )) as RequestEvent;
    expect(request.arguments).toEqual({ message: "from the artefact's droid" });
    await caller.respond(sessionId, request.request_id, { result: "answered by the caller" });
    const out = await call;
    expect(out.is_error).toBe(false);
    expect(text(out)).toBe("answered by the caller");
    upgradeTarget = { hostId, token: enrolled.token, sessionId };
  }, 180_000);

  it("upgrades: a new file in place of the old and a restart keep the running session; the host reports its new version", async () => {
    const target = upgradeTarget;
    if (!target || !host) throw new Error("the previous test started no host");
    const next = await buildHostAgent({
      outfile: join(dir, "next", "host-agent.mjs"),
      version: "0.1.1-upgrade",
    });
    await host.stop();
    copyFileSync(next, artefact);
    host = await startHostAgent({ ...hostOptions(target.hostId, target.token) });
    await expect
      .poll(
        async () => {
          const { hosts } = await caller.ok<{
            hosts: { host_id: string; connected: boolean; version: string | null }[];
          }>("host", { action: "list" });
          return hosts.find((h) => h.host_id === target.hostId)?.version ?? null;
        },
        { timeout: 30_000 },
      )
      .toBe("0.1.1-upgrade");
    const before = caller.events.length;
    const call = runStep(caller, target.sessionId, {
      op: "call",
      id: "after-upgrade",
      name: "ant_send_response",
      arguments: { message: "after the upgrade" },
    });
    const request = (await caller.waitFor(
      (e) =>
        e.type === "caller_tool_request" &&
        e.session_id === target.sessionId &&
        caller.events.indexOf(e) >= before,
    )) as RequestEvent;
    await caller.respond(target.sessionId, request.request_id, { result: "still here" });
    expect(text(await call)).toBe("still here");
    const info = await caller.ok<{ status: string }>("session", {
      action: "get",
      session_id: target.sessionId,
    });
    expect(info.status).toBe("running");
  }, 180_000);
});
