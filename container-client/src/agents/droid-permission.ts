/**
 * Factory Droid's permission questions when the session asks (`autonomyLevel: "off"`): each
 * `droid.request_permission` request becomes one PermissionAsk for all its tool uses
 * (droid-tool-request.ts), answered by a response of the same id: allow once is
 * `{selectedOption: "proceed_once"}`; a deny is an error response carrying the denial's message,
 * which Droid hands the model as each call's result ("Tool execution cancelled: [code -32600]
 * <message>"), where `{selectedOption: "cancel"}` would tell it only "…cancelled by user".
 * Either way nothing runs and the turn goes on. A question only about the session's own MCP
 * server's tools (`oubliette`) is allowed at once: the session gates those tools itself. Droid
 * withdraws a question on an interrupt (`permission_resolved` with no answer of ours): the ask
 * is withdrawn, and an answer after that is no line (Droid ignores a response to a request it
 * no longer holds).
 */
import { type ApprovalDecision, DEFAULT_DENIAL_MESSAGE } from "../../../protocol/approvals.js";
import { asking, autoAnswered, type DriverOutput, NOTHING, output, type PermissionAsk } from "./driver.js";
import {
  DroidPermissionParamsSchema,
  type DroidToolUse,
  DroidToolUseSchema,
  droidPermissionRequest,
  isServerToolUse,
} from "./droid-tool-request.js";
import type { JsonRecord } from "./json-line.js";

const API_VERSION = "1.0.0";
export const PERMISSION_METHOD = "droid.request_permission";
/**
 * The error code of a deny: one of Droid's own (a response with another code fails its schema
 * and is dropped, leaving the tool waiting), and not -32006, after which it says nothing of the
 * resolution.
 */
const DENY_CODE = -32600;

export interface DroidPermissions {
  /** A `droid.request_permission` request, as an object. */
  ask(o: JsonRecord): DriverOutput;
  /** A `permission_resolved` notification: a question Droid gave up without our answer is withdrawn. */
  resolved(notification: JsonRecord): DriverOutput;
}

/**
 * The questions of one Droid process. `server` is the name of the session's own MCP server, `cwd`
 * the session's workspace (Droid does not say where a command would run).
 */
export function droidPermissions(server: string, cwd: string): DroidPermissions {
  /** Questions asked and neither answered nor withdrawn, by request id. */
  const open = new Map<string, PermissionAsk>();
  return {
    ask(o) {
      const id = o.id;
      if (typeof id !== "string" || id === "")
        return output([
          { type: "error", message: "Droid asked permission in a form that cannot be answered" },
        ]);
      const uses = toolUses(o.params);
      if (uses.length > 0 && uses.every((use) => isServerToolUse(use, server))) {
        const names = uses.map((use) => use.toolUse.name).join(", ");
        return output(
          [
            autoAnswered(`allowed ${names} (the session gates its own tools)`, {
              method: PERMISSION_METHOD,
              granted: true,
            }),
          ],
          [allowLine(id)],
        );
      }
      const ask: PermissionAsk = {
        request: droidPermissionRequest(uses, cwd),
        answer: (decision) => {
          if (!open.delete(id)) return [];
          return [answerLine(id, decision)];
        },
      };
      open.set(id, ask);
      return asking([ask]);
    },
    resolved(notification) {
      const id = notification.requestId;
      const ask = typeof id === "string" ? open.get(id) : undefined;
      if (typeof id !== "string" || ask === undefined) return NOTHING;
      open.delete(id);
      return { events: [], write: [], withdrawn: [ask] };
    },
  };
}

/** The tool uses of a question; one Droid wrote in a form this driver cannot read is still asked, as it is. */
function toolUses(params: unknown): DroidToolUse[] {
  const parsed = DroidPermissionParamsSchema.safeParse(params);
  if (!parsed.success) return [unreadable(params)];
  return parsed.data.toolUses.map((entry) => {
    const use = DroidToolUseSchema.safeParse(entry);
    return use.success ? use.data : unreadable(entry);
  });
}

function unreadable(what: unknown): DroidToolUse {
  return { toolUse: { name: PERMISSION_METHOD, input: { request: what ?? null } } };
}

/** The response that answers question `id` with `decision`. */
export function answerLine(id: string, decision: ApprovalDecision): string {
  if (decision.decision === "allow") return allowLine(id);
  const message = decision.message?.trim() ? decision.message : DEFAULT_DENIAL_MESSAGE;
  return responseLine(id, { error: { code: DENY_CODE, message } });
}

/** Allow once (never Droid's "always" options: the session remembers an allowance itself). */
function allowLine(id: string): string {
  return responseLine(id, { result: { selectedOption: "proceed_once" } });
}

function responseLine(id: string, body: Record<string, unknown>): string {
  return JSON.stringify({ jsonrpc: "2.0", factoryApiVersion: API_VERSION, type: "response", id, ...body });
}
