import { z } from "zod";
import { ApprovalDecisionSchema, ApprovalRequestSchema } from "./approvals.js";
import { JsonValueSchema, jsonBytes } from "./json.js";

export const DroidStatusSchema = z.enum(["starting", "running", "exited", "failed"]);
export type DroidStatus = z.infer<typeof DroidStatusSchema>;

/** Why a turn ended. */
export const StopReasonSchema = z.enum(["end_turn", "interrupted", "error", "max_turns", "refusal"]);
export type StopReason = z.infer<typeof StopReasonSchema>;

/**
 * The common session events every agent adapter maps its CLI's output to, whatever the runtime:
 * - `message`: a whole assistant message (text);
 * - `delta`: a piece of assistant text as it streams;
 * - `tool_call` / `tool_result`: the agent called a tool (its own, or an MCP tool such as a
 *   caller's) and what came back (`output` is text, cut to fit an event);
 * - `completion`: the turn of droid message `message_seq` is over (the session may go idle);
 * - `error`: something the agent reported as failed;
 * - `system`: anything else worth a caller's eye (start-up, the model in use, a permission the
 *   adapter granted), named by `subtype`.
 */
export const CommonAgentEventSchemas = [
  z.object({ type: z.literal("message"), text: z.string() }),
  z.object({ type: z.literal("delta"), text: z.string() }),
  z.object({
    type: z.literal("tool_call"),
    call_id: z.string().max(256),
    name: z.string().max(256),
    input: JsonValueSchema.optional(),
  }),
  z.object({
    type: z.literal("tool_result"),
    call_id: z.string().max(256),
    output: z.string(),
    is_error: z.boolean().optional(),
  }),
  z.object({
    type: z.literal("completion"),
    message_seq: z.number().int().positive().optional(),
    stop_reason: StopReasonSchema,
    text: z.string().optional(),
  }),
  z.object({ type: z.literal("error"), message: z.string() }),
  z.object({
    type: z.literal("system"),
    subtype: z.string().max(128),
    message: z.string().optional(),
    data: JsonValueSchema.optional(),
  }),
] as const;

/**
 * The agent's process ended without being asked to and the runner started it again, resuming
 * its conversation where the CLI can (`resumed`): how it ended, the last lines it wrote on
 * stderr, and how many restarts this makes in the current window. A turn it was in is failed
 * (its `completion` has `stop_reason: "error"`); past the restart limit the session fails instead.
 */
export const AgentRestartedSchema = z.object({
  type: z.literal("agent_restarted"),
  exit_code: z.number().int().nullable(),
  signal: z.string().max(32).nullable(),
  stderr: z.array(z.string().max(1024)).max(20),
  restarts: z.number().int().positive(),
  resumed: z.boolean(),
  message: z.string().max(2048),
});

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
  AgentRestartedSchema,
  ...CommonAgentEventSchemas,
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

/** The line the runner writes to the scripted agent's stdin for each droid message (its line protocol). */
export const AgentStdinMessageSchema = z.object({
  type: z.literal("message"),
  seq: z.number().int(),
  text: z.string(),
});
export type AgentStdinMessage = z.infer<typeof AgentStdinMessageSchema>;

/** The line protocol's interrupt: end the turns in flight. */
export const InterruptLineSchema = z.object({ type: z.literal("interrupt") }).strict();

/** The line protocol's end of a turn, printed by the agent: `{"type":"turn_completed","message_seq":n}`. */
export const TurnCompletedLineSchema = z
  .object({
    type: z.literal("turn_completed"),
    message_seq: z.number().int().positive().optional(),
    stop_reason: StopReasonSchema.optional(),
  })
  .strict();

/** The scripted agent's own id of one permission question (any short token it chooses). */
export const AgentAskIdSchema = z
  .string()
  .regex(/^[A-Za-z0-9_.:-]{1,128}$/, "an ask id is 1-128 letters, digits, '_', '.', ':' or '-'");

/**
 * The line protocol's permission question, printed by the agent:
 * `{"type":"approval_request","id","request":{kind, command?, path?, …, summary}}`. The runner
 * puts it to the session and answers with `approval_answer` under the same `id`.
 */
export const ApprovalRequestLineSchema = z
  .object({
    type: z.literal("approval_request"),
    id: AgentAskIdSchema,
    request: ApprovalRequestSchema,
  })
  .strict();
export type ApprovalRequestLine = z.infer<typeof ApprovalRequestLineSchema>;

/** The line protocol's withdrawal of a permission question (the agent no longer waits for it: an interrupt, say). */
export const ApprovalWithdrawnLineSchema = z
  .object({ type: z.literal("approval_withdrawn"), id: AgentAskIdSchema })
  .strict();

/**
 * The line protocol's answer to a permission question, written to the agent's stdin: the
 * session's decision, `{"type":"approval_answer","id","decision","scope","message"?,"by"}`.
 */
export const ApprovalAnswerLineSchema = ApprovalDecisionSchema.extend({
  type: z.literal("approval_answer"),
  id: AgentAskIdSchema,
}).strict();
export type ApprovalAnswerLine = z.infer<typeof ApprovalAnswerLineSchema>;

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
