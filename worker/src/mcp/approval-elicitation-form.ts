import { z } from "zod";
import { type ApprovalAnswer, ApprovalAnswerSchema, type ApprovalKind } from "../../../protocol/approvals.js";
import type { SessionEvent } from "../../../protocol/events.js";
import { clip } from "./json-rpc.js";

/**
 * What an approval request looks like as an MCP form elicitation (`elicitation/create`), and what
 * the client's answer means. Pure: approval-elicitations.ts sends, remembers and answers.
 */

export type ApprovalRequestEvent = Extract<SessionEvent, { type: "approval_request" }>;
type DecisionEvent = Extract<
  SessionEvent,
  { type: "approval_granted" | "approval_denied" | "approval_expired" }
>;

/** The JSON-RPC id of the elicitation that asks approval `requestId` of session `sessionId`. */
export function elicitationId(sessionId: string, requestId: string): string {
  return `approval:${sessionId}:${requestId}`;
}

/** Revisions of the 2025 era that define `elicitation/create` (2025-03-26 does not). */
const ELICITING_VERSIONS = new Set(["2025-06-18", "2025-11-25"]);

/**
 * Whether a client may be sent a form elicitation: it declared `elicitation` at `initialize` under
 * a revision that has it, and form mode (2025-11-25: `{}` means form; `{url: {}}` alone does not).
 */
export function clientCanElicit(protocolVersion: string, capabilities: unknown): boolean {
  if (!ELICITING_VERSIONS.has(protocolVersion)) return false;
  if (typeof capabilities !== "object" || capabilities === null) return false;
  const elicitation = (capabilities as { elicitation?: unknown }).elicitation;
  if (typeof elicitation !== "object" || elicitation === null || Array.isArray(elicitation)) return false;
  return Object.keys(elicitation).length === 0 || "form" in elicitation;
}

const WHAT: Record<ApprovalKind, string> = {
  shell: "run a command",
  edit: "change a file",
  read: "read a file outside its workspace",
  mcp_tool: "call a tool",
  network: "connect to a host its project's network policy does not allow",
};

const CHOICES: { value: ApprovalAnswer; title: string }[] = [
  { value: "allow", title: "Allow once" },
  { value: "allow_session", title: "Allow this kind and pattern for the rest of the session" },
  { value: "deny", title: "Deny" },
];

/** A network request's choices: its host for the session, or added to the project's allowlist. */
const NETWORK_CHOICES: { value: ApprovalAnswer; title: string }[] = [
  { value: "allow", title: "Allow this connection once" },
  { value: "allow_session", title: "Allow this host for the rest of the session" },
  { value: "allow_project", title: "Allow this host for the project (adds it to its network allowlist)" },
  { value: "deny", title: "Deny" },
];

/** Longest text the human's message to the agent may be (as `approval_response`'s). */
const MAX_MESSAGE = 2048;

/** The `params` of the `elicitation/create` that asks a person about `event`. */
export function elicitationParams(event: ApprovalRequestEvent, protocolVersion: string) {
  // 2025-11-25 titles enum values with oneOf/const; 2025-06-18 with enumNames (legacy since).
  const legacy = protocolVersion === "2025-06-18";
  const choices = event.kind === "network" ? NETWORK_CHOICES : CHOICES;
  const decision = legacy
    ? {
        type: "string",
        title: "Decision",
        enum: choices.map((c) => c.value),
        enumNames: choices.map((c) => c.title),
      }
    : {
        type: "string",
        title: "Decision",
        oneOf: choices.map((c) => ({ const: c.value, title: c.title })),
      };
  return {
    ...(legacy ? {} : { mode: "form" }),
    message: elicitationMessage(event),
    requestedSchema: {
      type: "object",
      properties: {
        decision,
        message: {
          type: "string",
          title: "Message to the agent",
          description: "On deny: what the agent is told (optional).",
          maxLength: MAX_MESSAGE,
        },
      },
      required: ["decision"],
    },
  };
}

/** The text a person reads: who asks, exactly what (clipped), where, and until when. */
export function elicitationMessage(event: ApprovalRequestEvent): string {
  const lines = [
    `Agent ${clip(event.agent, 64)} in Oubliette session ${event.session_id} asks to ${WHAT[event.kind]}.`,
  ];
  if (event.command !== undefined) lines.push(`Command: ${clip(event.command, 2000)}`);
  if (event.tool !== undefined) lines.push(`Tool: ${clip(event.tool, 256)}`);
  if (event.host !== undefined)
    lines.push(
      `Host: ${clip(event.host, 300)}:${event.port ?? "?"}${event.method !== undefined ? ` (${clip(event.method, 32)})` : ""}`,
    );
  if (event.arguments !== undefined) lines.push(`Arguments: ${clip(JSON.stringify(event.arguments), 1000)}`);
  if (event.path !== undefined) lines.push(`File: ${clip(event.path, 500)}`);
  if (event.diff !== undefined) lines.push(`Change:\n${clip(event.diff, 1500)}`);
  if (event.cwd !== undefined) lines.push(`In: ${clip(event.cwd, 500)}`);
  if (event.summary !== "") lines.push(`Summary: ${clip(event.summary, 512)}`);
  lines.push(`Decide by ${event.deadline}; no answer by then is a deny.`);
  return lines.join("\n");
}

const ElicitAnswerSchema = z.object({
  action: z.enum(["accept", "decline", "cancel"]),
  content: z.record(z.string(), z.unknown()).optional(),
});

/** What a client's elicitation result means: an answer to pass on, or nothing (it stays pending). */
export type ReadAnswer =
  | { kind: "answer"; answer: ApprovalAnswer; message?: string; action: "accept" | "decline" }
  | { kind: "none"; why: string };

/**
 * The client's `result`: `accept` with a decision is that decision (with the content's message
 * on a deny); `decline` is a deny (the content's message, or "declined in <client>"); `cancel`
 * (the person dismissed the dialog), and anything unreadable, answer nothing.
 */
export function readElicitResult(result: unknown, clientName: string): ReadAnswer {
  const parsed = ElicitAnswerSchema.safeParse(result);
  if (!parsed.success) return { kind: "none", why: "not an elicitation result" };
  const { action, content } = parsed.data;
  const message = typeof content?.message === "string" ? content.message.trim() : "";
  const said = message === "" ? undefined : clip(message, MAX_MESSAGE);
  if (action === "cancel") return { kind: "none", why: "cancelled" };
  if (action === "decline") {
    return { kind: "answer", action, answer: "deny", message: said ?? `declined in ${clientName}` };
  }
  const decision = ApprovalAnswerSchema.safeParse(content?.decision);
  if (!decision.success) return { kind: "none", why: "accepted without a valid decision" };
  if (decision.data !== "deny") return { kind: "answer", action, answer: decision.data };
  return { kind: "answer", action, answer: "deny", ...(said !== undefined ? { message: said } : {}) };
}

/** Why an open elicitation is withdrawn: the decision, for `notifications/cancelled`'s reason. */
export function decidedReason(event: DecisionEvent): string {
  if (event.type === "approval_expired") return "already decided: nobody answered by the deadline (denied)";
  const by =
    event.by === "answer"
      ? `answered${event.answered_by !== undefined ? ` by ${event.answered_by}` : ""}`
      : event.by === "policy"
        ? "by the policy"
        : event.by === "session_allowance"
          ? "by an earlier allow_session"
          : event.by === "timeout"
            ? "at the deadline"
            : event.by === "ended"
              ? "the agent stopped waiting or the session ended"
              : "on an error";
  if (event.type === "approval_denied") return `already decided: denied (${by})`;
  const scope =
    event.scope === "session" ? " for the session" : event.scope === "project" ? " for the project" : "";
  return `already decided: allowed${scope} (${by})`;
}
