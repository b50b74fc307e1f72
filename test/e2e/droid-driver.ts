/**
 * Spawning a droid from a caller of either MCP era (`DroidDriver`, support.ts) through a job on
 * purpose (`wait: false`, then `job wait`), so that it does not depend on the job wait bounds a
 * test sets short.
 */
import type { CallerTool } from "../../protocol/caller-tools.js";
import { type DroidDriver, followUntilReady } from "./support.js";

/** What `session spawn` with `wait: false` answered, and what `job wait` then said of its job. */
export interface Spawned {
  sessionId: string;
  /** The spawn call's answer: the job's id and status, no session yet. */
  pointer: { job_id: string; status: string };
  /** `job wait`'s answer: the ended job with its result (the session). */
  waited: { job_id: string; status: string; result?: { session_id?: string } };
}

/**
 * Spawns a session lending `tools` as `callerId` (no wait: a job id at once, then `job wait`),
 * follows it, and waits until the droid is up and sees the first tool.
 */
export async function spawnLending(
  driver: DroidDriver,
  projectId: string,
  callerId: string,
  tools: CallerTool[],
): Promise<Spawned> {
  const pointer = await driver.ok<Spawned["pointer"]>("session", {
    action: "spawn",
    project_id: projectId,
    new_session: true,
    caller_id: callerId,
    caller_tools: tools,
    wait: false,
  });
  const waited = await driver.ok<Spawned["waited"]>("job", {
    action: "wait",
    job_id: pointer.job_id,
    wait_seconds: 60,
  });
  const sessionId = waited.result?.session_id;
  if (waited.status !== "complete" || sessionId === undefined)
    throw new Error(`the spawn job did not give a session: ${JSON.stringify(waited)}`);
  await followUntilReady(driver, sessionId, callerId, tools);
  return { sessionId, pointer, waited };
}
