import { z } from "zod";
import { DroidStatusSchema } from "./events.js";
import { JsonValueSchema, jsonBytes } from "./json.js";

/**
 * What the runner in the container saw happen to the agent. The runner numbers them (`seq`,
 * from 1, per session) and keeps them until the session object has stored them, so they reach
 * it exactly once across host-agent restarts and tunnel cuts.
 */
export const AgentEventBodySchema = z.discriminatedUnion("type", [
  z.object({
    type: z.literal("droid_status"),
    status: DroidStatusSchema,
    exit_code: z.number().int().nullable().optional(),
    message: z.string().max(4096).optional(),
  }),
  z.object({
    type: z.literal("droid_output"),
    data: JsonValueSchema.optional(),
    text: z.string().optional(),
  }),
  z.object({ type: z.literal("droid_log"), text: z.string() }),
  /** The agent finished the turn of droid message `message_seq` (its adapter knows when). */
  z.object({ type: z.literal("turn_completed"), message_seq: z.number().int().positive().optional() }),
]);
export type AgentEventBody = z.infer<typeof AgentEventBodySchema>;

export const AgentEventSchema = z.intersection(
  z.object({ seq: z.number().int().positive() }),
  AgentEventBodySchema,
);
export type AgentEvent = AgentEventBody & { seq: number };

/** Most events in one `agent_events` / `session_events` message. */
export const MAX_EVENTS_PER_BATCH = 256;

export const AgentEventBatchSchema = z.object({
  events: z.array(AgentEventSchema).min(1).max(MAX_EVENTS_PER_BATCH),
});

/** Where the runner's agent is, as it reports after every (re)connect. */
export const AgentStateSchema = z.object({
  status: z.enum(["idle", "running", "exited"]),
  exit_code: z.number().int().nullable().optional(),
  signal: z.string().max(32).nullable().optional(),
  /** Highest droid message seq written to the agent's stdin. */
  delivered_message_seq: z.number().int().nonnegative(),
});
export type AgentState = z.infer<typeof AgentStateSchema>;

/** The line the runner writes to the agent's stdin for each droid message. */
export const AgentStdinMessageSchema = z.object({
  type: z.literal("message"),
  seq: z.number().int(),
  text: z.string(),
});
export type AgentStdinMessage = z.infer<typeof AgentStdinMessageSchema>;

/**
 * Splits events into batches of at most MAX_EVENTS_PER_BATCH events and `maxBytes` encoded bytes
 * (an event is never larger than the output budget, so every batch holds at least one).
 */
export function batchEvents<E extends { seq: number }>(events: readonly E[], maxBytes: number): E[][] {
  const batches: E[][] = [];
  let batch: E[] = [];
  let bytes = 0;
  for (const event of events) {
    const size = jsonBytes(event) + 1;
    if (batch.length > 0 && (bytes + size > maxBytes || batch.length >= MAX_EVENTS_PER_BATCH)) {
      batches.push(batch);
      batch = [];
      bytes = 0;
    }
    batch.push(event);
    bytes += size;
  }
  if (batch.length > 0) batches.push(batch);
  return batches;
}
