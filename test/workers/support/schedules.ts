import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { z } from "zod";
import { SessionTunnel } from "./fake-host.js";
import { callTool, type ToolResult } from "./mcp.js";
import { ADMIN_TOKEN } from "./tokens.js";

/** A schedule's Durable Object. */
export function scheduleStub(scheduleId: string) {
  return env.SCHEDULES.get(env.SCHEDULES.idFromName(scheduleId));
}

/** When the schedule's alarm is set (epoch ms), or null. */
export function alarmOf(scheduleId: string): Promise<number | null> {
  return runInDurableObject(scheduleStub(scheduleId), (_, state) => state.storage.getAlarm());
}

/** A tool result's structured content; fails the test on a tool error. */
export function okOf(result: ToolResult): Record<string, unknown> {
  if (result.isError) throw new Error(`tool failed: ${result.content[0]?.text}`);
  return result.structuredContent ?? {};
}

/** A failed tool result's code and message. */
export function errorOf(result: ToolResult): { code: string; message: string } {
  return z
    .object({ error: z.object({ code: z.string(), message: z.string() }) })
    .parse(result.structuredContent).error;
}

const TargetRunSchema = z.object({
  project_id: z.string(),
  workspace_id: z.string().nullable(),
  outcome: z.string(),
  session_id: z.string().nullable(),
  resumed: z.boolean(),
  reason: z.string().nullable(),
});
export const RunSchema = z.object({
  run_id: z.string(),
  at: z.string(),
  scheduled_for: z.string().nullable(),
  trigger: z.enum(["cron", "manual"]),
  outcome: z.string(),
  session_ids: z.array(z.string()),
  reason: z.string().nullable(),
  targets: z.array(TargetRunSchema),
});
export type Run = z.infer<typeof RunSchema>;

const created: string[] = [];

/**
 * Deletes the schedules the test created (use in afterEach), so no queued run of one test starts
 * on a later test's host.
 */
export async function deleteSchedules(mcp: string): Promise<void> {
  for (const id of created.splice(0)) {
    await callTool(mcp, "schedule", { action: "delete", schedule_id: id });
  }
}

/** Creates a schedule with the schedule tool; returns its id and what create answered. */
export async function createSchedule(
  mcp: string,
  args: Record<string, unknown>,
  token = ADMIN_TOKEN,
): Promise<{ id: string; info: Record<string, unknown> }> {
  const info = okOf(
    await callTool(mcp, "schedule", { action: "create", name: "test", prompt: "tick", ...args }, token),
  );
  const id = z.string().parse(info.schedule_id);
  created.push(id);
  return { id, info };
}

/** The schedule's runs, newest first. */
export async function historyOf(mcp: string, scheduleId: string): Promise<Run[]> {
  const answer = okOf(await callTool(mcp, "schedule", { action: "history", schedule_id: scheduleId }));
  return z.array(RunSchema).parse(answer.runs);
}

/** Runs the schedule now; answers the run. */
export async function trigger(mcp: string, scheduleId: string): Promise<Run> {
  return RunSchema.parse(
    okOf(await callTool(mcp, "schedule", { action: "trigger", schedule_id: scheduleId })),
  );
}

/** Ends the first turn of a session placed on `hostId`, as its droid would: a `completion` event. */
export async function completeTurn(sessionId: string, hostId: string, messageSeq = 1): Promise<void> {
  const tunnel = await SessionTunnel.open(sessionId);
  await tunnel.hello(hostId);
  await tunnel.events({
    seq: messageSeq,
    type: "completion",
    message_seq: messageSeq,
    stop_reason: "end_turn",
  });
}
