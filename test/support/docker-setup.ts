/**
 * vitest globalSetup for tests that need a real Docker Engine: makes one reachable (installing
 * and starting it on a bare root Debian machine), builds the bundles, the droid image and the
 * agent images, and provides the socket and image tags to the tests. Any failure fails the whole
 * run, loudly: a Docker test suite that silently skips proves nothing.
 *
 * OUBLIETTE_TEST_AGENTS narrows the agent images built (`claude,droid`, or `none`); by default
 * every CLI runtime's image is built (about 80 s and 2 GB the first time, a second when warm).
 */
import type { TestProject } from "vitest/node";
import { CLI_RUNTIME_NAMES, type CliRuntimeName } from "../../host-agent/src/images/agent-cli.js";
import { ensureAgentImages } from "../../host-agent/src/images/agent-images.js";
import { ensureDroidImage, ensureNodeBaseImage } from "../../host-agent/src/images/images.js";
import type { AgentRuntime } from "../../protocol/agent-runtimes.js";
import { buildAll } from "../../scripts/build.js";
import { ensureDockerEngine } from "../../scripts/docker/engine.js";

declare module "vitest" {
  export interface ProvidedContext {
    dockerSocket: string;
    droidImage: string;
    nodeBaseImage: string;
    /** Image tag by runtime: `scripted` (the droid image) and each CLI runtime built for this run. */
    agentImages: Partial<Record<AgentRuntime, string>>;
  }
}

const log = (line: string) => process.stderr.write(`[docker-setup] ${line}\n`);

/** Prepares Docker and the droid image; returns the teardown that stops a dockerd we started. */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const startedAt = Date.now();
  const engine = await ensureDockerEngine({ install: true, log });
  try {
    log("bundling container-client and scripted-droid (esbuild)");
    const bundles = await buildAll();
    const nodeBaseImage = await ensureNodeBaseImage(engine.docker, log);
    const droidImage = await ensureDroidImage(engine.docker, bundles, log);
    const agents = testAgents(process.env.OUBLIETTE_TEST_AGENTS);
    const agentImages = await ensureAgentImages(engine.docker, bundles, agents, log);
    project.provide("dockerSocket", engine.socketPath);
    project.provide("nodeBaseImage", nodeBaseImage);
    project.provide("droidImage", droidImage);
    project.provide("agentImages", { ...agentImages, scripted: droidImage });
    log(`ready in ${((Date.now() - startedAt) / 1000).toFixed(1)} s`);
  } catch (error) {
    await engine.stop();
    throw error;
  }
  return () => engine.stop();
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
