/**
 * What the Docker tests run against — the engine's socket and the images built for this run — as
 * the docker project's globalSetup (test/support/docker-setup.ts) writes it, once its preparation
 * (installing or starting the engine, building the images) is done. That preparation runs while
 * the cheaper test projects run; each Docker test file first waits for it (docker-wait.ts, a
 * setup file), then reads it here. A preparation that failed fails every Docker test, loudly.
 */
import { existsSync, readFileSync } from "node:fs";
import { inject } from "vitest";
import { z } from "zod";
import type { AgentRuntime } from "../../protocol/agent-runtimes.js";

declare module "vitest" {
  export interface ProvidedContext {
    /** Where docker-setup writes the outcome of its preparation (a DockerReady). */
    dockerReadyFile: string;
  }
}

export const DockerReadySchema = z.discriminatedUnion("ok", [
  z.object({
    ok: z.literal(true),
    dockerSocket: z.string(),
    nodeBaseImage: z.string(),
    droidImage: z.string(),
    /** Image tag by runtime: `scripted` (the droid image) and each CLI runtime built for this run. */
    agentImages: z.record(z.string(), z.string()),
  }),
  z.object({ ok: z.literal(false), error: z.string() }),
]);
export type DockerReady = z.infer<typeof DockerReadySchema>;

export interface DockerContext {
  dockerSocket: string;
  nodeBaseImage: string;
  droidImage: string;
  agentImages: Partial<Record<AgentRuntime, string>>;
}

/** The preparation's outcome in `file`, or null while it is still under way. */
export function readDockerReady(file: string): DockerReady | null {
  if (!existsSync(file)) return null;
  return DockerReadySchema.parse(JSON.parse(readFileSync(file, "utf8")));
}

/** Waits until the preparation has written its outcome; throws its error if it failed. */
export async function waitForDocker(file: string, timeoutMs: number): Promise<DockerContext> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const ready = readDockerReady(file);
    if (ready) return contextOf(ready);
    if (Date.now() > deadline)
      throw new Error(`Docker was not ready within ${timeoutMs / 1000} s (docker-setup is still preparing)`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

let cached: DockerContext | undefined;

/** The engine and images of this run (in a Docker test file, after docker-wait.ts waited). */
export function dockerContext(): DockerContext {
  if (cached) return cached;
  const ready = readDockerReady(inject("dockerReadyFile"));
  if (!ready)
    throw new Error(
      "Docker is not ready yet: docker-wait.ts must run first (the docker project's setupFiles)",
    );
  cached = contextOf(ready);
  return cached;
}

function contextOf(ready: DockerReady): DockerContext {
  if (!ready.ok)
    throw new Error(`Docker could not be prepared for the tests, so none of them can run:\n${ready.error}`);
  return {
    dockerSocket: ready.dockerSocket,
    nodeBaseImage: ready.nodeBaseImage,
    droidImage: ready.droidImage,
    agentImages: ready.agentImages as Partial<Record<AgentRuntime, string>>,
  };
}
