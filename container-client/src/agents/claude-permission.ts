/**
 * Claude Code's permission questions when the session asks (`--permission-prompt-tool stdio`):
 * each `control_request` of subtype `can_use_tool` becomes a PermissionAsk whose answer is the
 * `control_response` that allows the call once (its input handed back unchanged) or denies it
 * with a message the model reads. A question about the session's own MCP server (`oubliette`,
 * allowed by `--allowedTools` so it should not come) is allowed at once: the session gates those
 * tools itself. `control_cancel_request` withdraws a question (the CLI does so on an interrupt):
 * its answer is then no line at all. Answers never carry `toolUseID`: the CLI runs an answer with
 * one that comes after its question was withdrawn ("orphaned permission"), and drops one without.
 */
import { type ApprovalDecision, DEFAULT_DENIAL_MESSAGE } from "../../../protocol/approvals.js";
import { claudeToolRequest, isServerTool } from "./claude-tool-request.js";
import { CanUseToolSchema, ControlCancelRequestSchema, ControlRequestSchema } from "./claude-wire.js";
import { asking, autoAnswered, type DriverOutput, NOTHING, output, type PermissionAsk } from "./driver.js";
import { type JsonRecord, record, text } from "./json-line.js";

export interface ClaudePermissions {
  /** A `control_request` or `control_cancel_request` line, as an object. */
  read(o: JsonRecord): DriverOutput;
}

/**
 * The questions of one Claude Code process. `server` is the name of the session's own MCP
 * server, `cwd` the session's workspace (the CLI does not say where a command would run).
 */
export function claudePermissions(server: string, cwd: string): ClaudePermissions {
  /** Questions asked and neither answered nor withdrawn, by request id. */
  const open = new Map<string, PermissionAsk>();
  return {
    read(o) {
      if (o.type === "control_cancel_request") {
        const cancel = ControlCancelRequestSchema.safeParse(o);
        const ask = cancel.success ? open.get(cancel.data.request_id) : undefined;
        if (!cancel.success || ask === undefined) return NOTHING;
        open.delete(cancel.data.request_id);
        return { events: [], write: [], withdrawn: [ask] };
      }
      const control = ControlRequestSchema.safeParse(o);
      if (!control.success) {
        // A question without an id cannot be answered; say so rather than leave the turn hanging unseen.
        if (o.type === "control_request" && record(o.request)?.subtype === "can_use_tool")
          return output([
            { type: "error", message: "Claude Code asked permission in a form that cannot be answered" },
          ]);
        return NOTHING;
      }
      const { request_id: id, request } = control.data;
      if (request.subtype !== "can_use_tool") return NOTHING;
      const parsed = CanUseToolSchema.safeParse(request);
      const question = parsed.success ? parsed.data : unreadable(request);
      const input = question.input;
      if (isServerTool(question.tool_name, server)) {
        return output(
          [
            autoAnswered(`allowed ${question.tool_name} (the session gates its own tools)`, {
              method: "can_use_tool",
              granted: true,
            }),
          ],
          [allowLine(id, input)],
        );
      }
      const ask: PermissionAsk = {
        request: claudeToolRequest(question, cwd),
        answer: (decision) => {
          if (!open.delete(id)) return [];
          return [answerLine(id, input, decision)];
        },
      };
      open.set(id, ask);
      return asking([ask]);
    },
  };
}

/** A `can_use_tool` request this driver cannot read (a field of another type): asked as far as it can be told. */
function unreadable(request: JsonRecord) {
  return {
    subtype: "can_use_tool" as const,
    tool_name: text(request.tool_name) ?? "",
    input: record(request.input) ?? {},
    title: text(request.title),
    description: text(request.description),
    display_name: text(request.display_name),
  };
}

/** The `control_response` that answers question `id` with `decision`. */
export function answerLine(id: string, input: Record<string, unknown>, decision: ApprovalDecision): string {
  if (decision.decision === "allow") return allowLine(id, input);
  const message = decision.message?.trim() ? decision.message : DEFAULT_DENIAL_MESSAGE;
  return responseLine(id, { behavior: "deny", message });
}

/** Allow once: the input as the CLI gave it (an allow may change it; ours never does). */
function allowLine(id: string, input: Record<string, unknown>): string {
  return responseLine(id, { behavior: "allow", updatedInput: input });
}

function responseLine(id: string, response: Record<string, unknown>): string {
  return JSON.stringify({
    type: "control_response",
    response: { subtype: "success", request_id: id, response },
  });
}
