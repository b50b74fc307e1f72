/**
 * vitest globalSetup for tests that need a real Docker Engine: makes one reachable (installing
 * and starting it on a bare root Debian machine), builds the bundles and the droid image, and
 * provides the socket and image tag to the tests. Any failure fails the whole run, loudly: a
 * Docker test suite that silently skips proves nothing.
 */
import type { TestProject } from "vitest/node";
import { buildAll } from "../../scripts/build.js";
import { ensureDockerEngine } from "../../scripts/docker/engine.js";
import { ensureDroidImage, ensureNodeBaseImage } from "../../scripts/docker/images.js";

declare module "vitest" {
  export interface ProvidedContext {
    dockerSocket: string;
    droidImage: string;
    nodeBaseImage: string;
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
    project.provide("dockerSocket", engine.socketPath);
    project.provide("nodeBaseImage", nodeBaseImage);
    project.provide("droidImage", droidImage);
    log(`ready in ${((Date.now() - startedAt) / 1000).toFixed(1)} s`);
  } catch (error) {
    await engine.stop();
    throw error;
  }
  return () => engine.stop();
}
