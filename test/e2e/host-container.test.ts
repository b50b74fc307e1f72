/**
 * The host-agent in a container, the documented alternative to a systemd service: `host-agent
 * images --host-image` builds `oubliette/host-agent:<version>` from the one built file, and that
 * image, run with the engine's socket and the data and socket directories mounted at their own
 * paths (README "Deploy"), connects with an enrolled token and serves a session end to end: its
 * droid's container is started through the mounted socket, and a caller tool call makes the
 * round trip. Real wrangler dev, real Docker, the official MCP SDK caller.
 */
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import Dockerode from "dockerode";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HOST_LABEL } from "../../host-agent/src/runtime/docker-runtime.js";
import type { SessionEvent } from "../../protocol/events.js";
import { bundles } from "../../scripts/build.js";
import { unmountUnder } from "../../scripts/stack/mounts.js";
import { removeHostContainers } from "../../scripts/stack/remove-containers.js";
import { TestCaller } from "../support/caller.js";
import { dockerContext } from "../support/docker-context.js";
import { TestStack } from "../support/stack.js";
import { followUntilReady, runStep, SEND_RESPONSE, text } from "./support.js";

const run = promisify(execFile);
type RequestEvent = Extract<SessionEvent, { type: "caller_tool_request" }>;
const docker = new Dockerode({ socketPath: dockerContext().dockerSocket });
const hostId = `in-container-${process.pid}`;

let dir: string;
let stack: TestStack;
let caller: TestCaller;
let agent: Dockerode.Container | undefined;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "oub-host-container-"));
  stack = await TestStack.start();
  caller = await TestCaller.connect(stack.mcpUrl, stack.adminToken);
}, 120_000);

afterAll(async () => {
  await agent?.remove({ force: true }).catch(() => {});
  await removeHostContainers([hostId]);
  await caller?.close();
  await stack?.stop();
  await unmountUnder(dir);
  rmSync(dir, { recursive: true, force: true });
});

describe("the host-agent as a container", () => {
  it("is built from the one file, and serves a session end to end", async () => {
    const built = await run(
      process.execPath,
      [bundles.hostAgent, "images", "--agents", "none", "--host-image"],
      {
        env: {
          PATH: process.env.PATH ?? "",
          DOCKER_HOST: `unix://${dockerContext().dockerSocket}`,
          OUBLIETTE_DATA_DIR: join(dir, "build"),
        },
        timeout: 300_000,
      },
    );
    const image = (JSON.parse(built.stdout) as { images: Record<string, string> }).images["host-agent"];
    expect(image).toMatch(/^oubliette\/host-agent:\d+\.\d+\.\d+/);
    // It runs as the service and the stack's child do: with one malloc arena.
    expect((await docker.getImage(image ?? "").inspect()).Config.Env).toContain("MALLOC_ARENA_MAX=1");

    const { token } = await caller.ok<{ token: string }>("host", { action: "enrol", host_id: hostId });
    // The directories the containers it starts bind-mount: the same paths inside and out.
    const dataDir = join(dir, "data");
    const socketDir = join(dir, "sockets");
    mkdirSync(dataDir, { recursive: true });
    mkdirSync(socketDir, { recursive: true });
    agent = await docker.createContainer({
      Image: image,
      name: hostId,
      Env: [
        `OUBLIETTE_WORKER_URL=${stack.url}`,
        `OUBLIETTE_HOST_TOKEN=${token}`,
        `OUBLIETTE_HOST_ID=${hostId}`,
        `OUBLIETTE_DATA_DIR=${dataDir}`,
        `OUBLIETTE_SOCKET_DIR=${socketDir}`,
        `OUBLIETTE_IMAGE=${dockerContext().droidImage}`,
        "OUBLIETTE_RUNTIME=docker",
      ],
      HostConfig: {
        // The Worker is on this machine's loopback (wrangler dev).
        NetworkMode: "host",
        Binds: [
          `${dockerContext().dockerSocket}:/var/run/docker.sock`,
          `${dataDir}:${dataDir}`,
          `${socketDir}:${socketDir}`,
        ],
      },
    });
    await agent.start();
    const deadline = Date.now() + 60_000;
    for (;;) {
      const { hosts } = await caller.ok<{ hosts: { host_id: string; connected: boolean }[] }>("host", {
        action: "list",
      });
      if (hosts.some((h) => h.host_id === hostId && h.connected)) break;
      if (Date.now() > deadline) {
        const logs = await agent.logs({ stdout: true, stderr: true, tail: 30 });
        throw new Error(`the host-agent in a container never connected: ${logs.toString()}`);
      }
      await new Promise((r) => setTimeout(r, 250));
    }

    const spawned = await caller.ok<{ session_id: string }>("session", {
      action: "spawn",
      project_id: await caller.newProject(),
      new_session: true,
      caller_id: "ant",
      caller_tools: [SEND_RESPONSE],
    });
    const sessionId = spawned.session_id;
    await followUntilReady(caller, sessionId, "ant", [SEND_RESPONSE]);
    // The droid's container was started through the mounted socket, labelled with this host.
    const droids = await docker.listContainers({ filters: { label: [`${HOST_LABEL}=${hostId}`] } });
    expect(droids.length).toBe(1);
    const before = caller.events.length;
    const call = runStep(caller, sessionId, {
      op: "call",
      id: "in-container",
      name: "ant_send_response",
      arguments: { message: "through a containerised host" },
    });
    const request = (await caller.waitFor(
      (e) =>
        e.type === "caller_tool_request" && e.session_id === sessionId && caller.events.indexOf(e) >= before,
    )) as RequestEvent;
    expect(request.arguments).toEqual({ message: "through a containerised host" });
    await caller.respond(sessionId, request.request_id, { result: "answered" });
    const out = await call;
    expect(out.is_error).toBe(false);
    expect(text(out)).toBe("answered");
  }, 300_000);
});
