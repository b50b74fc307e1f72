import { z } from "zod";
import { can, resourceOf } from "../../auth/access.js";
import { callerTools } from "../../tools/catalog.js";
import { actionLabel } from "../../tools/define.js";
import { toolError } from "../../tools/dispatch.js";
import type { ModernCall } from "./method.js";
import { invalidRequestState, mintRequestState, verifyRequestState } from "./request-state.js";

/** The key of the one input request a confirmation round makes. */
export const CONFIRM_KEY = "confirm";

const ElicitResultSchema = z.object({
  action: z.enum(["accept", "decline", "cancel"]),
  content: z.record(z.string(), z.unknown()).optional(),
});

/**
 * The input-required round (SEP-2322) of a `tools/call` whose action asks for confirmation
 * (`ActionDefinition.confirm`). Null: run the call — it needs no confirmation, the client cannot
 * be asked (no `elicitation` declared), the token may not do it anyway (dispatch refuses it), or
 * the human said yes. Otherwise the result to answer: `input_required` with an
 * `elicitation/create` form and a fresh `requestState`, or a tool error when the human declined.
 * A `requestState` that is not this server's, has expired, or was minted for another token, tool
 * or arguments is refused with -32602.
 */
export async function confirmationRound(
  call: ModernCall,
  name: string,
  rawArguments: unknown,
): Promise<Record<string, unknown> | null> {
  // Cheapest first: most calls come from clients that cannot be asked, or to tools that never ask.
  if (call.envelope.capabilities.elicitation === undefined) return null;
  const tool = callerTools.get(name);
  if (!tool || !Object.values(tool.definition.actions).some((action) => action.confirm)) return null;
  const parsed = tool.arguments.safeParse(rawArguments ?? {});
  if (!parsed.success) return null;
  const def = tool.definition.actions[parsed.data.action];
  if (!def?.confirm) return null;
  const projectId = typeof parsed.data.project_id === "string" ? parsed.data.project_id : null;
  if (!can(call.principal, def.access, resourceOf(def.target, projectId))) return null;
  const label = actionLabel(tool.definition, parsed.data.action);
  const binding = {
    tokenId: call.principal.tokenId,
    method: "tools/call",
    tool: label,
    arguments: parsed.data,
  };

  const state = call.params.requestState;
  if (state !== undefined) {
    if (typeof state !== "string" || !(await verifyRequestState(call.env, state, binding))) {
      throw invalidRequestState();
    }
    const responses = call.params.inputResponses as Record<string, unknown> | undefined;
    const answer = ElicitResultSchema.safeParse(responses?.[CONFIRM_KEY]);
    if (answer.success) {
      if (answer.data.action === "accept" && answer.data.content?.confirm === true) return null;
      return toolError(`${label} was not run: it was not confirmed`, "cancelled");
    }
    // No (usable) answer to what was asked: ask again, as the revision recommends.
  }
  return {
    resultType: "input_required",
    inputRequests: {
      [CONFIRM_KEY]: {
        method: "elicitation/create",
        params: {
          mode: "form",
          message: def.confirm(parsed.data),
          requestedSchema: {
            type: "object",
            properties: { confirm: { type: "boolean", title: `Run ${label}`, default: false } },
            required: ["confirm"],
          },
        },
      },
    },
    requestState: await mintRequestState(call.env, binding),
  };
}
