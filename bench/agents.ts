/**
 * How long a real agent takes to get going: for each runtime with an image, the time from the
 * caller's `session spawn` (with a prompt) to the agent's first model request reaching the fake
 * model, and to the end of that first turn. Runs on the local stack with Docker (skipped, saying
 * so, without it); the model is the scripted fake on loopback behind the host-agent's proxy.
 * Bounded: ROUNDS spawns per runtime, each with a deadline. Then the first session of a new
 * project in the droid image against an image without Node (the runner kit).
 */

import type Dockerode from "dockerode";
import { ensureAgentImages } from "../host-agent/src/images/agent-images.js";
import { ensureDroidImage } from "../host-agent/src/images/images.js";
import { type AgentRuntime, CLI_RUNTIMES } from "../protocol/agent-runtimes.js";
import { buildAll } from "../scripts/build.js";
import { ensureDockerEngine } from "../scripts/docker/engine.js";
import { LocalStack } from "../scripts/stack/local-stack.js";
import { spawnDroid } from "../test/e2e/support.js";
import { startFakeModel } from "../test/fixtures/fake-model/index.js";
import { TestCaller } from "../test/support/caller.js";
import { ensureTestImage } from "../test/support/python-image.js";

const ROUNDS = 3;
const TURN_DEADLINE_MS = 120_000;
const HOST_KEY = "sk-bench-host-key";
const say = (line: string) => process.stdout.write(`${line}\n`);

export async function benchAgents(): Promise<void> {
  const engine = await ensureDockerEngine({ install: false }).catch(() => null);
  say("");
  if (!engine) {
    say("agent start-up: skipped (no Docker Engine; the CLIs run only in their images)");
    return;
  }
  const runtimes = Object.keys(CLI_RUNTIMES) as Exclude<AgentRuntime, "scripted">[];
  const bundles = await buildAll();
  const image = await ensureDroidImage(engine.docker, bundles, () => {});
  await ensureAgentImages(engine.docker, bundles, runtimes, () => {});
  const model = await startFakeModel();
  const stack = await LocalStack.start();
  let caller: TestCaller | undefined;
  try {
    const env: Record<string, string> = {};
    for (const provider of ["ANTHROPIC", "OPENAI", "GEMINI"]) {
      env[`OUBLIETTE_${provider}_API_KEY`] = HOST_KEY;
      env[`OUBLIETTE_${provider}_BASE_URL`] = model.url;
    }
    await stack.addHost({ runtime: "docker", image, extraEnv: env });
    caller = await TestCaller.connect(stack.mcpUrl, stack.adminToken, "bench-agents");
    say(`agent start-up: spawn → first model request, and → end of the first turn (median of ${ROUNDS}, ms)`);
    for (const runtime of runtimes) {
      const { project_id } = await caller.ok<{ project_id: string }>("project", {
        action: "create",
        name: `bench-${runtime}-${crypto.randomUUID().slice(0, 8)}`,
        default_agent: runtime,
      });
      const firstRequest: number[] = [];
      const firstTurn: number[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        model.script([{ text: "Ready." }]);
        const before = model.requests.length;
        const started = performance.now();
        const { session_id } = await caller.ok<{ session_id: string }>("session", {
          action: "spawn",
          project_id,
          new_session: true,
          prompt: "Say you are ready.",
        });
        const requestAt = await new Promise<number>((resolve, reject) => {
          const deadline = Date.now() + TURN_DEADLINE_MS;
          const poll = setInterval(() => {
            if (model.requests.slice(before).some((r) => r.main)) {
              clearInterval(poll);
              resolve(performance.now());
            } else if (Date.now() > deadline) {
              clearInterval(poll);
              reject(new Error(`${runtime}: no model request within ${TURN_DEADLINE_MS} ms`));
            }
          }, 2);
        });
        await caller.waitFor(
          (e) => e.session_id === session_id && e.type === "completion",
          TURN_DEADLINE_MS,
          `${runtime}'s first turn`,
        );
        firstRequest.push(requestAt - started);
        firstTurn.push(performance.now() - started);
        await caller.call("session", { action: "end", session_id });
      }
      say(
        `  ${runtime.padEnd(9)} first model request ${fmt(median(firstRequest))}   first turn done ${fmt(median(firstTurn))}`,
      );
      await caller.call("project", { action: "delete", project_id, force: true });
    }
    await benchFirstSession(caller, engine.docker, image);
  } finally {
    await caller?.close();
    await stack.stop();
    await model.close();
    await engine.stop();
  }
}

/**
 * The first session of a new project (its container made, the runner up, the scripted droid
 * ready), in our droid image and in an image without Node or anything of ours (the runner kit
 * mounted). The kit is written once per host, before the rounds (a warm-up project).
 */
async function benchFirstSession(caller: TestCaller, docker: Dockerode, droidImage: string): Promise<void> {
  const python = await ensureTestImage(docker, "python");
  const firstSession = async (image: string) => {
    const { project_id } = await caller.ok<{ project_id: string }>("project", {
      action: "create",
      name: `bench-first-${crypto.randomUUID().slice(0, 8)}`,
      image,
    });
    const started = performance.now();
    await spawnDroid(caller, { projectId: project_id });
    const elapsed = performance.now() - started;
    await caller.call("project", { action: "delete", project_id, force: true });
    return elapsed;
  };
  await firstSession(python);
  const times: Record<string, number[]> = { droid: [], python: [] };
  for (let round = 0; round < ROUNDS; round++) {
    times.droid?.push(await firstSession(droidImage));
    times.python?.push(await firstSession(python));
  }
  const droid = median(times.droid ?? []);
  const kit = median(times.python ?? []);
  say(`first session of a new project: spawn → the scripted droid ready (median of ${ROUNDS}, ms)`);
  say(`  droid image                         ${fmt(droid)}`);
  say(`  image without Node (runner kit)     ${fmt(kit)}   ${(kit / droid).toFixed(2)}x`);
}

function median(samples: number[]): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

function fmt(ms: number): string {
  return ms.toFixed(0).padStart(6);
}

if (import.meta.url === `file://${process.argv[1]}`) await benchAgents();
