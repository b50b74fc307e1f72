/**
 * Shared steps of the end-to-end tests: a droid session in a real container with caller tools.
 */
import type { CallerTool } from "../../protocol/caller-tools.js";
import type { TestCaller } from "../support/caller.js";

/**
 * What a caller must offer to drive the scripted droid: the 2025 TestCaller (SDK 1.x, events as
 * notifications/message) and the 2026 ModernCaller (SDK v2, events by polling or listen) both do.
 */
export interface DroidDriver {
  ok<T = Record<string, unknown>>(name: string, args: Record<string, unknown>): Promise<T>;
  follow(sessionId: string): void;
  droidOutputs(sessionId: string): Record<string, unknown>[];
  waitForOutput(
    sessionId: string,
    predicate: (data: Record<string, unknown>) => boolean,
    timeoutMs?: number,
  ): Promise<Record<string, unknown>>;
  runScript(
    sessionId: string,
    script: { id: string; steps: unknown[] },
    timeoutMs?: number,
  ): Promise<unknown>;
}

export const SEND_RESPONSE: CallerTool = {
  name: "send_response",
  description: "Send message",
  inputSchema: { type: "object", properties: { message: { type: "string" } } },
};

export interface SpawnOptions {
  tools?: CallerTool[];
  callerId?: string;
  timeoutSeconds?: number;
  /** Declare the tools inside `context` (the seed's form) instead of top-level. */
  inContext?: boolean;
  /** The project to run in (default: the caller's own, made on first use). */
  projectId?: string;
  callerPresence?: "stream" | "deadline";
}

/** Spawns a session, waits until the droid is up and sees the first caller tool; returns its id. */
export async function spawnDroid(caller: TestCaller, options: SpawnOptions = {}): Promise<string> {
  const callerId = options.callerId ?? "ant";
  const tools = options.tools ?? [SEND_RESPONSE];
  const declaration = options.inContext
    ? { context: { caller_id: callerId, caller_tools: tools } }
    : { caller_id: callerId, caller_tools: tools };
  const info = await caller.ok<{ session_id: string }>("session", {
    action: "spawn",
    project_id: options.projectId ?? (await caller.newProject()),
    new_session: true,
    ...declaration,
    ...(options.timeoutSeconds === undefined ? {} : { caller_timeout_seconds: options.timeoutSeconds }),
    ...(options.callerPresence === undefined ? {} : { caller_presence: options.callerPresence }),
  });
  await followUntilReady(caller, info.session_id, callerId, tools);
  return info.session_id;
}

/** Follows a session and waits until its droid is up and sees the first of `tools`. */
export async function followUntilReady(
  caller: DroidDriver,
  sessionId: string,
  callerId: string,
  tools: CallerTool[],
): Promise<void> {
  caller.follow(sessionId);
  await caller.waitForOutput(sessionId, (d) => d.op === "ready", 60_000);
  const first = tools[0];
  if (!first) return;
  const name = `${callerId}_${first.name}`;
  const wait = await runStep(caller, sessionId, { op: "wait_tool", name, timeout_ms: 20_000 });
  if (wait.found !== true) throw new Error(`the droid never saw ${name}`);
}

let scriptCounter = 0;

/** Runs one step in the droid and returns the line it printed for it. */
export async function runStep(
  caller: DroidDriver,
  sessionId: string,
  step: Record<string, unknown>,
  timeoutMs = 60_000,
): Promise<Record<string, unknown>> {
  scriptCounter += 1;
  const id = `step-${scriptCounter}`;
  const tagged = "id" in step || step.op === "wait_tool" || step.op === "list_tools" ? step : { ...step, id };
  const before = caller.droidOutputs(sessionId).length;
  await caller.runScript(sessionId, { id, steps: [tagged] }, timeoutMs);
  const after = caller.droidOutputs(sessionId).slice(before);
  const line = after.find((d) => d.op === step.op && (tagged.id === undefined || d.id === tagged.id));
  if (!line) throw new Error(`no output for step ${JSON.stringify(step)}: ${JSON.stringify(after)}`);
  return line;
}

/** Runs steps in the droid (e.g. a `parallel` step) and returns every line they printed. */
export async function runSteps(
  caller: DroidDriver,
  sessionId: string,
  steps: Record<string, unknown>[],
  timeoutMs = 60_000,
): Promise<Record<string, unknown>[]> {
  scriptCounter += 1;
  const id = `steps-${scriptCounter}`;
  const before = caller.droidOutputs(sessionId).length;
  await caller.runScript(sessionId, { id, steps }, timeoutMs);
  return caller
    .droidOutputs(sessionId)
    .slice(before)
    .filter((d) => !(d.op === "done" && d.id === id));
}

/** The text of a droid call result's first content item. */
export function text(callOutput: Record<string, unknown>): string {
  const content = callOutput.content as { type: string; text?: string }[] | undefined;
  return content?.[0]?.text ?? "";
}

export async function endSession(caller: TestCaller, sessionId: string): Promise<void> {
  await caller.call("session", { action: "end", session_id: sessionId });
}

/** The project a session runs in (its container carries the project's label). */
export async function projectOf(caller: TestCaller, sessionId: string): Promise<string> {
  return (await caller.ok<{ project_id: string }>("session", { action: "get", session_id: sessionId }))
    .project_id;
}
