/**
 * vitest globalSetup for tests that need a real Docker Engine: makes one reachable (installing
 * and starting it on a bare root Debian machine), builds the bundles, the droid image and the
 * agent images, and writes the socket and image tags where the tests read them
 * (test/support/docker-context.ts). The preparation runs in the background, while the projects
 * that need no Docker run; each Docker test file waits for it (test/support/docker-wait.ts). Any
 * failure fails every Docker test, loudly: a Docker test suite that silently skips proves nothing.
 *
 * OUBLIETTE_TEST_AGENTS narrows the agent images built (`claude,droid`, or `none`); by default
 * every CLI runtime's image is built (about 80 s and 2 GB the first time, a second when warm).
 */
import { randomUUID } from "node:crypto";
import { renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestProject } from "vitest/node";
import { CLI_RUNTIME_NAMES, type CliRuntimeName } from "../../host-agent/src/images/agent-cli.js";
import { ensureAgentImages } from "../../host-agent/src/images/agent-images.js";
import { ensureDroidImage, ensureNodeBaseImage } from "../../host-agent/src/images/images.js";
import { buildAll } from "../../scripts/build.js";
import { type DockerEngine, ensureDockerEngine } from "../../scripts/docker/engine.js";
import type { DockerReady } from "./docker-context.js";

const log = (line: string) => process.stderr.write(`[docker-setup] ${line}\n`);

/**
 * Starts preparing Docker and the images, and returns at once; returns the teardown that waits
 * for the preparation and stops a dockerd it started.
 */
export default function setup(project: TestProject): () => Promise<void> {
  const readyFile = join(tmpdir(), `oubliette-docker-ready-${randomUUID()}.json`);
  project.provide("dockerReadyFile", readyFile);
  let engine: DockerEngine | undefined;
  const write = (ready: DockerReady) => {
    writeFileSync(`${readyFile}.part`, JSON.stringify(ready));
    renameSync(`${readyFile}.part`, readyFile);
  };
  const preparing = (async () => {
    const startedAt = Date.now();
    engine = await ensureDockerEngine({ install: true, log });
    log("bundling container-client and scripted-droid (esbuild)");
    const bundles = await buildAll();
    const nodeBaseImage = await ensureNodeBaseImage(engine.docker, log);
    const droidImage = await ensureDroidImage(engine.docker, bundles, log);
    const agents = testAgents(process.env.OUBLIETTE_TEST_AGENTS);
    const agentImages = await ensureAgentImages(engine.docker, bundles, agents, log);
    write({
      ok: true,
      dockerSocket: engine.socketPath,
      nodeBaseImage,
      droidImage,
      agentImages: { ...agentImages, scripted: droidImage },
    });
    log(`ready in ${((Date.now() - startedAt) / 1000).toFixed(1)} s`);
  })().catch((error: unknown) => {
    const message = error instanceof Error ? (error.stack ?? error.message) : String(error);
    log(`FAILED: Docker could not be prepared, so every Docker test fails:\n${message}`);
    write({ ok: false, error: message });
  });
  return async () => {
    await preparing;
    await engine?.stop();
    rmSync(readyFile, { force: true });
  };
}

/** The CLI runtimes OUBLIETTE_TEST_AGENTS names (comma-separated, or `none`); all when unset. */
function testAgents(value: string | undefined): CliRuntimeName[] {
  if (value === undefined || value.trim() === "") return CLI_RUNTIME_NAMES;
  if (value.trim() === "none") return [];
  const names = value.split(",").map((name) => name.trim());
  const unknown = names.filter((name) => !(CLI_RUNTIME_NAMES as string[]).includes(name));
  if (unknown.length > 0) {
    throw new Error(
      `OUBLIETTE_TEST_AGENTS names no such runtime: ${unknown.join(", ")} (known: ${CLI_RUNTIME_NAMES.join(", ")}, or none)`,
    );
  }
  return CLI_RUNTIME_NAMES.filter((name) => names.includes(name));
}
