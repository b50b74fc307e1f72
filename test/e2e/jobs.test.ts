/**
 * Jobs end to end: the Worker under wrangler dev (with short job bounds), a Docker host-agent, a
 * project container. A long `container exec` answers a job id; `job wait` returns its outcome;
 * a call that waits for its job hears progress; cancelling kills the command in the container.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TestCaller } from "../support/caller.js";
import { dockerContext } from "../support/docker-context.js";
import { TestStack } from "../support/stack.js";

let stack: TestStack;
let caller: TestCaller;
let projectId = "";

beforeAll(async () => {
  stack = await TestStack.start({
    vars: {
      OUBLIETTE_JOB_SHORT_WAIT_MS: "1000",
      OUBLIETTE_JOB_MEDIUM_WAIT_MS: "4000",
      OUBLIETTE_KEEPALIVE_MS: "1000",
    },
  });
  await stack.addHost({ runtime: "docker", image: dockerContext().droidImage });
  caller = await TestCaller.connect(stack.mcpUrl, stack.adminToken);
  projectId = await caller.newProject();
  await caller.ok("container", { action: "start", project_id: projectId });
}, 180_000);

afterAll(async () => {
  await caller?.call("project", { action: "delete", project_id: projectId, force: true });
  await caller?.close();
  await stack?.stop();
});

/** `container exec` of a node script in the project container. */
function execArgs(script: string, timeoutSeconds = 60) {
  return {
    action: "exec",
    project_id: projectId,
    command: ["node", "-e", script],
    timeout_seconds: timeoutSeconds,
  };
}

function exec(script: string, timeoutSeconds = 60) {
  return caller.call("container", execArgs(script, timeoutSeconds));
}

describe("jobs", () => {
  it("a long exec answers a job id past its bound; job wait returns the outcome", async () => {
    const started = await exec("setTimeout(() => console.log('finished late'), 7000)");
    const running = started.structuredContent as { job_id: string; status: string };
    expect(running).toMatchObject({ job_id: expect.stringMatching(/^job_/), status: "running" });
    const waited = await caller.ok<{ status: string; result?: { exit_code: number; stdout: string } }>(
      "job",
      {
        action: "wait",
        job_id: running.job_id,
        wait_seconds: 30,
      },
    );
    expect(waited.status).toBe("complete");
    expect(JSON.stringify(waited)).toContain("finished late");
  }, 60_000);

  it("a call that waits for its job hears progress, then gets the outcome", async () => {
    const { result, progress, ms } = await caller.callWithProgress(
      "container",
      execArgs("setTimeout(() => console.log('done in time'), 2500)"),
    );
    expect(ms).toBeGreaterThanOrEqual(2_500);
    expect(JSON.stringify(result.structuredContent)).toContain("done in time");
    expect(progress.length).toBeGreaterThanOrEqual(2);
    expect(progress.some((m) => m.includes("container.exec"))).toBe(true);
  }, 60_000);

  it("a call that hears progress waits out its bound before it answers the job id", async () => {
    const { result, progress, ms } = await caller.callWithProgress(
      "container",
      execArgs("setTimeout(() => {}, 8000)"),
    );
    expect(result.structuredContent).toMatchObject({
      job_id: expect.stringMatching(/^job_/),
      status: "running",
    });
    expect(ms).toBeGreaterThanOrEqual(4_000);
    // One progress a keep-alive (1 s) until the 4 s bound.
    expect(progress.length).toBeGreaterThanOrEqual(3);
  }, 60_000);

  it("job cancel stops the command in the container", async () => {
    const marker = `/workspace/default/cancel-${crypto.randomUUID().slice(0, 8)}`;
    const started = await exec(
      `setTimeout(() => require('fs').writeFileSync(${JSON.stringify(marker)}, 'x'), 6000)`,
    );
    const { job_id } = started.structuredContent as { job_id: string };
    const cancelled = await caller.ok<{ status: string }>("job", { action: "cancel", job_id });
    expect(cancelled.status).toBe("cancelled");
    // Past the moment the command would have written its file: it was killed, so there is none.
    await new Promise((r) => setTimeout(r, 10_000));
    const check = await caller.ok<{ stdout: string }>("container", {
      action: "exec",
      project_id: projectId,
      command: ["node", "-e", `console.log(require('fs').existsSync(${JSON.stringify(marker)}))`],
    });
    expect(check.stdout.trim()).toBe("false");
    const listed = await caller.ok<{ jobs: { job_id: string; status: string }[] }>("job", {
      action: "list",
      project_id: projectId,
      status: "cancelled",
    });
    expect(listed.jobs.map((j) => j.job_id)).toContain(job_id);
  }, 60_000);
});
