/**
 * The parts of Claude Code's stream-json control protocol (2.1.330) the driver reads when it asks
 * permission: the `can_use_tool` question and its withdrawal. Parsed loosely: the CLI adds fields
 * in every release (`decision_reason_*`, `permission_suggestions`, …), and only these matter.
 */
import { z } from "zod";

/** `control_request`: the CLI asks its host something, answered by a `control_response` of the same id. */
export const ControlRequestSchema = z.object({
  type: z.literal("control_request"),
  request_id: z.string().min(1),
  request: z.looseObject({ subtype: z.string() }),
});

/**
 * `request` of a `can_use_tool` question: the tool as the model named it, its input exactly (the
 * allow answer hands it back), and the CLI's own words for a person.
 */
export const CanUseToolSchema = z.looseObject({
  subtype: z.literal("can_use_tool"),
  tool_name: z.string(),
  input: z.record(z.string(), z.unknown()),
  tool_use_id: z.string().nullish(),
  /** A path outside the working directories the call would touch (a read outside, say). */
  blocked_path: z.string().nullish(),
  /** The MCP server of an MCP tool. */
  mcp_server: z.looseObject({ name: z.string() }).nullish(),
  title: z.string().nullish(),
  display_name: z.string().nullish(),
  description: z.string().nullish(),
  decision_reason: z.string().nullish(),
  /** Set when a sub-agent asks. */
  agent_id: z.string().nullish(),
});
export type CanUseTool = z.infer<typeof CanUseToolSchema>;

/** `control_cancel_request`: the CLI withdraws a question (an interrupt, say); no answer is due. */
export const ControlCancelRequestSchema = z.object({
  type: z.literal("control_cancel_request"),
  request_id: z.string(),
});
